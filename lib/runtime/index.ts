// The consumer runtime: no Nest, no backend specifics; built on the core facade.
export { Group } from './group';
export type {
  GroupHandler,
  GroupState,
  GroupStats,
  GroupEvents,
  DrainResult,
  SettledEvent,
  SettleErrorEvent,
  ClaimDeadLetterEvent,
  HandlerErrorEvent,
  RenewErrorEvent,
  LateSettleEvent,
  LateResultEvent,
  DeliveryControl,
  GroupBatchHandler,
  BatchControl,
  BatchRetryOptions,
} from './group-types';
export type { GroupRunOptions, ResolvedGroupOptions, BatchOptions, OnTimeout } from './options';
export { Trimmer, TRIM_JOB } from './trimmer';
export type { TrimmerEvents, TrimmerOptions, TrimRound } from './trimmer';
export { BroadcastMember, DEFAULT_BROADCAST_TTL_MS, MIN_BROADCAST_TTL_MS, BROADCAST_SUFFIX_LENGTH } from './broadcast';
export type { BroadcastOptions, BroadcastEvents, BeatResult } from './broadcast';
