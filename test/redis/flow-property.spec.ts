import { redisBackend } from '../../lib';
import { flowProperty } from '../support/flow-property';
import { CLUSTER_NODES, deleteClusterKeys, ensureCluster } from './cluster-support';
import { deleteKeys, freshPrefix, REDIS_URL } from './support';

// Flow limits under random fetches, settles, clock moves, skips, redrives and replays on
// Redis (test/support/flow-property.ts): the same property the memory backend holds to,
// on one server and on the local cluster.
const prefix = freshPrefix('flow-property');
const clusterPrefix = freshPrefix('flow-property-cluster');
let n = 0;

beforeAll(ensureCluster, 120_000);
afterAll(async () => {
  await deleteKeys(prefix);
  await deleteClusterKeys(clusterPrefix);
});

describe('property: flow limits (redis)', () => {
  flowProperty(
    (clock) => redisBackend({ url: REDIS_URL, prefix, clock }),
    () => `s${++n}`,
    500,
  );
});

describe('property: flow limits (redis cluster)', () => {
  flowProperty(
    (clock) => redisBackend({ cluster: CLUSTER_NODES, prefix: clusterPrefix, clock }),
    () => `s${++n}`,
    100,
  );
});
