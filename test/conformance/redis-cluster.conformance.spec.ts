import { redisBackend } from '../../lib';
import { RedisBackend } from '../../lib/backends/redis/redis-backend';
import { runConformance } from '../../lib/backend';
import { keySlot } from '../../lib/backends/redis/cluster';
import { checkOptions } from '../../lib/backends/redis/options';
import { StreamKeys } from '../../lib/backends/redis/keys';
import type { Retention, StreamInfo } from '../../lib/core/types';
import { CLUSTER_NODES, deleteClusterKeys, ensureCluster, masterOf, masters } from '../redis/cluster-support';
import { freshPrefix } from '../redis/support';

// The whole conformance suite on the local Redis Cluster (3 masters, 3 replicas), which
// this file starts when it is not up (scripts/redis-cluster.sh, as .ci/run does).
beforeAll(ensureCluster, 120_000);

const prefix = freshPrefix('cluster-conformance');
/** Every stream the suite created: their slots are checked afterwards. */
const created = new Set<string>();

class RecordingBackend extends RedisBackend {
  override async createStream(stream: string, partitions: number, retention?: Retention): Promise<StreamInfo> {
    created.add(stream);
    return super.createStream(stream, partitions, retention);
  }
}

runConformance({
  name: 'redis cluster',
  create: async (clock) => new RecordingBackend(checkOptions({ cluster: CLUSTER_NODES, prefix, clock })),
  cleanup: async () => {
    await deleteClusterKeys(prefix);
  },
  // Port 1 on loopback: no node listens there.
  unreachable: () => redisBackend({ cluster: [{ host: '127.0.0.1', port: 1 }], prefix }),
});

describe('conformance on the cluster: where the streams were', () => {
  it('spread the suite streams over all three masters', async () => {
    const all = await masters();
    expect(all).toHaveLength(3);
    const perMaster = new Map<string, number>(all.map((m) => [m.id, 0]));
    for (const stream of created) {
      const slot = keySlot(new StreamKeys(prefix, stream).meta);
      const m = masterOf(all, slot);
      perMaster.set(m.id, perMaster.get(m.id)! + 1);
    }
    expect(created.size).toBeGreaterThan(30);
    for (const [, n] of perMaster) expect(n).toBeGreaterThan(0);
  });
});
