import Redis from 'ioredis';
import { Rheo, redisBackend } from '../../lib';
import { escapeName } from '../../lib/backends/redis/keys';
import { runBroadcastSuite } from '../support/broadcast-suite';
import { deleteKeys, freshPrefix, REDIS_URL } from './support';

// Each instance has its own main and blocking connection.
const prefix = freshPrefix('bc');

runBroadcastSuite({
  name: 'redis',
  backend: { name: 'redis', options: { url: REDIS_URL, prefix } },
  rheo: new Rheo(redisBackend({ url: REDIS_URL, prefix })),
  racer: (clock) => new Rheo(redisBackend({ url: REDIS_URL, prefix, clock })),
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
