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

/** A store's side of the comparison: our facade on it, the peer driven on the same store, and what to remove after. */
interface Store {
  backend: string;
  peer: string;
  partitions: number;
  rheo: Rheo;
  runPeer(): Promise<{ append: number; consume: number }>;
  cleanup(): Promise<unknown>;
}

/** Ours on the store (append N, then consume them through a Consumer of maxDemand 100 × concurrency 16), then the peer. */
async function beside(s: Store): Promise<void> {
  try {
    await s.rheo.createStream('bench', { partitions: s.partitions });
    await s.rheo.createGroup('bench', 'consumers');
    const append = (await benchAppend(s.rheo, 'bench', N, BATCH)).eventsPerSec;
    emit({ backend: s.backend, op: 'append', events: N, eventsPerSec: append });
    const consume = (await benchConsume(s.rheo, 'bench', 'consumers', N, { maxDemand: 100, concurrency: 16 })).eventsPerSec;
    emit({ backend: s.backend, op: 'consume', events: N, eventsPerSec: consume });
    const theirs = await s.runPeer();
    emitPeer(s.peer, 'append', N, theirs.append, append);
    emitPeer(s.peer, 'consume', N, theirs.consume, consume);
  } finally {
    await s.rheo.close();
    await s.cleanup();
  }
}

function postgres(): Promise<void> {
  const schema = `rheo_peers_${process.pid}`;
  return beside({
    backend: 'postgres',
    peer: 'pg-boss',
    partitions: 1,
    rheo: new Rheo(postgresBackend({ url: PG_URL, schema })),
    runPeer: () => benchPgBoss(PG_URL, N, BATCH),
    cleanup: () => dropSchema(schema),
  });
}

function redis(): Promise<void> {
  const prefix = `rheo-peers:${process.pid}`;
  return beside({
    backend: 'redis',
    peer: 'bullmq',
    // Four partitions, as `npm run bench -- redis` uses.
    partitions: 4,
    rheo: new Rheo(redisBackend({ url: REDIS_URL, prefix })),
    runPeer: () => benchBullmq(REDIS_URL, N, BATCH),
    cleanup: () => deleteKeysUnder(prefix),
  });
}

/** Both stores, or the one named. */
export async function main(args: string[]): Promise<void> {
  const which = args[0];
  if (which !== undefined && which !== 'postgres' && which !== 'redis') throw new Error(`usage: npm run bench -- peers [postgres|redis]`);
  if (which !== 'redis') await postgres();
  if (which !== 'postgres') await redis();
  printTable();
}
