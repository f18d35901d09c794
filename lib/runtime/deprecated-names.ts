// The runtime consumer's names before it was called what it is: one process's
// member of a consumer group, not the group. Kept so code written against them
// still compiles and runs; they go in a later release (docs/upgrading.md).
import { Consumer } from './consumer';
import type { ConsumerBatchHandler, ConsumerHandler } from './consumer-types';

/** @deprecated Renamed {@link Consumer}: it is one process's consumer of a group. */
export const Group = Consumer;
/** @deprecated Renamed {@link Consumer}. */
export type Group = Consumer;
/** @deprecated Renamed {@link ConsumerHandler}. */
export type GroupHandler = ConsumerHandler;
/** @deprecated Renamed {@link ConsumerBatchHandler}. */
export type GroupBatchHandler = ConsumerBatchHandler;
