// Compile-time only (not a spec: jest never runs it; `npm run typecheck` does): the
// hand-written ioredis shapes of lib/backends/redis/external.ts must accept the
// real ioredis types, so a user's client and options still type-check.
import Redis, { type ChainableCommander, type RedisOptions } from 'ioredis';
import type { RedisClient, RedisClientConstructor, RedisClientOptions, RedisPipeline } from '../../lib/backends/redis/external';
import { redisBackend } from '../../lib';

declare const client: Redis;
declare const options: RedisOptions;
declare const pipeline: ChainableCommander;

export const asClient: RedisClient = client;
export const asOptions: RedisClientOptions = options;
export const asPipeline: RedisPipeline = pipeline;
export const asConstructor: RedisClientConstructor = Redis;
export const viaOptions = () => redisBackend({ client, prefix: 'p' });
export const viaLiteral = () =>
  redisBackend({
    options: { host: '127.0.0.1', port: 6379, db: 2, tls: {}, protocol: 2, retryStrategy: () => 100, maxRetriesPerRequest: null },
  });
export const viaTypedOptions = () => redisBackend({ options });
