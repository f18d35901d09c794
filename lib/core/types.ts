/** Any JSON value: what a payload or a metadata value may be. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/**
 * Event metadata. The named keys are lineage conventions; free keys are allowed.
 * Values must be JSON.
 */
export interface EventMetadata {
  correlationId?: string;
  causationId?: string;
  traceparent?: string;
  source?: string;
  schemaVersion?: number | string;
  [key: string]: JsonValue | undefined;
}

/** An immutable, stored event. */
export interface RheoEvent<P = JsonValue> {
  /** Unique in its stream; the idempotency key (caller-supplied or generated). */
  id: string;
  stream: string;
  partition: number;
  /** Per (stream, partition), from 1, contiguous. */
  sequence: number;
  timestamp: Date;
  key: string | null;
  type: string | null;
  metadata: EventMetadata;
  payload: P;
  /**
   * Set only on a delayed event (appended with `deliverAt` or `delayMs`): no group
   * is offered it before this time, by the backend's clock.
   */
  deliverAt?: Date;
}

/** What a caller appends. */
export interface AppendInput<P = JsonValue> {
  /** Supplying an id makes the append idempotent: the same id in the same stream returns the stored event. */
  id?: string;
  /** Routes to a partition through the partitioner. */
  key?: string;
  type?: string;
  /** Plain JSON values, at most `maxMetadataBytes` of JSON (64 KiB by default). */
  metadata?: EventMetadata;
  /**
   * Stored as what `JSON.stringify` makes of it, when that is faithful: a class
   * instance by its own enumerable properties, `toJSON` honoured (a `Date` becomes
   * its ISO string), `undefined` properties left out; BigInt, NaN, ±Infinity,
   * functions, symbols, cycles and lone surrogates are refused
   * (docs/payloads-and-limits.md). The appended event carries the stored form.
   */
  payload: P;
  /** Overrides key routing. */
  partition?: number;
  /** Defaults to the clock's now. */
  timestamp?: Date;
  /**
   * Delay the event: no group is offered it before this time (by the backend's
   * clock). It keeps its place in the log: lag counts it, a group with
   * `ordering: 'partition'` holds the later events of its partition until it is
   * settled, and a group without ordering gets them meanwhile. At most one of
   * `deliverAt` and `delayMs`; at most a year (`MAX_DELAY_MS`) after now.
   */
  deliverAt?: Date;
  /** Delay the event by this many ms from now (the backend's clock): `deliverAt` = now + `delayMs`. An integer from 0 to a year (`MAX_DELAY_MS`). */
  delayMs?: number;
}

/** Options of append and appendBatch. */
export interface AppendOptions {
  /**
   * A TypeORM `EntityManager` of a running transaction: the event is written in
   * that transaction (outbox). Only backends that declare `transactionalAppend`.
   */
  manager?: unknown;
}

/**
 * How long a stream keeps its events, and its groups their dead letters. Each
 * limit is optional; an event goes when it breaks any limit it has AND every
 * group has finished it (at or below each group's frontier), unless a trim is
 * forced. See docs/adr/017-retention-and-trim.md.
 */
export interface Retention {
  /** Events whose timestamp is older than this, ms, may be trimmed. */
  maxAgeMs?: number;
  /** Each partition keeps at most this many of its latest events; older ones may be trimmed. */
  maxEvents?: number;
  /** Dead letters older than this (by when they were dead-lettered), ms, are purged by the background trim. */
  deadLetterMaxAgeMs?: number;
}

/** A stream's registration. */
export interface StreamInfo {
  name: string;
  partitions: number;
  createdAt: Date;
  /** The stream's retention; absent when it keeps everything. */
  retention?: Retention;
}

/** Options of `trim`. */
export interface TrimOptions {
  /**
   * Trim to the retention point even past groups that have not finished: their
   * frontiers move to the trim point, their leases there go stale, and the
   * result says how many events each group skipped (Kafka's rule, made explicit).
   */
  force?: boolean;
}

/** What one trim did. */
export interface TrimResult {
  stream: string;
  /** Events this call deleted (0 when there was nothing to trim). */
  removed: number;
  /** Per partition, the trim point: every event at or below `trimmedTo` is gone. */
  partitions: Array<{ partition: number; trimmedTo: number }>;
  /**
   * Per group of the stream, the events it had not finished that the trim removed:
   * always 0 unless `force`.
   */
  skipped: Record<string, number>;
}

/** Which dead letters to purge: those dead-lettered before a time, or all. */
export type PurgeDeadLettersOptions = { before: Date } | { all: true };

/** Where a new (or reset) group starts reading, per partition. */
export type StartPosition = 'beginning' | 'end' | { afterSequence: number | Record<number, number> } | { at: Date };

/** How nack without an explicit delay spaces redeliveries. */
export interface RetryBackoff {
  /** Delay before the second attempt, ms. Default 1000. */
  initialMs?: number;
  /** Growth factor per attempt. Default 2. */
  factor?: number;
  /** Upper bound, ms. Default 60000. */
  maxMs?: number;
}

