import type { Clock } from '../core/clock';
import type { Registrations } from '../core/registrations';
import type { RheoError } from '../core/errors';
import type {
  AppendOptions,
  DeadLetter,
  EventMetadata,
  FlowLimits,
  GroupConfig,
  GroupInfo,
  GroupPause,
  JsonValue,
  Lag,
  Lease,
  Ordering,
  QueryWhere,
  Retention,
  RheoEvent,
  StreamInfo,
  TrimResult,
} from '../core/types';
import type { Capabilities } from './capabilities';
import type { FetchedLeases } from './fetch-answer';

export type { Capabilities } from './capabilities';
export type { ClaimDeadLetter, FetchedLeases, FlowHeld } from './fetch-answer';

/**
 * An event ready to store: validated, id and timestamp assigned, partition routed.
 * The backend assigns the sequence.
 */
export interface NewEvent {
  id: string;
  partition: number;
  timestamp: Date;
  key: string | null;
  type: string | null;
  metadata: EventMetadata;
  payload: JsonValue;
  /** `payload` as JSON text, serialised once by the facade's size check: store this. */
  payloadJson: string;
  /** `metadata` as JSON text, serialised once by the facade: store this. */
  metadataJson: string;
  /**
   * Present only on a delayed event (`deliverAt`, or now + `delayMs`): store it
   * with the event and return it on every read. A claim never leases the event
   * before this time by the backend's clock; the cursor that reaches it earlier
   * passes it and leaves a delivery due then (a nack's delay), so it keeps its
   * sequence, holds the frontier, and starts at attempt 1 when first offered.
   */
  deliverAt?: Date;
}

/**
 * What `Backend.append` returns: the stored events, in input order, and
 * `repeats`, how many of them this call did not write: an id the stream held
 * already, or one given again later in the same batch (an idempotent repeat).
 * The facade reports appended events as `length - repeats` and the repeats apart
 * (the `rheo:append` message, the metrics). A backend that leaves it out has
 * every event reported as written.
 */
export type AppendedEvents = RheoEvent[] & { repeats?: number };

/** A start position resolved by the facade: per partition, the last sequence to skip, or a time. */
export type ResolvedStart =
  { kind: 'beginning' } | { kind: 'end' } | { kind: 'after'; sequences: Record<number, number> | number } | { kind: 'at'; time: Date };

export interface CreateGroupRequest extends FlowLimits {
  stream: string;
  group: string;
  start: ResolvedStart;
  maxAttempts: number;
  retry: GroupConfig['retry'];
  ordering: Ordering;
}

/**
 * A group's settings changed in place (`updateGroup`, docs/adr/047-changing-a-group-in-place.md):
 * the whole new value of each, already checked and merged with the stored config by the facade.
 */
export interface UpdateGroupRequest extends FlowLimits {
  stream: string;
  group: string;
  maxAttempts: number;
  retry: GroupConfig['retry'];
}

/** A group paused (`pauseGroup`): the options checked by the facade, absent ones null. */
export interface PauseGroupRequest {
  stream: string;
  group: string;
  until: Date | null;
  reason: string | null;
  by: string | null;
}

/**
 * Deliveries of a group an operator settles as handled without running the handler
 * (`skip`, docs/adr/048-skip-reschedule-cancel.md): ids checked (at most MAX_BATCH,
 * no repeats) by the facade; `reason` as given, or null.
 */
export interface SkipRequest {
  stream: string;
  group: string;
  ids: string[];
  reason: string | null;
}

/**
 * Deliveries of a group made due at another time (`reschedule`): at `deliverAt`,
 * or `delayMs` after now by the backend's clock (exactly one of them is set).
 */
export interface RescheduleRequest {
  stream: string;
  group: string;
  ids: string[];
  deliverAt: Date | null;
  delayMs: number | null;
}

/** A delayed event cancelled in every group of its stream (`cancelDelayed`); `reason` as given, or null. */
export interface CancelDelayedRequest {
  stream: string;
  id: string;
  reason: string | null;
}

export interface FetchRequest {
  stream: string;
  group: string;
  limit: number;
  leaseMs: number;
  consumerId: string;
  /** Restrict to these partitions; all when absent. */
  partitions?: number[];
}

