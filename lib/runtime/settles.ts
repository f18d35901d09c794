import type { RheoError } from '../core/errors';
import { MAX_BATCH } from '../core/limits';
import type { Outcome } from '../core/outcomes';
import type { Rheo } from '../core/rheo';
import { classifySettleError } from '../core/settle';
import { ACK, nackAfterFailedSettle, settleRequest } from './handler-result';
import type { Inflight, InflightEntry } from './inflight';
import { type Pending, SettleBatcher, type SettleResult } from './settle-batcher';

/** What settling tells the Consumer. */
export interface SettleHooks {
  /** True once the Consumer stopped: the backend is no longer its to touch. */
  stopped(): boolean;
  /** A lease was settled (and is no longer held); `result` what the store said it wrote. */
  settled(entry: InflightEntry, outcome: Outcome, result: SettleResult & { ok: true }): void;
  /** A settle failed; what follows (a nack, or expiry) is decided here. */
  failed(entry: InflightEntry, outcome: Outcome, error: RheoError): void;
  /** An outcome arrived after the Consumer stopped: not written (counted). */
  late(entry: InflightEntry, outcome: Outcome): void;
  /** A held lease was let go: its room is free, a drain may be done. */
  letGo(): void;
  /** Nothing is queued or in flight any more: a drain may be done. */
  idle(): void;
}

/**
 * Settles the leases a Consumer holds by their handlers' outcomes, through the
 * settle batcher (one `settleMany` per turn). Only a lease still held is settled
 * (one lost on renewal is the newer holder's); a settle that definitely failed is
 * followed by a nack carrying its error (docs/adr/035); whatever the result, the
 * lease stops being held when it comes back.
 */
export class Settles {
  private readonly batcher: SettleBatcher;
  /** Leases settled successfully. */
  settled = 0;
  /** Outcomes dropped because they arrived after the Consumer stopped. */
  late = 0;

  constructor(
    rheo: Rheo,
    private readonly held: Inflight,
    private readonly hooks: SettleHooks,
  ) {
    this.batcher = new SettleBatcher(
      (requests) => rheo.settleMany(requests),
      MAX_BATCH,
      () => this.hooks.idle(),
    );
  }

  /** Nothing queued and nothing in flight. */
  get idle(): boolean {
    return this.batcher.idle;
  }

  /** Settle calls made. */
  get batches(): number {
    return this.batcher.batches;
  }

  settle(entry: InflightEntry, outcome: Outcome): void {
    if (this.isLate(entry, outcome) || !this.held.holds(entry)) return;
    entry.settling = true;
    this.batcher.settle(settleRequest(entry.lease, outcome), (result) => this.onSettled(entry, outcome, result));
  }

  /** The leases of one batch call still held, each by `outcomeOf` its index, in one settle call of their own. */
  settleAll(entries: readonly InflightEntry[], outcomeOf: (i: number) => Outcome): void {
    const items: Pending[] = [];
    entries.forEach((entry, i) => {
      const outcome = outcomeOf(i);
      if (this.isLate(entry, outcome) || !this.held.holds(entry)) return;
      entry.settling = true;
      items.push({ request: settleRequest(entry.lease, outcome), done: (result) => this.onSettled(entry, outcome, result) });
    });
    this.batcher.settleAll(items);
  }

  /** The handler acked `entry` itself, inside its transaction: settled, when still held. */
  settledByHandler(entry: InflightEntry): void {
    if (this.held.holds(entry)) this.onSettled(entry, ACK, { ok: true });
  }

  /** The handler's own ack of `entry` did not certainly commit: that ack's failed settle, when still held. */
  ackFailed(entry: InflightEntry, error: RheoError): void {
    if (this.held.holds(entry)) this.onSettled(entry, ACK, { ok: false, error });
  }

  /** Stopped: the backend is no longer ours to touch (counted: the drain gave up on it). */
  private isLate(entry: InflightEntry, outcome: Outcome): boolean {
    if (!this.hooks.stopped()) return false;
    this.late++;
    this.hooks.late(entry, outcome);
    return true;
  }

  /** `fallback`: this settle is the nack that followed a failed one, and is not followed again. */
  private onSettled(entry: InflightEntry, outcome: Outcome, result: SettleResult, fallback = false): void {
    if (result.ok) {
      this.settled++;
      this.letGo(entry);
      this.hooks.settled(entry, outcome, result);
      return;
    }
    const error = result.error;
    this.hooks.failed(entry, outcome, error);
    // A settle that certainly did not happen is followed by a nack carrying its error,
    // which counts the attempt (a failed ack's comes back at once); lost leases and
    // unknown outcomes, and a failed follow-up nack, are left to expire, which the
    // next claim counts as an attempt too.
    if (!fallback && classifySettleError(error) === 'definite' && !this.hooks.stopped()) {
      const nack = nackAfterFailedSettle(outcome, error);
      this.batcher.settle(settleRequest(entry.lease, nack), (r) => this.onSettled(entry, nack, r, true));
      return;
    }
    this.letGo(entry);
  }

  /** Stop holding `entry`: its room goes back to the fetch loop. */
  private letGo(entry: InflightEntry): void {
    if (this.held.get(entry.lease.leaseId) === entry) this.held.delete(entry.lease.leaseId);
    this.hooks.letGo();
  }
}
