// Pausing a group across processes on Redis: the shared suite (test/support/pause-suite.ts).
// The pause is kept as fields of the group's cfg hash: all of them, or none.
import Redis from 'ioredis';
import { Rheo, redisBackend } from '../../lib';
import { STORED_PAUSE_FIELDS } from '../../lib/backends/redis/group-config';
import { StreamKeys } from '../../lib/backends/redis/keys';
import { runPauseSuite } from '../support/pause-suite';
import { deleteKeys, freshPrefix, REDIS_URL } from './support';

// Each child has its own main and blocking connection.
const prefix = freshPrefix('pause');
const FIELDS = Object.values(STORED_PAUSE_FIELDS);

runPauseSuite({
  name: 'redis',
  backend: { name: 'redis', options: { url: REDIS_URL, prefix } },
  rheo: new Rheo(redisBackend({ url: REDIS_URL, prefix })),
  async storedPause(stream, group) {
    const admin = new Redis(REDIS_URL);
    try {
      const values = await admin.hmget(new StreamKeys(prefix, stream).group(group).cfg, ...FIELDS);
      return values.map((v) => (v === null ? 'not paused' : 'paused'));
    } finally {
      admin.disconnect();
    }
  },
  cleanup: () => deleteKeys(prefix),
});