/** One settle in a bulk settle call. */
export type SettleOp =
  | { kind: 'ack'; lease: Lease<unknown> }
  /** `delayMs` absent: the group's retry backoff applies. */
  | { kind: 'nack'; lease: Lease<unknown>; reason: string; delayMs?: number }
  | { kind: 'reject'; lease: Lease<unknown>; reason: string };

/** Per-op outcome of a bulk call: ok, or the portable error for that op alone. */
export type SettleResult = ({ ok: true } & SettleWritten) | { ok: false; error: RheoError };

/**
 * What a successful nack or reject wrote, as the store decided it (docs/adr/047):
 * `outcome` `retry` or `dead_letter` for a nack, `reject` for a reject; for a nack
 * `maxAttempts`, the group's stored setting that decided, and for a retry
 * `delayMs`, the delay it applied. A backend that leaves them out (they are
 * optional for third-party backends) is reported by the caller's copy of the
 * group config. Acks, and the results of `release`, `skip` and `reschedule`,
 * carry none of them.
 */
export interface SettleWritten {
  outcome?: 'retry' | 'dead_letter' | 'reject';
  maxAttempts?: number;
  delayMs?: number;
}
export type RenewResult = { ok: true; expiresAt: Date } | { ok: false; error: RheoError };

export interface ReadRequest {
  stream: string;
  partition: number;
  afterSequence: number;
  limit: number;
}

/** A validated query; `after` is the decoded keyset cursor. */
export interface QueryRequest {
  stream: string;
  where: QueryWhere;
  from?: Date;
  to?: Date;
  afterSequence?: number;
  untilSequence?: number;
  order: 'asc' | 'desc';
  limit: number;
  /** Keyset position: results strictly after (asc) or before (desc) this (sequence, partition). */
  after?: { sequence: number; partition: number };
}

export type ReplayRequest =
  | { stream: string; group: string; kind: 'sequence'; afterSequence: number; partitions?: number[] }
  | { stream: string; group: string; kind: 'time'; from: Date; partitions?: number[] }
  | { stream: string; group: string; kind: 'events'; events: Array<{ id: string; partition: number; sequence: number }> };

/**
 * A validated trim. The retention point of partition p is the highest of
 * `hwm(p) - maxEvents` and the last sequence before the first event stamped at
 * or after `before` (the same lookup as a start `at` a time), never below the
 * partition's current trim point, never above its high watermark. Unforced, it
 * is further capped at every group's frontier in p.
 */
export interface TrimRequest {
  stream: string;
  /** Events stamped before this may go (a `maxAgeMs` resolved against the clock). */
  before?: Date;
  /** Each partition keeps at most this many of its latest events. */
  maxEvents?: number;
  force: boolean;
}

/**
 * What a backend tells an operator about itself (logged once at start-up):
 * where its data lives and what its start-up changed. Never credentials.
 */
export interface BackendDescription {
  /** Where the data lives, in words: `127.0.0.1:5432, database app, schema rheo`; a file path; a key prefix. */
  target: string;
  /** Schema versions `init` applied (`install: 'auto'`), ascending; empty or absent when it applied none. */
  installed?: number[];
}

/**
 * What {@link Backend.ackInTransaction} did.
 * - `committed`: `work` resolved true; its writes and the ack committed together.
 * - `rolled_back`: `work` resolved false; nothing of it was committed and the
 *   lease is untouched (still held: settle it as usual).
 * - `ack_failed`: the ack did not certainly commit. `stale_lease` or
 *   `receipt_mismatch`: the fence refused it (the lease expired, or another
 *   consumer holds the event now) and the work's writes were rolled back with it.
 *   `ambiguous` or `backend_unavailable`: the commit's fate is unknown, and the
 *   writes and the ack share it (both committed or neither did).
 */
export type TransactionalAck = { kind: 'committed' } | { kind: 'rolled_back' } | { kind: 'ack_failed'; error: RheoError };

export interface WaitRequest {
  stream: string;
  group: string;
  timeoutMs: number;
  signal: AbortSignal;
}

