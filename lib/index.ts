// Public API of nestjs-rheo: the names a user writes, each exported by name (ADR 042).
// A type reachable only as a part of an exported one (an option's field, a listener's
// argument) is not exported; internals are imported from their own files, never from
// here; what only a backend author writes is in `nestjs-rheo/backend`. Nothing here
// loads a driver: backends that need one load it when constructed.
// test/unit/exports.spec.ts pins these lists: a change to them is deliberate.

// The Nest module, for AppModule: forRoot / forRootAsync and their options.
export { RheoModule } from './nest/rheo.module';
export type { RheoModuleOptions, RheoModuleAsyncOptions } from './nest/rheo-module-options';
// For consumer classes: the decorators, what @Ctx() gives, and the lifecycle events.
export { RheoConsumer } from './nest/rheo-consumer.decorator';
export type { RheoConsumerOptions } from './nest/consumer-options';
export { RheoContext, RheoBatchContext } from './nest/rheo-context';
export { OnRheoEvent } from './nest/on-rheo-event.decorator';
export type { RheoEventMap } from './nest/rheo-events';
// For services: the client and the transport, injected by class or, for a named instance, by decorator or token.
export { RheoClient } from './nest/rheo-client';
export { RheoServer } from './nest/rheo-server';
export { InjectRheo, InjectRheoClient, InjectRheoServer, InjectRheoHealthIndicator } from './nest/inject.decorators';
export { getRheoToken, getRheoClientToken, getRheoServerToken, getRheoHealthIndicatorToken } from './nest/constants';
// For the HTTP side of an app: health, the exception filter, the dashboard, the metrics option.
export { RheoHealthIndicator, type RheoHealthOptions } from './nest/rheo-health.indicator';
export { RheoHttpExceptionFilter, RHEO_ERROR_HTTP_STATUS, type RheoHttpErrorBody } from './nest/rheo-http-exception.filter';
export { RheoDashboardModule, type RheoDashboardOptions } from './nest/dashboard';
export type { RheoMetricsOptions, MetricsRegistry } from './nest/metrics/options';

// For choosing a store: the backend factories and their options.
export type { Backend } from './backends/backend';
export { memoryBackend, type MemoryBackendOptions } from './backends/memory';
export { postgresBackend, type PostgresBackendOptions } from './backends/postgres';
export { sqliteBackend, type SqliteBackendOptions } from './backends/sqlite';
export { redisBackend, type RedisBackendOptions } from './backends/redis';
export {
  typeormBackend,
  rheoMigrations,
  rheoEntities,
  type TypeormBackendOptions,
  type RheoMigrationsOptions,
  type RheoEntitiesOptions,
} from './backends/sql';

// For code that talks to the log without Nest, or reads what it returns: the facade and its vocabulary.
export { Rheo, type RheoOptions, type FetchOptions, type NackOptions, type RejectOptions, type SettleRequest } from './core/rheo';
export type {
  JsonValue,
  RheoEvent,
  AppendInput,
  AppendOptions,
  StreamInfo,
  TrimOptions,
  TrimResult,
  PurgeDeadLettersOptions,
  GroupOptions,
  GroupChanges,
  GroupConfig,
  FlowLimits,
  RateLimit,
  Lease,
  Lag,
  GroupInfo,
  DeadLetter,
  Page,
  Query,
  ReplayOptions,
  ResetOptions,
  DeleteGroupOptions,
  RedriveOptions,
  GroupPause,
  PauseGroupOptions,
  GroupSkips,
  SkipOptions,
  RescheduleOptions,
  CancelDelayedOptions,
} from './core/types';
// For handlers and callers: the errors they catch and the outcomes they throw or return.
export { RheoError, isRheoError, type RheoErrorCode } from './core/errors';
export { RheoReject, RheoRetry, type RheoRetryOptions, type Outcome } from './core/outcomes';
// For tests and for stores with their own time: the clocks a user passes as `clock`.
export { ManualClock, storeClock, type Clock, type StoreClockOptions } from './core/clock';
// For consumers outside Nest: the runtime Consumer and the handlers it runs, and their former names (deprecated).
export {
  Consumer,
  type GroupRunOptions,
  type ConsumerHandler,
  type ConsumerBatchHandler,
  type DeliveryControl,
  type BatchControl,
} from './runtime';
export { Group, type GroupHandler, type GroupBatchHandler } from './runtime/deprecated-names';

// For operators' scripts: the admin service behind the `rheo` CLI and the dashboard, and its JSON-ready results.
export { RheoAdmin, type RheoAdminOptions } from './admin/rheo-admin';
export { backendFromUrl, type BackendFromUrlOptions } from './admin/backend-from-url';
export type { Overview, StreamSummary, GroupSummary, DeadLetterSummary, EventSummary, DeadLetterPage } from './admin/types';

// For subscribers to node:diagnostics_channel: the channel names and their message types (docs/observability.md).
export {
  CHANNELS,
  TRACED_OPERATIONS,
  type OperationMessage,
  type ProcessMessage,
  type LeaseMessage,
  type DeliveryMessage,
  type SettleMessage,
  type DeadLetterMessage,
  type FrontierMessage,
  type ConsumerMessage,
  type FetchErrorMessage,
  type HandlerErrorMessage,
  type LeaseLostMessage,
  type RenewErrorMessage,
  type ClockSkewMessage,
  type GroupPauseMessage,
  type FlowHeldMessage,
} from './core/diagnostics';
