import type { SettleWritten } from '../backends/backend';
import type { RheoError } from '../core/errors';
import type { Outcome } from '../core/outcomes';
import type { Lease, RheoEvent } from '../core/types';

/**
 * A handler: resolve with nothing to ack; resolve with an {@link Outcome} to settle
 * that way; throw to settle by `outcomeOfError` (`RheoReject` dead-letters now,
 * `RheoRetry` nacks with its delay, anything else nacks with the group's backoff).
 * The lease is shared with the Consumer: treat it as read-only.
 */
export type ConsumerHandler = (lease: Lease, delivery: DeliveryControl) => Promise<Outcome | void>;

/**
 * What a handler gets beside its lease. `signal` aborts when the lease is lost
 * (a renewal found it taken over, or it expired while renewals failed) and when
 * a drain times out: a long handler can stop early, since its result would be
 * discarded anyway. Its `reason` is a RheoError saying which.
 */
export interface DeliveryControl {
  readonly signal: AbortSignal;
  /**
   * A `transactional` Consumer's delivery: the transaction the handler writes in (a
   * TypeORM `EntityManager` on the SQL backends), committed together with the
   * delivery's ack, or rolled back. Undefined otherwise.
   */
  readonly manager?: unknown;
}

/**
 * A batch handler (a Consumer with the `batch` option): up to `batch.size` leases
 * per call, in fetch order. Resolve with nothing to ack every lease without an
 * outcome of its own, with an {@link Outcome} to settle those that way; throw
 * to settle them by `outcomeOfError` (`RheoReject` dead-letters, `RheoRetry`
 * nacks with its delay, anything else nacks with the group's backoff). Outcomes
 * given per event through {@link BatchControl} before the call ends always
 * stand. The whole batch is settled in one `settleMany`.
 */
export type ConsumerBatchHandler = (leases: readonly Lease[], batch: BatchControl) => Promise<Outcome | void>;

/**
 * What a batch handler gets beside its leases: the signal (aborted at the
 * timeout, when a drain times out, and when every lease of the batch is lost),
 * and per-event outcomes. `target` is one of the batch's leases or events. Each
 * call replaces an earlier one for the same event; calls after the batch was
 * settled (the handler returned, or timed out) throw.
 */
export interface BatchControl extends DeliveryControl {
  /** The batch's leases, in fetch order. */
  readonly leases: readonly Lease[];
  /** Ack this event, whatever the call's result. */
  ack(target: Lease | RheoEvent): void;
  /** Dead-letter this event now with `reason`. */
  reject(target: Lease | RheoEvent, reason: string): void;
  /** Retry this event: after `delayMs`, or the group's backoff. Counts as an attempt. */
  retry(target: Lease | RheoEvent, options?: BatchRetryOptions): void;
}

/** Options of {@link BatchControl.retry}. */
export interface BatchRetryOptions {
  /** Redeliver after this delay (ms) instead of the group's backoff. */
  delayMs?: number;
  /** Stored as the retry's reason. Default `'retry'`. */
  reason?: string;
}

/**
 * `idle`: built, not started. `running`: fetching. `backing_off`: the last fetch
 * failed, the next waits (handlers, settles and renewals go on). `draining`: no
 * more fetches, waiting for running handlers. `stopped`: terminal.
 */
export type ConsumerState = 'idle' | 'running' | 'backing_off' | 'draining' | 'stopped';

/** How {@link Consumer.drain} ended: everything settled, or the timeout came first. */
export type DrainResult = 'drained' | 'timeout';

