// `npm run bench -- peers [postgres|redis]`: our backend beside the peer library
// on the same store, same workload, same run (issue 15): N events of ~100 bytes
// (RHEO_BENCH_N, default 20,000) appended in batches of 500, then consumed with
// 16 concurrent no-op handlers, 100 claimed at a time. PostgreSQL beside pg-boss
// 10, Redis beside BullMQ 6 (bench/peers/*.ts: how each peer is driven). Each
// line: ours, theirs, and `oursPerPeer` = ours / theirs.
import { dropSchema, PG_URL } from './pg-schema';
import { postgresBackend, redisBackend, Rheo } from '../lib';
import { benchAppend, benchConsume, emit, emitPeer, printTable } from './harness';
import { benchBullmq } from './peers/bullmq';
import { benchPgBoss } from './peers/pg-boss';
import { deleteKeysUnder, REDIS_URL } from './redis-keys';

const N = Number(process.env.RHEO_BENCH_N ?? 20_000);
const BATCH = 500;

/** Ours on `rheo`: append N, then consume them through a Group (maxDemand 100 × concurrency 16). */
async function ours(rheo: Rheo, backend: string, partitions: number): Promise<{ append: number; consume: number }> {
  await rheo.createStream('bench', { partitions });
  await rheo.createGroup('bench', 'consumers');
  const append = await benchAppend(rheo, 'bench', N, BATCH);
  emit({ backend, op: 'append', events: N, eventsPerSec: append.eventsPerSec });
  const consume = await benchConsume(rheo, 'bench', 'consumers', N, { maxDemand: 100, concurrency: 16 });
  emit({ backend, op: 'consume', events: N, eventsPerSec: consume.eventsPerSec });
  return { append: append.eventsPerSec, consume: consume.eventsPerSec };
}

async function postgres(): Promise<void> {
  const schema = `rheo_peers_${process.pid}`;
  const rheo = new Rheo(postgresBackend({ url: PG_URL, schema }));
  try {
    const us = await ours(rheo, 'postgres', 1);
    const boss = await benchPgBoss(PG_URL, N, BATCH);
    emitPeer('pg-boss', 'append', N, boss.append, us.append);
    emitPeer('pg-boss', 'consume', N, boss.consume, us.consume);
  } finally {
    await rheo.close();
    await dropSchema(schema);
  }
}

async function redis(): Promise<void> {
  const prefix = `rheo-peers:${process.pid}`;
  // Four partitions, as `npm run bench -- redis` uses.
  const rheo = new Rheo(redisBackend({ url: REDIS_URL, prefix }));
  try {
    const us = await ours(rheo, 'redis', 4);
    const bull = await benchBullmq(REDIS_URL, N, BATCH);
    emitPeer('bullmq', 'append', N, bull.append, us.append);
    emitPeer('bullmq', 'consume', N, bull.consume, us.consume);
  } finally {
    await rheo.close();
    await deleteKeysUnder(prefix);
  }
}

/** Both stores, or the one named. */
export async function main(args: string[]): Promise<void> {
  const which = args[0];
  if (which !== undefined && which !== 'postgres' && which !== 'redis') throw new Error(`usage: npm run bench -- peers [postgres|redis]`);
  if (which !== 'redis') await postgres();
  if (which !== 'postgres') await redis();
  printTable();
}
