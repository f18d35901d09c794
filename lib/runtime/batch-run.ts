import { RheoError } from '../core/errors';
import { MAX_DELAY_MS } from '../core/limits';
import { boundReason, type Outcome } from '../core/outcomes';
import type { Lease, RheoEvent } from '../core/types';
import { checkInt, checkKeys, checkObject, keySet } from '../core/validate';
import { LazyDeliveryControl } from './delivery-control';
import type { BatchControl, BatchRetryOptions } from './consumer-types';
import { ACK } from './handler-result';

const RETRY_KEYS = keySet('a retry option', ['reason', 'delayMs']);

/**
 * One batch handler call: its leases, its signal, and the outcomes the handler
 * gave per event. The Consumer settles each lease by its own outcome, else by what
 * the call as a whole came to (returned, threw, timed out).
 */
export class BatchRun implements BatchControl {
  readonly control = new LazyDeliveryControl();
  private readonly decided: Array<Outcome | undefined>;
  /** Lease ids and event ids -> index in `leases`. */
  private readonly index = new Map<string, number>();
  /** Leases no longer ours (lost, or expired while renewals failed), by lease id. */
  private readonly gone = new Set<string>();
  private closed = false;

  constructor(readonly leases: readonly Lease[]) {
    this.decided = new Array<Outcome | undefined>(leases.length);
    leases.forEach((lease, i) => {
      this.index.set(lease.leaseId, i);
      this.index.set(lease.event.id, i);
    });
  }

  get signal(): AbortSignal {
    return this.control.signal;
  }

  ack(target: Lease | RheoEvent): void {
    this.decide(target, ACK);
  }

  reject(target: Lease | RheoEvent, reason: string): void {
    if (typeof reason !== 'string') throw RheoError.invalid('reason', 'must be a string');
    this.decide(target, { kind: 'reject', reason: boundReason(reason) });
  }

  retry(target: Lease | RheoEvent, options: BatchRetryOptions = {}): void {
    const o = checkObject('options', options);
    checkKeys('options', o, RETRY_KEYS);
    if (o.reason !== undefined && typeof o.reason !== 'string') throw RheoError.invalid('options.reason', 'must be a string');
    const reason = boundReason((o.reason as string | undefined) ?? 'retry');
    if (o.delayMs === undefined) return this.decide(target, { kind: 'nack', reason });
    const delayMs = checkInt('options.delayMs', o.delayMs, 0, MAX_DELAY_MS);
    this.decide(target, { kind: 'nack', reason, delayMs });
  }

  /** The call is over: its outcomes are being settled, later per-event calls throw. */
  close(): void {
    this.closed = true;
  }

  /** The outcome of lease `i`: the one given for its event, else `fallback`. */
  outcomeOf(i: number, fallback: Outcome): Outcome {
    return this.decided[i] ?? fallback;
  }

  /** A lease of the batch is no longer ours; true when that was the last one (the call's result can only be dropped now). */
  leaseGone(leaseId: string): boolean {
    if (!this.index.has(leaseId)) return false;
    this.gone.add(leaseId);
    return this.gone.size === this.leases.length;
  }

  /** True once {@link leaseGone} was called for `leaseId`. */
  isGone(leaseId: string): boolean {
    return this.gone.has(leaseId);
  }

  private decide(target: Lease | RheoEvent, outcome: Outcome): void {
    const i = this.indexOf(target);
    if (this.closed) {
      throw new RheoError(
        'failed',
        'the batch is already settled (its handler returned or timed out): give per-event outcomes before the handler ends',
      );
    }
    this.decided[i] = outcome;
  }

  private indexOf(target: unknown): number {
    if (typeof target !== 'object' || target === null) throw RheoError.invalid('event', 'must be a lease or an event of this batch');
    const t = target as { leaseId?: unknown; id?: unknown };
    const key = typeof t.leaseId === 'string' ? t.leaseId : typeof t.id === 'string' ? t.id : undefined;
    const i = key === undefined ? undefined : this.index.get(key);
    if (i === undefined) throw RheoError.invalid('event', 'is not in this batch (pass one of its leases or events)');
    return i;
  }
}
