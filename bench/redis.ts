// The Redis Streams backend next to raw ioredis doing the same work:
// append = pipelined XADD in batches; consume = XREADGROUP COUNT 100 + XACK;
// and next to the minimal queue (bench/minimal/redis.ts) with 16 workers.
import Redis from 'ioredis';
import { Rheo, redisBackend } from '../lib';
import { minimalAppend, minimalConsume } from './minimal/redis';
import { benchBullmq } from './peers/bullmq';
import { benchAppend, benchConsume, emitLatency, emitPeer, emitRounds, payload, printTable, rate, roundsOf, timeIt } from './harness';
import { deleteKeysUnder } from './redis-keys';

const URL = process.env.RHEO_REDIS_URL ?? 'redis://127.0.0.1:6379';
// RHEO_BENCH_N: a smaller run to check the bench prints (the figures are for the default).
const N = Number(process.env.RHEO_BENCH_N ?? 20_000);
// Issue 15's workload: batches of 500 on every store (this bench used 1000 before).
const BATCH = 500;
const PARTITIONS = 4;

async function rawAppend(redis: Redis, key: string): Promise<number> {
  const { ms } = await timeIt(async () => {
    for (let i = 0; i < N; i += BATCH) {
      const p = redis.pipeline();
      for (let j = i; j < Math.min(N, i + BATCH); j++) {
        p.xadd(
          key,
          '*',
          'i',
          `id-${j}`,
          't',
          String(Date.now()),
          'y',
          'quote',
          'k',
          `k${j % 64}`,
          'm',
          '{}',
          'd',
          JSON.stringify(payload(j)),
        );
      }
      await p.exec();
    }
  });
  return rate(N, ms);
}

async function rawConsume(redis: Redis, key: string): Promise<number> {
  await redis.xgroup('CREATE', key, 'raw', '0');
  let consumed = 0;
  const { ms } = await timeIt(async () => {
    while (consumed < N) {
      const res = (await redis.xreadgroup('GROUP', 'raw', 'c1', 'COUNT', 100, 'STREAMS', key, '>')) as Array<
        [string, Array<[string, string[]]>]
      > | null;
      const entries = res?.[0]?.[1] ?? [];
      for (const [, fields] of entries) JSON.parse(fields[fields.indexOf('d') + 1]);
      if (entries.length) await redis.xack(key, 'raw', ...entries.map(([id]) => id));
      consumed += entries.length;
    }
  });
  return rate(N, ms);
}

/** append N, consume N through a Consumer (maxDemand 100, concurrency 16), each next to raw ioredis and the minimal queue; BullMQ; latency idle (pollMs 1000) and while N drain. */
export async function main(args: string[] = []): Promise<void> {
  const rounds = roundsOf(args);
  const prefix = `rheo-bench:${process.pid}`;
  const redis = new Redis(URL);
  const rheo = new Rheo(redisBackend({ url: URL, prefix }));
  try {
    // Each round: a stream, a raw key and a minimal queue key of its own.
    const ours = await emitRounds('redis', N, rounds, async (k) => {
      const stream = `bench${k}`;
      await rheo.createStream(stream, { partitions: PARTITIONS });
      await rheo.createGroup(stream, 'consumers');
      const rawKey = `${prefix}:raw${k}`;
      const minimalKey = `${prefix}:minimal${k}`;
      const append = {
        raw: await rawAppend(redis, rawKey),
        minimal: await minimalAppend(redis, minimalKey, N, BATCH),
        ours: (await benchAppend(rheo, stream, N, BATCH)).eventsPerSec,
      };
      const consume = {
        raw: await rawConsume(redis, rawKey),
        minimal: await minimalConsume(redis, minimalKey, N, { workers: 16, claim: 100 }),
        ours: (await benchConsume(rheo, stream, 'consumers', N, { maxDemand: 100, concurrency: 16 })).eventsPerSec,
      };
      return { append, consume };
    });

    // The peer on the same Redis, same N, same payloads (beside our medians).
    const bull = await benchBullmq(URL, N, BATCH);
    emitPeer('bullmq', 'append', N, bull.append, ours.append.ours);
    emitPeer('bullmq', 'consume', N, bull.consume, ours.consume.ours);

    await emitLatency(rheo, 'redis', { backlog: N, batch: BATCH, partitions: PARTITIONS });

    printTable();
  } finally {
    await rheo.close();
    await deleteKeysUnder(prefix, redis);
    redis.disconnect();
  }
}