/**
 * Delivery order a group guarantees. `'partition'`: one delivery at a time per
 * partition; `'key'`: one delivery at a time per key, in sequence order, while
 * other keys of the same partition run (docs/adr/049-flow-control.md).
 */
export type Ordering = 'none' | 'partition' | 'key';

/**
 * At most `max` deliveries started per `perMs` window, across every process of
 * the group: in any span of `perMs` ms (by the store's clock) no more than `max`
 * claims of the group's deliveries.
 */
export interface RateLimit {
  /** Deliveries started per window, 1..100,000. */
  max: number;
  /** The window, ms, 1..86,400,000 (a day). */
  perMs: number;
}

/**
 * A group's flow limits, enforced by the store across every process
 * (docs/adr/049-flow-control.md). Each is null when the group has none.
 */
export interface FlowLimits {
  /**
   * At most this many deliveries of one key in flight or waiting for a retry at
   * once, across the group; a key's later events wait, in order, for a place.
   * Events without a key are not limited. Not with an `ordering`.
   */
  keyConcurrency: number | null;
  /** At most this many deliveries of the group in flight at once, across every process. */
  groupConcurrency: number | null;
  /** At most `max` deliveries started per `perMs` window, across every process. */
  rateLimit: RateLimit | null;
}

/** Options of createGroup. */
export interface GroupOptions {
  start?: StartPosition;
  /** Deliveries per event before it is dead-lettered. Default 5. */
  maxAttempts?: number;
  retry?: RetryBackoff;
  /**
   * `'partition'`: at most one outstanding lease per partition across every
   * process of the group, so each key's events are handled strictly in order.
   * `'key'`: at most one per key, in sequence order; keys of one partition run
   * concurrently, and events without a key are unordered.
   */
  ordering?: Ordering;
  /** See {@link FlowLimits.keyConcurrency}: 1..10,000. */
  keyConcurrency?: number;
  /** See {@link FlowLimits.groupConcurrency}: 1..100,000. */
  groupConcurrency?: number;
  /** See {@link FlowLimits.rateLimit}. */
  rateLimit?: RateLimit;
  /** Return the existing group instead of failing with `already_exists`. */
  ifNotExists?: boolean;
}

/** A group's stored configuration. */
export interface GroupConfig extends FlowLimits {
  stream: string;
  group: string;
  maxAttempts: number;
  retry: Required<RetryBackoff>;
  ordering: Ordering;
  createdAt: Date;
}

/** A claim on one event for one group. */
export interface Lease<P = JsonValue> {
  /** Fencing token, new on every fetch. */
  leaseId: string;
  /** Backend-native id of the delivery (the stream entry id on Redis; the lease id elsewhere). */
  receipt: string;
  stream: string;
  group: string;
  consumerId: string;
  /** 1 on first delivery. */
  attempt: number;
  leasedAt: Date;
  expiresAt: Date;
  event: RheoEvent<P>;
}

/** Per-partition lag figures. */
export interface PartitionLag {
  partition: number;
  /** Highest sequence up to which every event is terminal for the group. */
  frontier: number;
  /** Last appended sequence. */
  highWatermark: number;
  lag: number;
}

/** How far a group is behind its stream. */
export interface Lag {
  stream: string;
  group: string;
  /** Sum over partitions. */
  lag: number;
  partitions: PartitionLag[];
}

/** A group's health figures. */
export interface GroupInfo {
  stream: string;
  group: string;
  lag: Lag;
  /** Events currently leased (live leases). */
  inflight: number;
  deadLetters: number;
  /** Age of the oldest event that is not yet terminal for the group, or null when none. */
  oldestUnsettledAgeMs: number | null;
  config: GroupConfig;
  /**
   * The group's pause, as the store holds it now (`pauseGroup`), or null when no
   * process is held back: never paused, resumed, or past its `until`.
   */
  paused: GroupPause | null;
  /** The deliveries an operator skipped (`skip`, `cancelDelayed`): how many, and the last one's reason and time. */
  skipped: GroupSkips;
  /**
   * Deliveries waiting for their key (`ordering: 'key'`, `keyConcurrency`): events
   * the group has reached whose key is busy. 0 for a group without key limits.
   */
  waitingForKey: number;
  /**
   * Conditions of the store that put the group's data at risk, in words an
   * operator can act on (a Redis server that can lose acknowledged writes or
   * evict keys, say), and this process's clock when it is far from the store's
   * (ADR 041). Absent or empty when there are none.
   */
  warnings?: string[];
}

/** A dead-lettered event of a group. */
export interface DeadLetter<P = JsonValue> {
  stream: string;
  group: string;
  eventId: string;
  partition: number;
  sequence: number;
  reason: string;
  attempt: number;
  deadLetteredAt: Date;
  event: RheoEvent<P> | null;
}

/** One page of results. `nextCursor` is null on the last page. */
export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

