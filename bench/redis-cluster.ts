// `npm run bench -- redis-cluster`: the same workload on a 3-master Redis Cluster
// (scripts/redis-cluster.sh, ports 7100-7105; started here when not up) and on one
// Redis (the standalone 127.0.0.1:6379), in one run: 12 streams, chosen so that each
// master owns the slots of 4, appended in batches of 500, then consumed through 12
// Groups at once (one per stream, maxDemand 100, concurrency 16, no-op handler), in
// this one process, after a small unmeasured round on each. Each line: events/s; the
// cluster's lines add `vsOneNode` (cluster / one node). Not the same servers: the
// cluster's masters replicate every write to a replica and write an AOF (everysec),
// the standalone server does neither, and on one machine all of them share its cores.
//
//   npm run bench -- redis-cluster [--events N]   (default N: RHEO_BENCH_N or 24,000, over all 12 streams)
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import Redis, { Cluster } from 'ioredis';
import { Consumer, Rheo, redisBackend } from '../lib';
import { StreamKeys } from '../lib/backends/redis/keys';
import { emit, payload, printTable, rate, round, timeIt } from './harness';
import { deleteKeysUnder } from './redis-keys';

const URL = process.env.RHEO_REDIS_URL ?? 'redis://127.0.0.1:6379';
const CLUSTER_PORT = Number(process.env.RHEO_CLUSTER_PORT ?? 7100);
const SEEDS = [0, 1, 2].map((i) => ({ host: '127.0.0.1', port: CLUSTER_PORT + i }));
const STREAMS = 12;
const MASTERS = 3;
const BATCH = 500;
const PARTITIONS = 4;

/** Stream names whose slots fall 4 on each master: `s-0`, `s-1`, ... taken while their master still has room. */
async function spreadNames(cluster: Cluster, prefix: string): Promise<{ names: string[]; perMaster: Record<string, number> }> {
  const owners = (await cluster.call('CLUSTER', 'SLOTS')) as Array<[number, number, [string, number, ...unknown[]], ...unknown[]]>;
  const masterOf = (slot: number) => {
    const range = owners.find(([from, to]) => slot >= from && slot <= to);
    if (!range) throw new Error(`no master owns slot ${slot}`);
    return `${range[2][0]}:${range[2][1]}`;
  };
  const masters = new Set(owners.map(([, , m]) => `${m[0]}:${m[1]}`));
  if (masters.size !== MASTERS) throw new Error(`the cluster on ${CLUSTER_PORT} has ${masters.size} masters, not ${MASTERS}`);
  const perMaster: Record<string, number> = {};
  const names: string[] = [];
  for (let i = 0; names.length < STREAMS; i++) {
    const name = `s-${i}`;
    const slot = Number(await cluster.call('CLUSTER', 'KEYSLOT', new StreamKeys(prefix, name).meta));
    const master = masterOf(slot);
    if ((perMaster[master] ?? 0) >= STREAMS / MASTERS) continue;
    perMaster[master] = (perMaster[master] ?? 0) + 1;
    names.push(name);
  }
  return { names, perMaster };
}

