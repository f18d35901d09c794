import { createHash } from 'node:crypto';
import Redis from 'ioredis';
import { SCRIPTS } from '../../lib/backends/redis/scripts';
import { ManualClock, Rheo, redisBackend, type RheoEvent } from '../../lib';

/** The machine's Redis; override with RHEO_REDIS_URL. */
export const REDIS_URL = process.env.RHEO_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A key prefix no other test file (or run) uses. */
export function freshPrefix(label: string): string {
  return `rheo-test:${label}:${process.pid}:${Math.random().toString(36).slice(2, 8)}`;
}

/** Delete every key under `prefix` (SCAN, never KEYS). */
export async function deleteKeys(prefix: string): Promise<number> {
  const admin = new Redis(REDIS_URL);
  let deleted = 0;
  try {
    let cursor = '0';
    do {
      const [next, keys] = await admin.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length) deleted += await admin.del(...keys);
    } while (cursor !== '0');
  } finally {
    admin.disconnect();
  }
  return deleted;
}

const SCRIPT_BY_SHA = new Map(Object.entries(SCRIPTS).map(([name, lua]) => [createHash('sha1').update(lua).digest('hex'), name]));

/** One SLOWLOG entry of a script call (EVALSHA/EVAL) on keys under a prefix. */
export interface SlowCall {
  micros: number;
  /** The script's name in the scripts/ registry (by its SHA), or the command when it is not one of ours. */
  script: string;
  /** The first key the call declared (names the script's stream and group). */
  key: string;
}

/**
 * Records every script call on keys under `prefix` that takes at least
 * `thresholdMicros`, through the server's SLOWLOG (durations measured by Redis
 * itself, not by a wall clock on this side). Only entries logged after `start()`
 * count, so other files' entries and earlier runs do not; the server's slowlog
 * settings are restored by `stop()`.
 */
export class SlowScripts {
  private readonly admin = new Redis(REDIS_URL);
  private saved: { threshold: string; maxLen: string } | null = null;
  private fromId = -1;

  constructor(
    private readonly prefix: string,
    private readonly thresholdMicros = 1000,
  ) {}

  async start(): Promise<void> {
    const [, threshold] = (await this.admin.config('GET', 'slowlog-log-slower-than')) as string[];
    const [, maxLen] = (await this.admin.config('GET', 'slowlog-max-len')) as string[];
    this.saved ??= { threshold, maxLen };
    await this.admin.config('SET', 'slowlog-log-slower-than', String(this.thresholdMicros));
    await this.admin.config('SET', 'slowlog-max-len', '100000');
    const [last] = (await this.admin.slowlog('GET', 1)) as Array<[number, ...unknown[]]>;
    this.fromId = last ? Number(last[0]) : -1;
  }

  /** Script calls of ours logged since start(), slowest first. */
  async calls(): Promise<SlowCall[]> {
    const entries = (await this.admin.slowlog('GET', -1)) as Array<[number, number, number, string[]]>;
    return entries
      .filter(
        ([id, , , args]) =>
          id > this.fromId && /^EVAL/i.test(String(args[0])) && args.slice(3).some((a) => String(a).startsWith(this.prefix)),
      )
      .map(([, , micros, args]) => ({
        micros: Number(micros),
        script: SCRIPT_BY_SHA.get(String(args[1])) ?? String(args[0]),
        key: String(args[3]),
      }))
      .sort((a, b) => b.micros - a.micros);
  }

  /** The slowest of our script calls since start(), in microseconds (0 when none reached the threshold). */
  async slowest(): Promise<number> {
    return (await this.calls())[0]?.micros ?? 0;
  }

  async stop(): Promise<void> {
    try {
      if (this.saved) {
        await this.admin.config('SET', 'slowlog-log-slower-than', this.saved.threshold);
        await this.admin.config('SET', 'slowlog-max-len', this.saved.maxLen);
      }
    } finally {
      this.admin.disconnect();
    }
  }
}

/** `e` as a read returns it (RESP entry fields, eventFromEntry): the reference the hot paths' encodings are held to. */
export async function readBack(rheo: Rheo, e: RheoEvent): Promise<RheoEvent> {
  const [got] = await rheo.read(e.stream, { partition: e.partition, afterSequence: e.sequence - 1, limit: 1 });
  return got;
}

/** Same values, same own keys in the same order (what JSON.stringify or a snapshot would see), a Date timestamp. */
export function expectSameEvent(actual: RheoEvent, expected: RheoEvent): void {
  expect(actual).toEqual(expected);
  expect(Object.keys(actual)).toEqual(Object.keys(expected));
  expect(actual.timestamp).toBeInstanceOf(Date);
}

/**
 * A Redis backend on a fresh key prefix with a manual clock, its facade and an
 * admin connection, for one test file: all closed, and the keys deleted, after it.
 */
export function clockedRedis(label: string) {
  const prefix = freshPrefix(label);
  const clock = new ManualClock(Date.UTC(2026, 0, 1));
  const backend = redisBackend({ url: REDIS_URL, prefix, clock });
  const rheo = new Rheo(backend);
  const admin = new Redis(REDIS_URL);
  afterAll(async () => {
    await rheo.close();
    admin.disconnect();
    await deleteKeys(prefix);
  });
  return { prefix, clock, backend, rheo, admin };
}

/**
 * appendBatch of 100 events with explicit ids (`<stream>-<batch>-<i>`), retried on
 * backend_unavailable / ambiguous: idempotent by id, so a retry after a lost
 * answer stores nothing twice. Returns the ids.
 */
export async function appendRetrying(rheo: Rheo, stream: string, batch: number): Promise<string[]> {
  const inputs = Array.from({ length: 100 }, (_, i) => ({ id: `${stream}-${batch}-${i}`, key: `k${i % 17}`, payload: { batch, i } }));
  for (;;) {
    try {
      return (await rheo.appendBatch(stream, inputs)).map((e) => e.id);
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code !== 'backend_unavailable' && code !== 'ambiguous') throw err;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}
