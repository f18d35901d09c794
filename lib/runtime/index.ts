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
  HandlerErrorEvent,
  RenewErrorEvent,
  LateSettleEvent,
  DeliveryControl,
} from './group-types';
export type { GroupRunOptions, ResolvedGroupOptions } from './options';
export { Trimmer, TRIM_JOB } from './trimmer';
export type { TrimmerEvents, TrimmerOptions, TrimRound } from './trimmer';