/**
 * The Backend contract: semantic operations only; storage algorithms stay private
 * to each backend. Every method reports failure by throwing a `RheoError` (never a
 * driver's exception), except the bulk calls, which report per op.
 *
 * Semantics every backend must honour (the conformance suite checks them):
 * - sequences per (stream, partition) start at 1, are contiguous, and commit in order;
 * - an event id is unique per stream; appending a known id returns the stored event;
 * - each fetch issues a new `leaseId`; settle and renew succeed only while the
 *   stored lease matches and is live, else `stale_lease` (or `receipt_mismatch`);
 * - an expired lease is claimable again with `attempt + 1`;
 * - nack at `attempt >= maxAttempts` dead-letters with the reason;
 * - the frontier is the highest sequence with every event up to it terminal.
 */
export interface Backend {
  /** Short name: memory, postgres, sqlite, redis. */
  readonly name: string;
  readonly capabilities: Capabilities;
  /** The clock used for timestamps, lease expiry, retry delays and delayed events: one per store, judged by every process alike (ADR 041). */
  readonly clock: Clock;
  /**
   * Optional: the stream and group registrations the backend remembers, shared
   * with the facade so a process remembers each once (ADR 044). A backend that
   * keeps none leaves it out and the facade keeps its own.
   */
  readonly registrations?: Registrations;

  /** Connect / install. Called once by the facade before first use; idempotent. */
  init(): Promise<void>;
  /** Resolves when the store answers; throws `backend_unavailable` otherwise. */
  ping(): Promise<void>;
  /** Release what the backend owns. Idempotent. */
  close(): Promise<void>;

  /** `retention` has at least one limit set, or is absent. */
  createStream(stream: string, partitions: number, retention?: Retention): Promise<StreamInfo>;
  /** Current registration, retention included: read from the store (another process may have changed it). */
  getStream(stream: string): Promise<StreamInfo | null>;
  listStreams(): Promise<StreamInfo[]>;
  /** Replace the stream's retention (`{}` clears it); returns the updated registration. */
  setRetention(stream: string, retention: Retention): Promise<StreamInfo>;

  createGroup(request: CreateGroupRequest): Promise<GroupConfig>;
  getGroup(stream: string, group: string): Promise<GroupConfig | null>;
  listGroups(stream: string): Promise<GroupConfig[]>;
  /**
   * Store new settings of an existing group (its deliveries, positions and dead
   * letters untouched) and return the stored config; `group_not_found` when there
   * is none. The stored value is what decides from then on, in every process: a
   * claim judges an expired lease, and a settle a nack, by the `maxAttempts` and
   * `retry` the store holds at that moment, never by a copy a process remembers.
   */
  updateGroup(request: UpdateGroupRequest): Promise<GroupConfig>;
  /**
   * Pause a group (docs/adr/046-pausing-a-group.md): from the moment this resolves,
   * no claim of any process leases a delivery of the group (a claim under way
   * either finished before, or sees the pause), until `resumeGroup` or, when
   * `until` is set, until the store's clock reaches it. A claim of a paused group
   * answers no leases, marked `paused` (see {@link FetchedLeases}). Renewals,
   * settles, releases, appends, replays and lag are untouched. Pausing a paused
   * group replaces its pause. Returns the pause as stored, `pausedAt` by the
   * store's clock. `group_not_found` when there is none.
   */
  pauseGroup(request: PauseGroupRequest): Promise<GroupPause>;
  /**
   * Lift a group's pause, and wake the group's waiting consumers as an append
   * would (`wait`), so they claim at once. True when a pause was holding the
   * group back (not past its `until`); false, changing nothing, when none was.
   * `group_not_found` when there is no group.
   */
  resumeGroup(stream: string, group: string): Promise<boolean>;
  /**
   * Delete a group and everything of it: its positions, deliveries (live leases
   * included: settling, renewing or releasing one answers `stale_lease` or
   * `group_not_found`), dead letters and any per-group key; other groups and the
   * stream's events are untouched. Atomic with the group's claims, settles and
   * re-opens: nothing of the group is written after it (no half-deleted group,
   * no rows or keys left behind). A group created again under the name starts
   * fresh from its own start position. `group_not_found` when there is none.
   */
  deleteGroup(stream: string, group: string): Promise<void>;

