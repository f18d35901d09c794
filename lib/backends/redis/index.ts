export { RedisBackend, redisBackend } from './redis-backend';
export type { RedisBackendOptions } from './redis-backend';