/** Counters of one Consumer, for tests, health and telemetry. */
export interface ConsumerStats {
  /** Fetch calls made. */
  fetches: number;
  /** Leases those fetches returned. */
  leases: number;
  /** Idle waits ended by the poll timer. */
  pollTimeouts: number;
  /** Idle waits ended by the backend's wake-up hint. */
  wakeUps: number;
  /** Renewal calls made (one per round). */
  renewRounds: number;
  /** Settle calls made (each carries a batch). */
  settleBatches: number;
  /** Leases settled successfully. */
  settled: number;
  /**
   * Leases dropped before any handler started on them, because their lease had
   * expired or had less than the start margin left (`max(10% of leaseMs, 100 ms)`,
   * at most half the lease) while they waited in the prefetch buffer.
   */
  dropped: number;
  /** Leases given back unhandled (dropped ones, and the buffer at drain), accepted by the store. */
  released: number;
  /** Settles dropped because they arrived after the Consumer stopped (a handler that outlived the drain timeout). */
  lateSettles: number;
  /** Handler calls (a batch counts once) whose outcome was decided by `timeoutMs`. */
  timeouts: number;
  /** Handler calls that ended after their timeout: their result was dropped. */
  lateResults: number;
}

/** Payload of the `settled` event. */
export interface SettledEvent {
  lease: Lease;
  outcome: Outcome;
  /**
   * What the store says it wrote for a nack or reject (a retry or a dead letter,
   * by the group's settings as stored, which another process may have changed):
   * absent for an ack, and for a backend that does not tell.
   */
  written?: SettleWritten;
}

/** Payload of the `settle_error` event. */
export interface SettleErrorEvent {
  lease: Lease;
  outcome: Outcome;
  error: RheoError;
}

/** Payload of the `handler_error` event. */
export interface HandlerErrorEvent {
  /** The lease (for a batch: its first). */
  lease: Lease;
  /** A batch call: every lease of the batch. */
  leases?: readonly Lease[];
  error: unknown;
}

/** Payload of the `late_result` event: a handler call ended after its timeout had decided its outcome. */
export interface LateResultEvent {
  /** The call's leases (one, or the batch). */
  leases: readonly Lease[];
  timeoutMs: number;
  /** How the call ended: `'resolved'` or `'threw'`. Its result was dropped either way. */
  ended: 'resolved' | 'threw';
}

/**
 * Payload of the `renew_error` event: a renewal round failed, as a whole or for
 * some leases, for a reason other than losing them. The leases are kept and the
 * next round comes on the fetch backoff. `consecutive` counts failed rounds in a
 * row (1 starts a burst).
 */
export interface RenewErrorEvent {
  error: RheoError;
  leases: number;
  consecutive: number;
}

/** Payload of the `late_settle` event: a handler finished after the Consumer stopped; its outcome was not written. */
export interface LateSettleEvent {
  lease: Lease;
  outcome: Outcome;
}

/**
 * Payload of the `dead_letter` event: this Consumer's fetch dead-lettered a delivery
 * instead of leasing it, because its lease had expired on the group's last
 * attempt (nobody settled it: a process that died holding it). No lease of it is
 * held, so there is no `settled` event for it.
 */
export interface ClaimDeadLetterEvent {
  eventId: string;
  partition: number;
  sequence: number;
  /** The attempt its lease expired on (the group's `maxAttempts`). */
  attempt: number;
  /** What the dead letter stores: `lease expired on attempt N of M`. */
  reason: string;
}

/** The events a {@link Consumer} emits, with their arguments. */
export interface ConsumerEvents {
  state: [ConsumerState];
  fetch_error: [RheoError];
  recovered: [];
  settled: [SettledEvent];
  settle_error: [SettleErrorEvent];
  /** A fetch dead-lettered an expired lease on the last attempt (see {@link ClaimDeadLetterEvent}). */
  dead_letter: [ClaimDeadLetterEvent];
  lease_lost: [Lease];
  handler_error: [HandlerErrorEvent];
  renew_error: [RenewErrorEvent];
  /** Renewals succeed again after `renew_error`s. */
  renew_recovered: [];
  late_settle: [LateSettleEvent];
  late_result: [LateResultEvent];
  /** A fetch found the group paused in the store (true), or claiming again after a pause (false): docs/adr/046-pausing-a-group.md. */
  paused: [boolean];
}
