import type { RheoError } from '../core/errors';
import type { Outcome } from '../core/outcomes';
import type { Lease } from '../core/types';

/**
 * A handler: resolve with nothing to ack; resolve with an {@link Outcome} to settle
 * that way; throw to settle by `outcomeOfError` (`RheoReject` dead-letters now,
 * `RheoRetry` nacks with its delay, anything else nacks with the group's backoff).
 * The lease is shared with the Group: treat it as read-only.
 */
export type GroupHandler = (lease: Lease) => Promise<Outcome | void>;

/**
 * `idle`: built, not started. `running`: fetching. `backing_off`: the last fetch
 * failed, the next waits (handlers, settles and renewals go on). `draining`: no
 * more fetches, waiting for running handlers. `stopped`: terminal.
 */
export type GroupState = 'idle' | 'running' | 'backing_off' | 'draining' | 'stopped';

/** How {@link Group.drain} ended: everything settled, or the timeout came first. */
export type DrainResult = 'drained' | 'timeout';

/** Counters of one Group, for tests, health and telemetry. */
export interface GroupStats {
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
}

/** Payload of the `settled` event. */
export interface SettledEvent {
  lease: Lease;
  outcome: Outcome;
}

/** Payload of the `settle_error` event. */
export interface SettleErrorEvent {
  lease: Lease;
  outcome: Outcome;
  error: RheoError;
}

/** Payload of the `handler_error` event. */
export interface HandlerErrorEvent {
  lease: Lease;
  error: unknown;
}

/** Payload of the `renew_error` event: a whole renewal round failed; the leases are kept for the next. */
export interface RenewErrorEvent {
  error: RheoError;
  leases: number;
}

/** The events a {@link Group} emits, with their arguments. */
export interface GroupEvents {
  state: [GroupState];
  fetch_error: [RheoError];
  recovered: [];
  settled: [SettledEvent];
  settle_error: [SettleErrorEvent];
  lease_lost: [Lease];
  handler_error: [HandlerErrorEvent];
  renew_error: [RenewErrorEvent];
}