  /**
   * Append in order; atomic for the whole batch. Returns the stored events, in
   * input order, with `repeats` set (see {@link AppendedEvents}).
   */
  append(stream: string, events: NewEvent[], options: AppendOptions): Promise<AppendedEvents>;
  read(request: ReadRequest): Promise<RheoEvent[]>;
  query(request: QueryRequest): Promise<RheoEvent[]>;

  /**
   * Claim up to `limit` events; the deliveries the claim dead-lettered ride along (see {@link FetchedLeases}).
   *
   * A group's flow limits (`guarantees.flowControl`, docs/adr/049-flow-control.md) are
   * the store's, judged at the claim, atomically with it, across every process:
   * - **Key places** (`keyPlaces(config)`: 1 under `ordering: 'key'`, else
   *   `keyConcurrency`): at most that many deliveries of one key are *open* (leased,
   *   or waiting for a retry, a delay or a re-claim) at once. A claim that reaches an
   *   event whose key has no place, or has events already waiting, leaves it
   *   *waiting for its key* (it holds the frontier, takes no attempt, and takes no
   *   place of the limit: a claim passes any number of them up to a bound of its
   *   own). When an open delivery of a key ends (ack, dead letter, skip, cancel,
   *   trim), the key's earliest waiting event gets its place, due at once (or at
   *   its deliverAt). Events without a key are never limited.
   * - **groupConcurrency**: the claim takes at most that many minus the live leases
   *   of the group (expired leases re-claimed take their own place).
   * - **rateLimit**: at most `max` leases in any `perMs` span of the store's clock
   *   (`rateRoom`, core/flow.ts).
   * A limit that held the claim below `limit` says so in `held`.
   */
  fetch(request: FetchRequest): Promise<FetchedLeases>;
  renew(leases: Lease<unknown>[], leaseMs: number): Promise<RenewResult[]>;
  settle(ops: SettleOp[]): Promise<SettleResult[]>;
  /**
   * Give leases back unhandled (a drain, or a lease the runtime dropped before any
   * handler started on it): each event is claimable again at once, and the attempt
   * its fetch counted is taken back, so the next delivery carries the same attempt.
   * Fenced by lease id alone, not by expiry: a lease that expired but that nobody
   * claimed since is still ours to give back; one claimed by another consumer since
   * (or settled) answers `stale_lease` and changes nothing. Per-lease results.
   */
  release(leases: Lease<unknown>[]): Promise<SettleResult[]>;

  /**
   * Settle waiting deliveries of a group as handled without running the handler
   * (docs/adr/048-skip-reschedule-cancel.md). A delivery waits when it was offered
   * (or parked, a delayed event the cursor passed) and no live lease holds it: a
   * retry not yet due, a parked delayed event, a released or expired lease. Each is
   * ended as an ack ends it (the frontier walks past it; in an `ordering:
   * 'partition'` group the partition's next event is free, and waiting consumers
   * are woken) and counted in `groupInfo.skipped` with `reason`. Per id, in order:
   * `{ ok: true }`, or an error changing nothing for that id: `lease_held` (a live
   * lease; the message names its expiry), `invalid_argument` (field `ids`) for an
   * id the stream does not hold (or trimmed), an event not yet offered to the group
   * (nothing waits: the cursor has not reached it), or one already settled (acked,
   * dead-lettered, skipped). A stale holder's later settle answers `stale_lease`.
   */
  skip(request: SkipRequest): Promise<SettleResult[]>;
  /**
   * Make waiting deliveries of a group (as {@link skip} means it) due at another
   * time, their attempt unchanged; a past time makes them due at once (waiting
   * consumers are woken). Per-id results and errors as {@link skip}'s.
   */
  reschedule(request: RescheduleRequest): Promise<SettleResult[]>;
  /**
   * Cancel a delayed event in every group of its stream at once: each group where it
   * waits (parked, or a retry) has it skipped, reason `reason`; each group whose
   * cursor has not reached it yet never offers it (the claim that reaches it passes
   * it as done, because the cancellation is stored on the event), and is counted as
   * skipped now; groups that settled it already are untouched. Refused whole, with
   * nothing changed, when a group holds a live lease on it (`lease_held`), when the
   * stream has no such event (`invalid_argument`, field `id`) or when it is not a
   * delayed event (same). Returns in how many groups it was still to run; a second
   * cancel of the same event returns 0.
   */
  cancelDelayed(request: CancelDelayedRequest): Promise<number>;

