export { RedisBackend, redisBackend } from './redis-backend';
export type { RedisBackendOptions } from './redis-backend';
export type { RedisClient, RedisClientOptions } from './external';
