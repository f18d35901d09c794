// Compile-time only (not a spec: jest never runs it; `npm run typecheck` does): the
// hand-written ioredis Cluster shapes of lib/backends/redis/external.ts must accept
// the real ioredis types, so a user's cluster and options still type-check.
import { Cluster, type ClusterNode, type ClusterOptions } from 'ioredis';
import type { RedisCluster, RedisClusterConstructor, RedisClusterNode, RedisClusterOptions } from '../../lib/backends/redis/external';
import { redisBackend } from '../../lib';

declare const cluster: Cluster;
declare const options: ClusterOptions;
declare const node: ClusterNode;

export const asCluster: RedisCluster = cluster;
export const asOptions: RedisClusterOptions = options;
export const asNode: RedisClusterNode = node;
export const asConstructor: RedisClusterConstructor = Cluster;
export const viaCluster = () => redisBackend({ cluster, prefix: 'p' });
export const viaNodes = () =>
  redisBackend({
    cluster: ['127.0.0.1:7100', 7101, { host: '127.0.0.1', port: 7102 }],
    clusterOptions: { redisOptions: { password: 'x', tls: {} }, slotsRefreshInterval: 1000, scaleReads: 'master' },
  });
export const viaTypedOptions = () => redisBackend({ cluster: [node], clusterOptions: options });
