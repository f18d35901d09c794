// Server-side duration of every trim and purge script call (SLOWLOG, every call
// logged while this runs; the previous settings are restored): a trim of EVENTS
// (default 200,000) events of one partition, and purges of DEAD (default 100,000)
// dead letters by time (half of them) and then all.
// Run: npx ts-node --transpile-only test/redis/measure/script-durations.ts
import { createHash } from 'node:crypto';
import Redis from 'ioredis';
import { ManualClock, Rheo, redisBackend } from '../../../lib';
import { deleteKeys, REDIS_URL as URL } from '../support';
import { SCRIPTS } from '../../../lib/backends/redis/scripts';
import { load, tenantPayload } from '../../../bench/scale/load';

const EVENTS = Number(process.env.EVENTS ?? 200_000);
const DEAD = Number(process.env.DEAD ?? 100_000);
const NAME_OF = new Map(Object.entries(SCRIPTS).map(([name, lua]) => [createHash('sha1').update(lua).digest('hex'), name]));

async function main(): Promise<void> {
  const prefix = `rheo-measure:${process.pid}`;
  const clock = new ManualClock(Date.UTC(2026, 0, 1));
  const rheo = new Rheo(redisBackend({ url: URL, prefix, clock }));
  const admin = new Redis(URL);
  const [, threshold] = (await admin.config('GET', 'slowlog-log-slower-than')) as string[];
  const [, maxLen] = (await admin.config('GET', 'slowlog-max-len')) as string[];
  /** Per script of ours, the durations of the calls logged since the last reset, µs. */
  const logged = async (): Promise<Record<string, { calls: number; p50: number; p99: number; max: number }>> => {
    const entries = (await admin.slowlog('GET', -1)) as Array<[number, number, number, string[]]>;
    const by: Record<string, number[]> = {};
    for (const [, , micros, args] of entries) {
      const name = NAME_OF.get(String(args[1]));
      if (/^EVALSHA$/i.test(String(args[0])) && name && args.some((a) => String(a).startsWith(prefix)))
        (by[name] ??= []).push(Number(micros));
    }
    const out: Record<string, { calls: number; p50: number; p99: number; max: number }> = {};
    for (const [name, v] of Object.entries(by)) {
      v.sort((a, b) => a - b);
      out[name] = {
        calls: v.length,
        p50: v[Math.floor(v.length / 2)],
        p99: v[Math.min(v.length - 1, Math.floor(v.length * 0.99))],
        max: v[v.length - 1],
      };
    }
    await admin.slowlog('RESET');
    return out;
  };
  try {
    await rheo.createStream('s');
    await load(rheo, 's', EVENTS, { payloadOf: tenantPayload });
    await rheo.createGroup('s', 'g', { start: 'end' });
    await admin.config('SET', 'slowlog-max-len', '1000000');
    await admin.config('SET', 'slowlog-log-slower-than', '0');
    await admin.slowlog('RESET');
    await rheo.setRetention('s', { maxEvents: 100 });
    const trimmed = await rheo.trim('s');
    console.log(JSON.stringify({ trimmed: trimmed.removed, scriptsMicros: await logged() }));

    await admin.config('SET', 'slowlog-log-slower-than', String(threshold));
    await load(rheo, 's', DEAD, { payloadOf: tenantPayload });
    const t0 = clock.now();
    for (let i = 0; ; i++) {
      const leases = await rheo.fetch('s', 'g', { limit: 1000, leaseMs: 600_000 });
      if (leases.length === 0) break;
      clock.set(t0 + i);
      await rheo.settleMany(leases.map((lease) => ({ kind: 'reject' as const, lease, reason: 'measure' })));
    }
    await admin.config('SET', 'slowlog-log-slower-than', '0');
    await admin.slowlog('RESET');
    const before = await rheo.purgeDeadLetters('s', 'g', { before: new Date(t0 + Math.floor(DEAD / 2000)) });
    const byTime = await logged();
    const all = await rheo.purgeDeadLetters('s', 'g', { all: true });
    console.log(JSON.stringify({ purgedByTime: before, byTimeMicros: byTime, purgedAll: all, allMicros: await logged() }));
  } finally {
    await admin.config('SET', 'slowlog-log-slower-than', String(threshold));
    await admin.config('SET', 'slowlog-max-len', String(maxLen));
    await rheo.close();
    await deleteKeys(prefix);
    admin.disconnect();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
