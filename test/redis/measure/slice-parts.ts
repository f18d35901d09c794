// Where a trim slice's server time goes: XRANGE of the slice read into Lua, the id
// index HMGET/HDEL, XTRIM, per slice size (SLOWLOG durations, every call logged).
// Run: npx ts-node --transpile-only test/redis/measure/slice-parts.ts
import Redis from 'ioredis';
import { Rheo, redisBackend } from '../../../lib';
import { deleteKeys, REDIS_URL as URL } from '../support';
import { load, tenantPayload } from '../../../bench/scale/load';

const READ = `local e = redis.call('XRANGE', KEYS[1], ARGV[1], ARGV[2]) return #e`;
const IDS = `local e = redis.call('XRANGE', KEYS[1], ARGV[1], ARGV[2])
local ids = {}
for i, en in ipairs(e) do ids[i] = en[2][2] end
local cur = redis.call('HMGET', KEYS[2], unpack(ids))
return #cur`;

async function main(): Promise<void> {
  const prefix = `rheo-measure:${process.pid}`;
  const rheo = new Rheo(redisBackend({ url: URL, prefix }));
  const admin = new Redis(URL);
  try {
    await rheo.createStream('s');
    await load(rheo, 's', 100_000, { payloadOf: tenantPayload });
    const log = `${prefix}:{s}:log:0`;
    const ids = `${prefix}:{s}:ids`;
    await admin.config('SET', 'slowlog-log-slower-than', '0');
    for (const size of [50, 100, 200]) {
      const times: Record<string, number[]> = { read: [], ids: [] };
      for (let i = 0; i < 200; i++) {
        const lo = 1 + ((i * size) % 90_000);
        await admin.slowlog('RESET');
        await admin.eval(READ, 1, log, `0-${lo}`, `0-${lo + size - 1}`);
        await admin.eval(IDS, 2, log, ids, `0-${lo}`, `0-${lo + size - 1}`);
        const entries = (await admin.slowlog('GET', 10)) as Array<[number, number, number, string[]]>;
        for (const [, , us, args] of entries) {
          if (args[0] === 'eval' || args[0] === 'EVAL') times[args[1] === READ ? 'read' : 'ids'].push(us);
        }
      }
      const med = (v: number[]) => v.sort((a, b) => a - b)[Math.floor(v.length / 2)];
      console.log(JSON.stringify({ size, readUs: med(times.read), readAndIdsUs: med(times.ids) }));
    }
  } finally {
    await admin.config('SET', 'slowlog-log-slower-than', '10000');
    await rheo.close();
    await deleteKeys(prefix);
    admin.disconnect();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
