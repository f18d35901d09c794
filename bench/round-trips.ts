// `npm run bench -- round-trips [postgres|redis|sqlite]`: how many round trips
// to the store each hot operation makes (issue 15), counted, not timed: one
// append of 500, one fetch of 100, one renew round of those 100 leases, one
// settle (ack) of those 100; then, not exact (timing decides how a Consumer's
// fetches and coalesced settles fall), all the 1,000 events then waiting consumed
// through a Consumer as the throughput bench does. The driver calls are counted by hooks patched into
// this process's driver prototypes (bench/round-trips/*.ts); the library is not
// touched. Each operation runs once unmeasured first, so the counts are the steady
// state (prepared statements planned, scripts loaded, stream metadata cached).
// Prints `{"backend","op":"round-trips","what","n","calls"}` per operation; on
// SQLite `n` counts statements run (no network).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dropSchema, PG_URL } from './pg-schema';
import { Consumer, type Lease, postgresBackend, redisBackend, Rheo, sqliteBackend } from '../lib';
import { payload } from './harness';
import type { Counter } from './round-trips/counter';
import { countRedisRoundTrips } from './round-trips/ioredis';
import { countPgRoundTrips } from './round-trips/pg';
import { countSqliteStatements } from './round-trips/sqlite';
import { deleteKeysUnder, REDIS_URL } from './redis-keys';

const APPEND = 500;
const CLAIM = 100;
const STORES = ['postgres', 'redis', 'sqlite'] as const;
type Store = (typeof STORES)[number];

export interface RoundTrips {
  backend: string;
  op: 'round-trips';
  what: string;
  n: number;
  calls: string[];
}

function batch(from: number): Array<{ type: string; key: string; payload: ReturnType<typeof payload> }> {
  return Array.from({ length: APPEND }, (_, k) => ({ type: 'quote', key: `k${(from + k) % 64}`, payload: payload(from + k) }));
}

/** Count the round trips of each operation on `rheo` (stream `partitions` as the throughput bench uses). */
export async function countRoundTrips(rheo: Rheo, backend: string, counter: Counter, partitions: number): Promise<RoundTrips[]> {
  await rheo.createStream('rt', { partitions });
  await rheo.createGroup('rt', 'consumers');
  const fetch = () => rheo.fetch('rt', 'consumers', { limit: CLAIM, leaseMs: 30_000, consumerId: 'rt-1' });
  const renew = (leases: Lease[]) => rheo.renewMany(leases, { leaseMs: 30_000 });
  const settle = (leases: Lease[]) => rheo.settleMany(leases.map((lease) => ({ kind: 'ack' as const, lease })));

  // Once unmeasured: first-use costs are not the steady state.
  await rheo.appendBatch('rt', batch(0));
  const warm = await fetch();
  await renew(warm);
  await settle(warm);

  const out: RoundTrips[] = [];
  const measure = async <T>(what: string, fn: () => Promise<T>): Promise<T> => {
    counter.reset();
    const result = await fn();
    out.push({ backend, op: 'round-trips', what, n: counter.n, calls: counter.summary() });
    counter.reset();
    return result;
  };
  await measure(`append ${APPEND}`, () => rheo.appendBatch('rt', batch(APPEND)));
  const leases = await measure(`fetch ${CLAIM}`, fetch);
  if (leases.length !== CLAIM) throw new Error(`fetch returned ${leases.length} leases, expected ${CLAIM}`);
  await measure(`renew ${CLAIM}`, () => renew(leases));
  const results = await measure(`settle ${CLAIM}`, () => settle(leases));
  if (results.some((r) => !r.ok)) throw new Error('a settle failed');

  // Not exact: how a Consumer's fetches and coalesced settles fall depends on timing. What the bench's consume does per event.
  await rheo.createGroup('rt', 'group');
  const waiting = 2 * APPEND;
  await measure(`consume ${waiting} through a Consumer (varies)`, () => consumeAll(rheo, 'rt', 'group', waiting));
  return out;
}

/** Consume the `n` waiting events through a Consumer like the bench's (maxDemand 100, concurrency 16, no-op handler). */
async function consumeAll(rheo: Rheo, stream: string, group: string, n: number): Promise<void> {
  let settled = 0;
  let onAll!: () => void;
  const all = new Promise<void>((r) => (onAll = r));
  const g = new Consumer(rheo, { stream, group, maxDemand: CLAIM, concurrency: 16, pollMs: 1000 }, async () => undefined);
  g.on('settled', () => {
    if (++settled === n) onAll();
  });
  g.start();
  await all;
  await g.drain(5000);
}

async function onPostgres(): Promise<RoundTrips[]> {
  const counter = countPgRoundTrips();
  const schema = `rheo_rt_${process.pid}`;
  const rheo = new Rheo(postgresBackend({ url: PG_URL, schema }));
  try {
    await rheo.init();
    return await countRoundTrips(rheo, 'postgres', counter, 1);
  } finally {
    await rheo.close();
    await dropSchema(schema);
  }
}

async function onRedis(): Promise<RoundTrips[]> {
  const counter = countRedisRoundTrips();
  const prefix = `rheo-rt:${process.pid}`;
  const rheo = new Rheo(redisBackend({ url: REDIS_URL, prefix }));
  try {
    await rheo.init();
    return await countRoundTrips(rheo, 'redis', counter, 4);
  } finally {
    await rheo.close();
    await deleteKeysUnder(prefix);
  }
}

async function onSqlite(): Promise<RoundTrips[]> {
  const counter = countSqliteStatements();
  const dir = mkdtempSync(join(tmpdir(), 'rheo-rt-sqlite-'));
  const rheo = new Rheo(sqliteBackend({ database: join(dir, 'rheo.db') }));
  try {
    await rheo.init();
    return await countRoundTrips(rheo, 'sqlite', counter, 1);
  } finally {
    await rheo.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The stores named (all three when none), one line per operation, then a table. */
export async function main(args: string[]): Promise<void> {
  for (const a of args)
    if (!(STORES as readonly string[]).includes(a)) throw new Error(`usage: npm run bench -- round-trips [${STORES.join('|')}]…`);
  const stores = (args.length ? args : STORES) as Store[];
  const all: RoundTrips[] = [];
  for (const store of stores) {
    const lines = store === 'postgres' ? await onPostgres() : store === 'redis' ? await onRedis() : await onSqlite();
    for (const line of lines) console.log(JSON.stringify(line));
    all.push(...lines);
  }
  console.log('');
  const width = Math.max(...all.map((l) => l.what.length));
  for (const l of all) console.log(`${l.backend.padEnd(9)} ${l.what.padEnd(width)} ${String(l.n).padStart(4)}  ${l.calls.join(' | ')}`);
}
