import { redisBackend } from '../../lib';
import { runConformance } from '../../lib/backend';
import { deleteKeys, freshPrefix, REDIS_URL } from '../redis/support';

const prefix = freshPrefix('conformance');

runConformance({
  name: 'redis',
  create: async (clock) => redisBackend({ url: REDIS_URL, prefix, clock }),
  cleanup: async () => {
    await deleteKeys(prefix);
  },
  // Port 1 on loopback: nothing listens there.
  unreachable: () => redisBackend({ url: 'redis://127.0.0.1:1', prefix }),
});
