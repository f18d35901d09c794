import { loadOptionalPeer } from '../../core/optional-peer';
import type { RedisClient, RedisClientConstructor, RedisClientOptions } from './external';

/**
 * Load ioredis on first use, so that importing nestjs-rheo never requires it
 * (it is an optional peer dependency).
 */
export function loadIoredis(): RedisClientConstructor {
  const mod = loadOptionalPeer<{ default?: unknown; Redis?: unknown }>('ioredis', 'the redis backend', 'ioredis@^6');
  return (mod.Redis ?? mod.default ?? mod) as RedisClientConstructor;
}

/**
 * Options for the clients this backend creates. The point is that an outage
 * surfaces quickly as `backend_unavailable` instead of hanging inside a call the
 * caller awaits: commands are not queued while disconnected (`enableOfflineQueue:
 * false`), a command is retried on at most one reconnection, connecting gives up
 * after 2 s, and a command that gets no answer in 5 s fails (`ambiguous` for a write).
 * ioredis keeps reconnecting in the background with a capped backoff, so the next
 * call after the outage works. Caller-given options override these.
 */
export const CREATED_CLIENT_DEFAULTS: RedisClientOptions = {
  lazyConnect: true,
  enableOfflineQueue: false,
  maxRetriesPerRequest: 1,
  connectTimeout: 2000,
  commandTimeout: 5000,
  retryStrategy: (times: number) => Math.min(50 * 2 ** Math.min(times, 10), 2000),
};

/**
 * The blocking-read connection: it may wait for a reconnection (the waits are
 * hints bounded by their own timers) and has no command timeout, since a
 * blocking XREAD legitimately takes its whole block time.
 */
export const BLOCKER_OVERRIDES: RedisClientOptions = {
  lazyConnect: true,
  enableOfflineQueue: true,
  maxRetriesPerRequest: null,
  commandTimeout: undefined,
  retryStrategy: (times: number) => Math.min(50 * 2 ** Math.min(times, 10), 2000),
};

/** Drop a connection we own and resolve once ioredis reports it ended. */
export function disconnect(client: RedisClient): Promise<void> {
  if (client.status === 'end') return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, 1000); // never hang close() on a socket that will not report
    client.once('end', () => {
      clearTimeout(timer);
      resolve();
    });
    client.disconnect();
  });
}

/** Wait `ms`, or less if `signal` aborts. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}
