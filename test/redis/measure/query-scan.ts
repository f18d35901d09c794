// A filtered query page on Redis at EVENTS events (default 1,000,000) in 4
// partitions, the scale bench's shape: limit 50, payload.tenant matching 1 event in
// 1000; the first page's time and the walk to the last page (a bounded scan reads
// the log in query order, so a page costs about limit * 1000 entries read).
// Run: npx ts-node --transpile-only test/redis/measure/query-scan.ts
import { performance } from 'node:perf_hooks';
import { Rheo, redisBackend } from '../../../lib';
import { deleteKeys, REDIS_URL as URL } from '../support';
import { load, tenantPayload } from '../../../bench/scale/load';

const EVENTS = Number(process.env.EVENTS ?? 1_000_000);

async function main(): Promise<void> {
  const prefix = `rheo-measure:${process.pid}`;
  const rheo = new Rheo(redisBackend({ url: URL, prefix }));
  try {
    await rheo.createStream('big', { partitions: 4 });
    await load(rheo, 'big', EVENTS, { payloadOf: tenantPayload });
    const firsts: number[] = [];
    const pages: number[] = [];
    for (let round = 0; round < 5; round++) {
      const tenant = `t${(round * 97) % 1000}`;
      let cursor: string | undefined;
      let first = true;
      let matched = 0;
      do {
        const t0 = performance.now();
        const page = await rheo.queryPage({ stream: 'big', where: { payload: { tenant } }, limit: 50, cursor });
        const ms = performance.now() - t0;
        (first ? firsts : pages).push(ms);
        first = false;
        matched += page.items.length;
        cursor = page.nextCursor ?? undefined;
      } while (cursor);
      if (matched !== EVENTS / 1000) throw new Error(`matched ${matched}, expected ${EVENTS / 1000}`);
    }
    const med = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];
    console.log(
      JSON.stringify({
        events: EVENTS,
        firstPageP50Ms: Math.round(med(firsts)),
        pageP50Ms: Math.round(med([...firsts, ...pages])),
        pages: firsts.length + pages.length,
      }),
    );
  } finally {
    await rheo.close();
    await deleteKeys(prefix);
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
