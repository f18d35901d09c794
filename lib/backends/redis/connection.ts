import { createHash } from 'node:crypto';
import type { ChainableCommander, Redis, RedisOptions } from 'ioredis';
import { RheoError } from '../../core/errors';
import { SCRIPTS, ScriptName } from './scripts';

type RedisConstructor = new (...args: unknown[]) => Redis;

/**
 * Load ioredis on first use, so that importing nestjs-rheo never requires it
 * (it is an optional peer dependency).
 */
export function loadIoredis(): RedisConstructor {
  let mod: { default?: unknown; Redis?: unknown };
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    mod = require('ioredis');
  } catch (err) {
    throw new RheoError('invalid_argument', 'the redis backend needs the "ioredis" package: npm install ioredis@^6', { cause: err });
  }
  return (mod.Redis ?? mod.default ?? mod) as RedisConstructor;
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
export const CREATED_CLIENT_DEFAULTS: RedisOptions = {
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
export const BLOCKER_OVERRIDES: RedisOptions = {
  lazyConnect: true,
  enableOfflineQueue: true,
  maxRetriesPerRequest: null,
  commandTimeout: undefined,
  retryStrategy: (times: number) => Math.min(50 * 2 ** Math.min(times, 10), 2000),
};

const SHAS = Object.fromEntries(
  Object.entries(SCRIPTS).map(([name, lua]) => [name, createHash('sha1').update(lua).digest('hex')]),
) as Record<ScriptName, string>;

const isNoScript = (err: unknown) => err instanceof Error && /NOSCRIPT/.test(err.message);

/**
 * Runs our Lua scripts by SHA (EVALSHA), falling back to EVAL when the server
 * does not know the script (after a restart or SCRIPT FLUSH); EVAL also caches it
 * again. A NOSCRIPT reply means the script did not run, so the fallback is safe.
 */
export class ScriptRunner {
  constructor(private readonly client: () => Redis) {}

  /** Load every script (once per server; cheap to repeat). */
  async loadAll(): Promise<void> {
    const p = this.client().pipeline();
    for (const lua of Object.values(SCRIPTS)) p.script('LOAD', lua);
    const results = (await p.exec()) ?? [];
    for (const [err] of results) if (err) throw err;
  }

  /**
   * Keys and args travel as one array that ioredis flattens itself: spreading them
   * into the call (`...keys, ...args`) puts every value on the JS stack, which
   * overflows at about 125k values. (The backend keeps each call far smaller
   * anyway, so that no script runs long; this keeps a large call possible at all.)
   */
  async run(name: ScriptName, keys: string[], args: Array<string | number>): Promise<unknown> {
    const flat = callArgs(keys, args);
    try {
      return await this.client().evalsha(SHAS[name], keys.length, flat);
    } catch (err) {
      if (!isNoScript(err)) throw err;
      return this.client().eval(SCRIPTS[name], keys.length, flat);
    }
  }

  /** Queue a script call on a pipeline; pair with {@link ScriptRunner.execPipeline}. */
  queue(pipeline: ChainableCommander, name: ScriptName, keys: string[], args: Array<string | number>): void {
    pipeline.evalsha(SHAS[name], keys.length, callArgs(keys, args));
  }

  /**
   * Execute a pipeline of queued script calls in one round trip; a call answered
   * NOSCRIPT did not run and is re-sent alone with EVAL. Returns each call's
   * result or error.
   */
  async execPipeline(pipeline: ChainableCommander, calls: Array<{ name: ScriptName; keys: string[]; args: Array<string | number> }>): Promise<Array<[Error | null, unknown]>> {
    const results = ((await pipeline.exec()) ?? []) as Array<[Error | null, unknown]>;
    for (let i = 0; i < results.length; i++) {
      if (isNoScript(results[i][0])) {
        const c = calls[i];
        try {
          results[i] = [null, await this.client().eval(SCRIPTS[c.name], c.keys.length, callArgs(c.keys, c.args))];
        } catch (err) {
          results[i] = [err as Error, null];
        }
      }
    }
    return results;
  }
}

/** KEYS then ARGV as one array (ioredis flattens an array argument without spreading it). */
function callArgs(keys: string[], args: Array<string | number>): string[] {
  return (keys as Array<string | number>).concat(args) as string[];
}

/** Drop a connection we own and resolve once ioredis reports it ended. */
export function disconnect(client: Redis): Promise<void> {
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
