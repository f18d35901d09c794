// Claim latency while a trim runs, on Redis alone (the scale bench's step, without the
// rest of the bench): EVENTS (default 1,000,000) events in 4 partitions, a group
// started at the end (caught up), then bench/scale/trim.ts's claimDuringTrim.
// Run: npx ts-node --transpile-only test/redis/measure/claim-during-trim.ts
import { Rheo, redisBackend } from '../../../lib';
import { deleteKeys, REDIS_URL as URL } from '../support';
import { load, tenantPayload } from '../../../bench/scale/load';
import { claimDuringTrim } from '../../../bench/scale/trim';

const EVENTS = Number(process.env.EVENTS ?? 1_000_000);

async function main(): Promise<void> {
  const prefix = `rheo-measure:${process.pid}`;
  const rheo = new Rheo(redisBackend({ url: URL, prefix }));
  try {
    await rheo.createStream('big', { partitions: 4 });
    const loaded = await load(rheo, 'big', EVENTS, { payloadOf: tenantPayload });
    await rheo.createGroup('big', 'g', { start: 'end' });
    const figures = await claimDuringTrim(rheo, 'big', 'g', Number(process.env.SAMPLES ?? 500));
    console.log(JSON.stringify({ events: EVENTS, loadMs: Math.round(loaded.ms), ...figures, partitions: undefined }));
  } finally {
    await rheo.close();
    await deleteKeys(prefix);
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