/** Append n events over the streams (batches of 500, all streams at once), then consume them through one Consumer per stream at once. */
async function workload(rheo: Rheo, streams: string[], n: number): Promise<{ append: number; consume: number }> {
  const per = Math.ceil(n / streams.length);
  const total = per * streams.length;
  for (const s of streams) {
    await rheo.createStream(s, { partitions: PARTITIONS });
    await rheo.createGroup(s, 'consumers');
  }
  const { ms: appendMs } = await timeIt(() =>
    Promise.all(
      streams.map(async (s, k) => {
        for (let i = 0; i < per; i += BATCH) {
          const batch = [];
          for (let j = i; j < Math.min(per, i + BATCH); j++)
            batch.push({ type: 'quote', key: `k${j % 64}`, payload: payload(k * per + j) });
          await rheo.appendBatch(s, batch);
        }
      }),
    ),
  );

  let settled = 0;
  let onAll!: () => void;
  const all = new Promise<void>((r) => (onAll = r));
  const groups = streams.map((stream) => {
    const g = new Consumer(rheo, { stream, group: 'consumers', maxDemand: 100, concurrency: 16, pollMs: 50 }, async () => undefined);
    g.on('settled', () => {
      if (++settled === total) onAll();
    });
    g.on('settle_error', ({ error }) => console.error('settle error:', error.message));
    g.on('fetch_error', (error) => console.error('fetch error:', error.message));
    return g;
  });
  const { ms: consumeMs } = await timeIt(async () => {
    for (const g of groups) g.start();
    await all;
    for (const s of streams) {
      while ((await rheo.lag(s, 'consumers')).lag > 0) await new Promise((r) => setTimeout(r, 1));
    }
  });
  await Promise.all(groups.map((g) => g.drain(5000)));
  return { append: rate(total, appendMs), consume: rate(total, consumeMs) };
}

function eventsArg(args: string[]): number {
  const i = args.indexOf('--events');
  const n = Number(i >= 0 ? args[i + 1] : (process.env.RHEO_BENCH_N ?? 24_000));
  if (!Number.isSafeInteger(n) || n < STREAMS) throw new Error(`--events must be a whole number of at least ${STREAMS}`);
  return n;
}

export async function main(args: string[] = []): Promise<void> {
  const n = eventsArg(args);
  // The same cluster the tests use: started (and waited for) unless already up and healthy.
  execFileSync('bash', [join(__dirname, '..', 'scripts', 'redis-cluster.sh')], {
    stdio: 'inherit',
    env: { ...process.env, RHEO_CLUSTER_PORT: String(CLUSTER_PORT) },
  });
  const prefix = `rheo-bench-cluster:${process.pid}`;
  const admin = new Cluster(SEEDS);
  const { names, perMaster } = await spreadNames(admin, prefix);
  console.log(JSON.stringify({ streams: names.length, perMaster }));

  const single = new Rheo(redisBackend({ url: URL, prefix }));
  const onCluster = new Rheo(redisBackend({ cluster: SEEDS, prefix }));
  try {
    // A small unmeasured round on each first, so neither side pays the process's warm-up (JIT, connections, script loads).
    const warm = await spreadNames(admin, `${prefix}:warm`);
    const warmSingle = new Rheo(redisBackend({ url: URL, prefix: `${prefix}:warm` }));
    const warmCluster = new Rheo(redisBackend({ cluster: SEEDS, prefix: `${prefix}:warm` }));
    await workload(warmSingle, warm.names, Math.min(n, 1200)).finally(() => warmSingle.close());
    await workload(warmCluster, warm.names, Math.min(n, 1200)).finally(() => warmCluster.close());

    const one = await workload(single, names, n);
    const three = await workload(onCluster, names, n);
    const events = Math.ceil(n / STREAMS) * STREAMS;
    for (const op of ['append', 'consume'] as const) {
      emit({ backend: 'redis', op: `${op} (12 streams, 1 node)`, events, eventsPerSec: one[op] });
      const line = {
        backend: 'redis-cluster',
        op: `${op} (12 streams, 3 masters)`,
        events,
        eventsPerSec: three[op],
        vsOneNode: round(three[op] / one[op]),
      };
      emit(line);
    }
    printTable();
  } finally {
    await single.close();
    await onCluster.close();
    await cleanup(new Redis(URL), prefix);
    await Promise.all(admin.nodes('master').map((node) => cleanup(node, prefix, false)));
    admin.disconnect();
  }
}

/** Delete the bench's keys (SCAN, never KEYS) on one server. */
async function cleanup(redis: Redis, prefix: string, close = true): Promise<void> {
  try {
    await deleteKeysUnder(prefix, redis);
  } finally {
    if (close) redis.disconnect();
  }
}
