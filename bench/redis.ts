// The Redis Streams backend next to raw ioredis doing the same work:
// append = pipelined XADD in batches; consume = XREADGROUP COUNT 100 + XACK.
import Redis from 'ioredis';
import { Rheo, redisBackend } from '../lib';
import { benchBullmq } from './peers/bullmq';
import { benchAppend, benchConsume, emitLatency, emitPeer, emitVsRaw, payload, printTable, rate, timeIt } from './harness';

const URL = process.env.RHEO_REDIS_URL ?? 'redis://127.0.0.1:6379';
const N = 20_000;
const BATCH = 1000;
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

async function cleanup(redis: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length) await redis.del(...keys);
  } while (cursor !== '0');
}

/** append N, consume N through a Group (maxDemand 100, concurrency 16), latency with pollMs 1000; each next to raw ioredis. */
export async function main(): Promise<void> {
  const prefix = `rheo-bench:${process.pid}`;
  const redis = new Redis(URL);
  const rheo = new Rheo(redisBackend({ url: URL, prefix }));
  try {
    await rheo.createStream('bench', { partitions: PARTITIONS });
    await rheo.createGroup('bench', 'consumers');
    const rawKey = `${prefix}:raw`;

    const rawAppendRate = await rawAppend(redis, rawKey);
    const append = await benchAppend(rheo, 'bench', N, BATCH);
    emitVsRaw('redis', 'append', N, append.eventsPerSec, rawAppendRate);

    const rawConsumeRate = await rawConsume(redis, rawKey);
    const consume = await benchConsume(rheo, 'bench', 'consumers', N, { maxDemand: 100, concurrency: 16 });
    emitVsRaw('redis', 'consume', N, consume.eventsPerSec, rawConsumeRate);

    // The peer on the same Redis, same N, same payloads.
    const bull = await benchBullmq(URL, N);
    emitPeer('bullmq', 'append', N, bull.append, append.eventsPerSec);
    emitPeer('bullmq', 'consume', N, bull.consume, consume.eventsPerSec);

    await emitLatency(rheo, 'redis');

    printTable();
  } finally {
    await rheo.close();
    await cleanup(redis, prefix);
    redis.disconnect();
  }
}
