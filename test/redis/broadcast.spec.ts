import Redis from 'ioredis';
import { ManualClock, Rheo, redisBackend } from '../../lib';
import { escapeName } from '../../lib/backends/redis/keys';
import { raceLiveMember } from '../support/broadcast-race';
import { runBroadcastSuite } from '../support/broadcast-suite';
import { deleteKeys, freshPrefix, REDIS_URL } from './support';

// Each instance has its own main and blocking connection.
const prefix = freshPrefix('bc');

// First, so the suite's cleanup (registered below) deletes the keys after it.
describe('redis: a broadcast member that keeps beating never loses its group', () => {
  it('to collectors on their own connections, sweeping at every step', async () => {
    const clock = new ManualClock();
    const rheos = Array.from({ length: 4 }, () => new Rheo(redisBackend({ url: REDIS_URL, prefix, clock })));
    try {
      await rheos[0].createStream('bc-race');
      expect(new Set(await raceLiveMember(rheos, clock, 'bc-race'))).toEqual(new Set(['held']));
    } finally {
      for (const r of rheos) await r.close();
    }
  }, 120_000);
});

runBroadcastSuite({
  name: 'redis',
  backend: { name: 'redis', options: { url: REDIS_URL, prefix } },
  rheo: new Rheo(redisBackend({ url: REDIS_URL, prefix })),
  async leftovers(stream, group, job) {
    const admin = new Redis(REDIS_URL);
    try {
      // Every key of the group starts with this (keys.ts); the group set is one of the stream's keys.
      const base = `${prefix}:{${escapeName(stream)}}:g:${escapeName(group)}:`;
      let keys = 0;
      let cursor = '0';
      do {
        const [next, found] = await admin.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
        cursor = next;
        keys += found.filter((k) => k.startsWith(base)).length;
      } while (cursor !== '0');
      return {
        keys,
        inGroupSet: await admin.sismember(`${prefix}:{${escapeName(stream)}}:groups`, group),
        heartbeat: await admin.exists(`${prefix}:turn:${escapeName(job)}`),
      };
    } finally {
      admin.disconnect();
    }
  },
  cleanup: () => deleteKeys(prefix),
});
