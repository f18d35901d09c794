export { RedisBackend, redisBackend } from './redis-backend';
export type { RedisBackendOptions, RedisDurability } from './redis-backend';
export type { RedisClient, RedisClientOptions, RedisCluster, RedisClusterNode, RedisClusterOptions } from './external';
