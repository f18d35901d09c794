import { Rheo, redisBackend } from '../../lib';
import { runMultiprocessSuite } from '../support/multiprocess-suite';
import { deleteKeys, freshPrefix, REDIS_URL } from './support';

// Each child has its own main and blocking connection.
const prefix = freshPrefix('mp');

runMultiprocessSuite({
  name: 'redis',
  backend: { name: 'redis', options: { url: REDIS_URL, prefix } },
  rheo: new Rheo(redisBackend({ url: REDIS_URL, prefix })),
  cleanup: () => deleteKeys(prefix),
});