  /** Re-open deliveries; returns how many events were re-opened (or rewound over). */
  replay(request: ReplayRequest): Promise<number>;
  reset(stream: string, group: string, start: ResolvedStart): Promise<void>;

  lag(stream: string, group: string): Promise<Lag>;
  groupInfo(stream: string, group: string): Promise<GroupInfo>;
  /** Ordered by (partition, sequence); `after` is an event id from an earlier page. */
  deadLetters(stream: string, group: string, limit: number, after?: string): Promise<DeadLetter[]>;
  /**
   * Make dead letters available again; returns how many were redriven. A dead
   * letter whose event was trimmed is skipped (not counted) and stays listed.
   */
  redrive(stream: string, group: string, eventIds: string[] | 'all'): Promise<number>;

  /**
   * Delete events up to each partition's retention point (see {@link TrimRequest}).
   * Works in bounded chunks, each its own short write, so claims, settles and
   * appends never wait for a whole trim; safe to run concurrently (the trim point
   * only moves forward). The ids of trimmed events leave the idempotency index
   * with them. Forced, a group behind the point gets its frontier moved there:
   * its deliveries at or below it are dropped (live leases go stale), and
   * `skipped` counts the events it had not finished (not acked, not dead).
   * Dead letters of trimmed events stay, listed with `event: null`. Reads, queries,
   * replays and starts below the trim point begin after it.
   */
  trim(request: TrimRequest): Promise<TrimResult>;
  /** Delete dead letters of a group dead-lettered before `before` (all when null), in bounded chunks; returns how many. */
  purgeDeadLetters(stream: string, group: string, before: Date | null): Promise<number>;
  /**
   * How many dead letters the group holds that were dead-lettered at or after
   * `since` (all when null): the complement of `purgeDeadLetters(before)` at the
   * same time. Read from an index on the time (never by loading the dead letters),
   * because a health check asks on every probe.
   */
  countDeadLetters(stream: string, group: string, since: Date | null): Promise<number>;
  /**
   * A named, expiring turn for background work shared by every process on this
   * store (the periodic trim): true when `holder` may run `job` now, because
   * nobody holds it, its holder's turn has expired, or `holder` holds it already;
   * the turn is then `holder`'s until `ttlMs` from now.
   */
  claimTurn(job: string, holder: string, ttlMs: number): Promise<boolean>;
  /**
   * Forget `job`'s turn if `holder` holds it (expired or not), so nothing of it is
   * left in the store: jobs named per process (a broadcast consumer's heartbeat)
   * would otherwise leave one record per process ever started. True when it was
   * forgotten; false, changing nothing, when another holder has it or there is none.
   */
  releaseTurn(job: string, holder: string): Promise<boolean>;

  /**
   * Optional (`mechanisms.transactionalAck`): exactly-once effects in the store's
   * own database. Opens a transaction, runs `work` in it (given the transaction's
   * handle: a TypeORM `EntityManager` on the SQL backends) and, when `work`
   * resolves true, acks `lease` inside the same transaction before committing it:
   * fenced as `settle` fences (same lease id, leased, not expired by the backend's
   * clock), the delivery locked from the fence to the commit. So the work's writes
   * commit if and only if the ack does. `work` throwing rolls back and the error
   * is rethrown as it is; a transaction that cannot begin, or a commit that
   * definitely failed, throws a `RheoError`: nothing was committed and the lease
   * is untouched. A lease already known to be stale may be answered `ack_failed`
   * without running `work`.
   */
  ackInTransaction?(lease: Lease<unknown>, work: (manager: unknown) => Promise<boolean>): Promise<TransactionalAck>;

  /** Optional: where the data lives and what `init` installed, for the start-up log (never credentials). */
  describe?(): BackendDescription;

  /**
   * Optional wake-up hint: resolves when work might exist for the group, at the
   * latest after `timeoutMs`, or when `signal` aborts. Never correctness: the
   * runtime polls anyway.
   */
  wait?(request: WaitRequest): Promise<void>;
}
