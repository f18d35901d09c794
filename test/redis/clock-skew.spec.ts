import { Rheo, redisBackend } from '../../lib';
import { runClockSkewSuite } from '../support/clock-skew-suite';
import { deleteKeys, freshPrefix, REDIS_URL } from './support';

// The children build their backend with its default clock: the store's time.
const prefix = freshPrefix('skew');

runClockSkewSuite({
  name: 'redis',
  backend: { name: 'redis', options: { url: REDIS_URL, prefix } },
  rheo: new Rheo(redisBackend({ url: REDIS_URL, prefix })),
  cleanup: () => deleteKeys(prefix),
});
