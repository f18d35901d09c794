// How long ioredis takes to read 500 log entries (XRANGE), RESP3 (ioredis 6's default) against RESP2.
// Run: npx ts-node --transpile-only test/redis/measure/xrange-raw.ts
import { REDIS_URL as URL } from '../support';
import { performance } from 'node:perf_hooks';
import Redis from 'ioredis';

async function main(): Promise<void> {
  const key = `rheo-measure:${process.pid}:log`;
  const admin = new Redis(URL);
  try {
    const p = admin.pipeline();
    for (let i = 1; i <= 20_000; i++) {
      p.xadd(
        key,
        `0-${i}`,
        'i',
        `id-${i}`,
        't',
        String(1767225600000 + i),
        'm',
        '{}',
        'y',
        'quote',
        'k',
        `k${i % 64}`,
        'd',
        JSON.stringify({ n: i, tenant: `t${i % 1000}`, id: i, sym: 'USD', tenor: '10Y', bid: 1.2345, ask: 1.2355, ts: 1767225600000 + i }),
      );
    }
    await p.exec();
    for (const protocol of [3, 2] as const) {
      const c = new Redis(URL, { protocol } as never);
      const times: number[] = [];
      for (let i = 0; i < 40; i++) {
        const t0 = performance.now();
        await c.xrange(key, `0-${1 + i * 500}`, `0-${500 + i * 500}`);
        times.push(performance.now() - t0);
      }
      times.sort((a, b) => a - b);
      console.log(JSON.stringify({ protocol, xrange500MedianMs: Math.round(times[20] * 100) / 100 }));
      c.disconnect();
    }
  } finally {
    await admin.del(key);
    admin.disconnect();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
