export { RedisBackend, redisBackend } from './redis-backend';
export type { RedisBackendOptions, RedisDurability } from './options';
export type { RedisClient, RedisClientOptions, RedisCluster, RedisClusterNode, RedisClusterOptions } from './external';
