// Claim latency while a trim runs, on Redis alone (the scale bench's step, without the
// rest of the bench): EVENTS (default 1,000,000) events in 4 partitions, a group
// started at the end (caught up), then bench/scale/trim.ts's claimDuringTrim.
// Run: npx ts-node --transpile-only test/redis/measure/claim-during-trim.ts
import Redis from 'ioredis';
import { Rheo, redisBackend } from '../../../lib';
import { load, tenantPayload } from '../../../bench/scale/load';
import { claimDuringTrim } from '../../../bench/scale/trim';

const URL = process.env.RHEO_REDIS_URL ?? 'redis://127.0.0.1:6379';
const EVENTS = Number(process.env.EVENTS ?? 1_000_000);

async function main(): Promise<void> {
  const prefix = `rheo-measure:${process.pid}`;
  const rheo = new Rheo(redisBackend({ url: URL, prefix }));
  const admin = new Redis(URL);
  try {
    await rheo.createStream('big', { partitions: 4 });
    const loaded = await load(rheo, 'big', EVENTS, { payloadOf: tenantPayload });
    await rheo.createGroup('big', 'g', { start: 'end' });
    const figures = await claimDuringTrim(rheo, 'big', 'g', Number(process.env.SAMPLES ?? 500));
    console.log(JSON.stringify({ events: EVENTS, loadMs: Math.round(loaded.ms), ...figures, partitions: undefined }));
  } finally {
    await rheo.close();
    let cursor = '0';
    do {
      const [next, keys] = await admin.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length) await admin.unlink(...keys);
    } while (cursor !== '0');
    admin.disconnect();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
