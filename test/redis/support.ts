import { createHash } from 'node:crypto';
import Redis from 'ioredis';
import { SCRIPTS } from '../../lib/backends/redis/scripts';
import { ManualClock, Rheo, redisBackend, type RheoEvent } from '../../lib';
import type { RedisBackend } from '../../lib/backends/redis/redis-backend';

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

/** One script call a backend sent (EVALSHA, or the EVAL fallback): its name in scripts/, keys and arguments as sent. */
export interface ScriptCall {
  script: string;
  keys: string[];
  args: string[];
}

/** ioredis's command object, as `sendCommand` receives it. */
interface SentCommand {
  name: string;
  args: unknown[];
}

/**
 * Records the script calls a Redis backend sends on its connection, alone or
 * pipelined (ioredis sends both through the client's `sendCommand`), between
 * `start()` and `calls()`. A deterministic measure of how work is cut: how many
 * calls an operation took and what each was given to do; the server's own timings
 * (SLOWLOG) depend on how loaded the machine is.
 */
export class ScriptCalls {
  private recorded: ScriptCall[] | null = null;

  /** `backend` must be initialised (its connection exists). */
  constructor(backend: RedisBackend) {
    // The connection is the backend's context's (redis/context.ts): reached into here, as no API exposes it.
    type Sender = { sendCommand(c: SentCommand, ...rest: unknown[]): unknown };
    const client = (backend as unknown as { ctx: { connection: { client(): Sender } } }).ctx.connection.client();
    const send = client.sendCommand.bind(client);
    client.sendCommand = (command: SentCommand, ...rest: unknown[]) => {
      if (this.recorded && /^eval(sha)?$/i.test(command.name)) {
        const [first, count, ...rest2] = command.args.map(String);
        const n = Number(count);
        const script = /^evalsha$/i.test(command.name) ? (SCRIPT_BY_SHA.get(first) ?? first) : (SCRIPT_BY_SHA.get(sha1(first)) ?? 'eval');
        this.recorded.push({ script, keys: rest2.slice(0, n), args: rest2.slice(n) });
      }
      return send(command, ...rest);
    };
  }

  /** Record from now on, forgetting what was recorded before. */
  start(): void {
    this.recorded = [];
  }

  /** The calls since start(), in the order sent. */
  calls(): ScriptCall[] {
    return [...(this.recorded ?? [])];
  }
}

function sha1(text: string): string {
  return createHash('sha1').update(text).digest('hex');
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
