// Public API of nestjs-rheo. Everything a user may import is exported here, and
// nothing here loads a driver: backends that need one load it when constructed.
export { RheoError, isRheoError, RHEO_ERROR_CODES } from './core/errors';
export type { RheoErrorCode, RheoErrorOptions } from './core/errors';
export { CLOCK_SKEW_WARN_MS, ManualClock, StoreClock, storeClock, systemClock } from './core/clock';
export type { Clock, StoreClockOptions, StoreTimeReader } from './core/clock';
export { partitionForKey, murmur3 } from './core/partitioner';
export { backoffDelay, DEFAULT_RETRY } from './core/backoff';
export { classifySettleError } from './core/settle';
export type { SettleFailure } from './core/settle';
export { RheoReject, RheoRetry, outcomeOfError } from './core/outcomes';
export type { Outcome, RheoRetryOptions } from './core/outcomes';
export { Rheo } from './core/rheo';
// Diagnostics channels (node:diagnostics_channel): their names and message types, for subscribers.
export { CHANNELS, TRACED_OPERATIONS } from './core/diagnostics';
export type {
  TracedOperation,
  OperationMessage,
  LeaseMessage,
  DeliveryMessage,
  DeadLetterMessage,
  SettleOutcome,
  SettleMessage,
  FrontierMessage,
  ConsumerMessage,
  FetchErrorMessage,
  HandlerErrorMessage,
  LeaseLostMessage,
  RenewErrorMessage,
  ProcessMessage,
  ClockSkewMessage,
} from './core/diagnostics';
export type { RheoOptions, FetchOptions, NackOptions, RejectOptions, SettleRequest } from './core/rheo';
export type { MetricsGroups, MetricsRegistry, RheoMetricsOptions } from './nest/metrics/options';
export {
  MAX_NAME_LENGTH,
  DEFAULT_MAX_PAYLOAD_BYTES,
  DEFAULT_MAX_METADATA_BYTES,
  DEFAULT_MAX_BATCH_BYTES,
  MAX_FILTER_KEYS,
  MAX_FILTER_DEPTH,
  MAX_FILTER_BYTES,
  MAX_PARTITIONS,
  MAX_BATCH,
  MAX_FETCH_LIMIT,
  MAX_PAGE_LIMIT,
  MAX_REASON_LENGTH,
  MAX_DELAY_MS,
  DEFAULT_LEASE_MS,
  DEFAULT_FETCH_LIMIT,
  DEFAULT_MAX_ATTEMPTS,
  DEFAULT_DRAIN_TIMEOUT_MS,
} from './core/limits';
export type * from './core/types';

export { createCapabilities } from './backends/capabilities';
export type { Capabilities, CapabilitiesInput, Guarantees, Mechanisms } from './backends/capabilities';
export type * from './backends/backend';
export { MemoryBackend, memoryBackend } from './backends/memory';
export type { MemoryBackendOptions } from './backends/memory';

export * from './runtime';

// The admin service behind the `rheo` CLI and the dashboard, and its JSON-ready results.
export { RheoAdmin, backendFromUrl } from './admin';
export type * from './admin';

// NestJS integration (module, transport, @RheoConsumer, context, client, health).
export * from './nest';
export { RedisBackend, redisBackend } from './backends/redis';
export type { RedisBackendOptions, RedisDurability, RedisCluster, RedisClusterNode, RedisClusterOptions } from './backends/redis';
export { PostgresBackend, postgresBackend } from './backends/postgres';
export type { PostgresBackendOptions } from './backends/postgres';
export { SqliteBackend, sqliteBackend } from './backends/sqlite';
export type { SqliteBackendOptions } from './backends/sqlite';
export { typeormBackend, rheoMigrations, rheoEntities } from './backends/sql';
export type { TypeormBackendOptions, InstallMode, RheoMigrationsOptions, RheoEntitiesOptions } from './backends/sql';
