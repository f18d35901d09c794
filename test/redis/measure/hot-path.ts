// The Redis hot path against what a store accumulates: append, claim (fetch limit 1)
// + ack, lag and groupInfo, p50/p99 over SAMPLES calls, taken (1) on a fresh stream,
// (2) with 200,000 dead letters in the consuming group, (3) with a 1,000,000-event
// backlog behind another group of the same stream (lag and groupInfo of that group
// too). Then the 1M backlog is consumed through a Consumer and every 10k window's rate
// printed (early windows against late ones: settled history must not slow consuming).
// Run: npx ts-node --transpile-only test/redis/measure/hot-path.ts
import { performance } from 'node:perf_hooks';
import { Rheo, redisBackend } from '../../../lib';
import { deleteKeys, REDIS_URL as URL } from '../support';
import { consume, windowRate } from '../../../bench/scale/consume';
import { load, tenantPayload } from '../../../bench/scale/load';

const SAMPLES = Number(process.env.SAMPLES ?? 500);
const DEAD = Number(process.env.DEAD ?? 200_000);
const BACKLOG = Number(process.env.BACKLOG ?? 1_000_000);

function quantiles(values: number[]): { p50: number; p99: number } {
  const s = [...values].sort((a, b) => a - b);
  const at = (p: number) => Math.round(s[Math.min(s.length - 1, Math.ceil(p * s.length) - 1)] * 1000) / 1000;
  return { p50: at(0.5), p99: at(0.99) };
}

async function timed(fn: () => Promise<unknown>): Promise<{ p50: number; p99: number }> {
  const ms: number[] = [];
  for (let i = 0; i < 20 + SAMPLES; i++) {
    const t0 = performance.now();
    await fn();
    if (i >= 20) ms.push(performance.now() - t0);
  }
  return quantiles(ms);
}

async function figures(rheo: Rheo, label: string, lagGroup: string): Promise<void> {
  let n = 0;
  const append = await timed(() => rheo.append('s', { type: 'probe', key: `k${n++ % 64}`, payload: { n } }));
  const claim = await timed(async () => {
    await rheo.append('s', { type: 'probe', payload: 1 });
    const [lease] = await rheo.fetch('s', 'g', { limit: 1 });
    await rheo.ack(lease);
  });
  const lag = await timed(() => rheo.lag('s', lagGroup));
  const info = await timed(() => rheo.groupInfo('s', lagGroup));
  console.log(JSON.stringify({ label, appendMs: append, appendFetchAckMs: claim, lagMs: lag, groupInfoMs: info, lagGroup }));
}

async function main(): Promise<void> {
  const prefix = `rheo-measure:${process.pid}`;
  const rheo = new Rheo(redisBackend({ url: URL, prefix }));
  try {
    await rheo.createStream('s', { partitions: 4 });
    await rheo.createGroup('s', 'g');
    await figures(rheo, 'fresh', 'g');

    await load(rheo, 's', DEAD, { payloadOf: tenantPayload });
    for (;;) {
      const leases = await rheo.fetch('s', 'g', { limit: 1000, leaseMs: 600_000 });
      if (leases.length === 0) break;
      await rheo.settleMany(leases.map((lease) => ({ kind: 'reject' as const, lease, reason: 'measure' })));
    }
    const info = await rheo.groupInfo('s', 'g');
    await figures(rheo, `${info.deadLetters} dead letters in g`, 'g');

    await rheo.createGroup('s', 'behind', { start: 'end' });
    await load(rheo, 's', BACKLOG, { payloadOf: tenantPayload });
    // g consumes the backlog to stay caught up for the hot-path figures (fast: acked in bulk).
    for (;;) {
      const leases = await rheo.fetch('s', 'g', { limit: 1000, leaseMs: 600_000 });
      if (leases.length === 0) break;
      await rheo.settleMany(leases.map((lease) => ({ kind: 'ack' as const, lease })));
    }
    await figures(rheo, `backlog of ${(await rheo.lag('s', 'behind')).lag} behind group "behind"`, 'behind');

    const run = await consume(rheo, 's', 'behind', BACKLOG, { window: 10_000, caughtUp: false });
    const windows = Array.from({ length: Math.floor(BACKLOG / 10_000) }, (_, i) => windowRate(run, i + 1));
    console.log(JSON.stringify({ consumeWindowsEventsPerSec: windows }));
  } finally {
    await rheo.close();
    await deleteKeys(prefix);
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
