// Flow control across processes on Redis: the shared suite (test/support/flow-suite.ts).
// The checker's rows go to keys of their own under the test's prefix, written by the
// children over connections of their own.
import { Rheo, redisBackend } from '../../lib';
import { runFlowSuite } from '../support/flow-suite';
import { deleteKeys, freshPrefix, REDIS_URL } from './support';

const prefix = freshPrefix('flow');

runFlowSuite({
  name: 'redis',
  // Each child has its own main and blocking connection.
  processes: { kind: 'fork', backend: { name: 'redis', options: { url: REDIS_URL, prefix } } },
  rheo: new Rheo(redisBackend({ url: REDIS_URL, prefix })),
  log: (scenario) => ({ kind: 'redis', url: REDIS_URL, key: `${prefix}:flow-checker:${scenario}` }),
  cleanup: () => deleteKeys(prefix),
});
