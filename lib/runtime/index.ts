// The consumer runtime: no Nest, no backend specifics; built on the core facade.
export { Consumer } from './consumer';
export type {
  ConsumerHandler,
  ConsumerState,
  ConsumerStats,
  ConsumerEvents,
  DrainResult,
  SettledEvent,
  SettleErrorEvent,
  ClaimDeadLetterEvent,
  HandlerErrorEvent,
  RenewErrorEvent,
  LateSettleEvent,
  LateResultEvent,
  DeliveryControl,
  ConsumerBatchHandler,
  BatchControl,
  BatchRetryOptions,
} from './consumer-types';
export type { GroupRunOptions, ResolvedGroupOptions, BatchOptions, OnTimeout } from './options';
export { Trimmer, TRIM_JOB } from './trimmer';
export type { TrimmerEvents, TrimmerOptions, TrimRound } from './trimmer';
export { BroadcastMember, DEFAULT_BROADCAST_TTL_MS, MIN_BROADCAST_TTL_MS, BROADCAST_SUFFIX_LENGTH } from './broadcast';
export type { BroadcastOptions, BroadcastEvents, BeatResult } from './broadcast';
export { BroadcastMemberships } from './broadcast-memberships';
export type { BroadcastJoin, BroadcastJoined, MembershipLogger } from './broadcast-memberships';
