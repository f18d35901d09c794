import { loadOptionalPeer } from '../../core/optional-peer';
import type { RedisClientConstructor, RedisClientOptions, RedisClusterConstructor, RedisClusterOptions, RedisCommands } from './external';

/**
 * Load ioredis on first use, so that importing nestjs-rheo never requires it
 * (it is an optional peer dependency).
 */
export function loadIoredis(): RedisClientConstructor {
  const mod = loadOptionalPeer<{ default?: unknown; Redis?: unknown }>('ioredis', 'the redis backend', 'ioredis@^6');
  return (mod.Redis ?? mod.default ?? mod) as RedisClientConstructor;
}

/** ioredis's `Cluster`, loaded on first use like {@link loadIoredis}. */
export function loadIoredisCluster(): RedisClusterConstructor {
  const mod = loadOptionalPeer<{ Cluster?: unknown }>('ioredis', 'the redis backend', 'ioredis@^6');
  return mod.Cluster as RedisClusterConstructor;
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

/**
 * Options for a cluster this backend creates: the same fail-fast behaviour per node
 * ({@link CREATED_CLIENT_DEFAULTS}: no offline queue, one retry, 2 s to connect, 5 s
 * per command), and ioredis's own redirection handling bounded so that a call never
 * hangs: MOVED and ASK are followed at once, TRYAGAIN (a slot mid-migration) and
 * CLUSTERDOWN (a failover under way) and a closed node connection are retried every
 * 100 ms, at most 16 redirections in all (about 1.6 s), then the call fails
 * (`backend_unavailable`). The slot table is also refreshed every 5 s, so a slot that
 * moved is found even by a process that sent nothing to it. Caller-given options
 * override these (`redisOptions` merged field by field).
 */
export const CREATED_CLUSTER_DEFAULTS: RedisClusterOptions = {
  lazyConnect: true,
  enableOfflineQueue: false,
  maxRedirections: 16,
  retryDelayOnFailover: 100,
  retryDelayOnClusterDown: 100,
  retryDelayOnTryAgain: 100,
  slotsRefreshTimeout: 2000,
  slotsRefreshInterval: 5000,
  clusterRetryStrategy: (times: number) => Math.min(50 * 2 ** Math.min(times, 10), 2000),
  redisOptions: { maxRetriesPerRequest: 1, connectTimeout: 2000, commandTimeout: 5000 },
};

/**
 * The blocking-read connections of a cluster, one per waited slot, opened to the
 * node that owns it (cluster.ts): like {@link BLOCKER_OVERRIDES}, but they never
 * reconnect: a connection that fails or closes ends, its waiters are released, and
 * the next wait opens a new one to whichever node owns the slot then.
 */
export const SLOT_BLOCKER_OVERRIDES: RedisClientOptions = {
  lazyConnect: true,
  enableOfflineQueue: true,
  maxRetriesPerRequest: 0,
  connectTimeout: 2000,
  commandTimeout: undefined,
  retryStrategy: null,
  readOnly: false,
};

/** Drop a connection we own and resolve once ioredis reports it ended. */
export function disconnect(client: RedisCommands): Promise<void> {
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