/** Equality filters of a query. All given filters must match. */
export interface QueryWhere {
  type?: string;
  key?: string;
  partition?: number;
  /** Equality on metadata fields (top level). */
  metadata?: Record<string, JsonValue>;
  /** Equality on payload fields (top level). */
  payload?: Record<string, JsonValue>;
}

/**
 * A portable query over one stream. Results are ordered by (sequence, partition),
 * ascending unless `order: 'desc'`; pages never skip or repeat.
 */
export interface Query {
  stream: string;
  where?: QueryWhere;
  /** Inclusive timestamp bounds. */
  from?: Date;
  to?: Date;
  /** Exclusive lower sequence bound. */
  afterSequence?: number;
  /** Inclusive upper sequence bound. */
  untilSequence?: number;
  order?: 'asc' | 'desc';
  /** Page size, 1..1000; default 100. */
  limit?: number;
  cursor?: string;
}

/**
 * What replay re-opens: exactly one of these. `afterSequence` is exclusive (as in
 * start positions and queries): `{ afterSequence: 0 }` re-opens every event,
 * `{ afterSequence: 41 }` re-opens 42 onwards. `from` re-opens events at or after
 * a time; `query` re-opens exactly the matching events.
 */
export type ReplayOptions =
  | { afterSequence: number; partitions?: number[] }
  | { from: Date; partitions?: number[] }
  | { query: Omit<Query, 'stream' | 'cursor' | 'limit' | 'order'> };

/** Options of reset. */
export interface ResetOptions {
  /** Must be true: reset forgets every delivery of the group. */
  confirm: boolean;
  start?: StartPosition;
}

/** Options of `Rheo#deleteGroup`. */
export interface DeleteGroupOptions {
  /** Must be true: the group's deliveries, leases and dead letters go with it. */
  confirm: boolean;
}

/** Which dead letters to redrive. */
export type RedriveOptions = { eventIds: string[] } | { all: true };

// ------------------------------------------------------------------ updateGroup

/**
 * What `Rheo#updateGroup` may change of a stored group (docs/adr/047-changing-a-group-in-place.md).
 * Each field left out keeps its stored value; `retry` fields left out keep theirs.
 * `ordering` and `start` are refused: a start means nothing once the group exists,
 * and ordering cannot change under deliveries that are already in flight.
 */
export interface GroupChanges {
  /** Deliveries per event before it is dead-lettered, judged at the next failure of each delivery. */
  maxAttempts?: number;
  /** The backoff of retries scheduled from now on; retries already scheduled keep their due time. */
  retry?: RetryBackoff;
  /** A new limit for a group that has one (it cannot be added or removed in place); judged at the next claim. */
  keyConcurrency?: number;
  /** A new limit, or null to remove it; judged at the next claim. */
  groupConcurrency?: number | null;
  /** A new limit, or null to remove it; the starts already counted stay in the window. */
  rateLimit?: RateLimit | null;
}

/**
 * A group's pause (`Rheo#pauseGroup`, docs/adr/046-pausing-a-group.md): while it
 * holds, no process claims a delivery of the group; leases already held renew and
 * settle as usual, appends go on and lag grows.
 */
export interface GroupPause {
  /** When the pause was set, by the store's clock. */
  pausedAt: Date;
  /** When the group resumes by itself (the store's clock decides), or null: until `resumeGroup`. */
  until: Date | null;
  /** Why, in the operator's words, or null. */
  reason: string | null;
  /** Who paused it, as given, or null. */
  by: string | null;
}

/** The options of `Rheo#pauseGroup`. */
export interface PauseGroupOptions {
  /** Resume by itself at this time (after now, at most a year ahead); absent: until `resumeGroup`. */
  until?: Date;
  /** Why, shown in groupInfo, the CLI and the dashboard (at most 1,000 characters). */
  reason?: string;
  /** Who, shown beside the reason (at most 256 characters). */
  by?: string;
}

/**
 * The skips of a group (docs/adr/048-skip-reschedule-cancel.md): deliveries settled
 * as handled without running the handler, by `skip` or `cancelDelayed`.
 */
export interface GroupSkips {
  /** How many deliveries were skipped since the group was created (a reset keeps it). */
  count: number;
  /** The last skip's reason as given, or null (none given, or nothing skipped yet). */
  lastReason: string | null;
  /** When the last skip was made, by the store's clock, or null when nothing was skipped. */
  lastAt: Date | null;
}

/** The options of `Rheo#skip`. */
export interface SkipOptions {
  /** Why, shown in groupInfo and the CLI (at most 1,000 characters). */
  reason?: string;
}

/** The options of `Rheo#reschedule`: exactly one of them. */
export interface RescheduleOptions {
  /** Offer the deliveries again at this time (at most a year ahead of now; a past time: at once). */
  deliverAt?: Date;
  /** Offer the deliveries again this many ms from now, by the store's clock (0 to a year). */
  delayMs?: number;
}

/** The options of `Rheo#cancelDelayed`. */
export interface CancelDelayedOptions {
  /** Why, recorded as the skip reason of every group it ends in (at most 1,000 characters). */
  reason?: string;
}
