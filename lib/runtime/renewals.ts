import { backoffDelay } from '../core/backoff';
import { type RheoError, toRheoError } from '../core/errors';
import type { Rheo } from '../core/rheo';
import { classifySettleError } from '../core/settle';
import { MAX_BATCH } from '../core/limits';
import type { Inflight, InflightEntry } from './inflight';
import { FETCH_BACKOFF } from './options';

/** What the renewal loop reports back to its Consumer. */
export interface RenewalHooks {
  /** A held lease was answered lost (stale_lease, receipt_mismatch): it has been dropped. */
  lost(entry: InflightEntry): void;
  /**
   * A round (or some of its leases) failed for another reason: the leases are
   * kept and the next round comes after the fetch backoff. `leases` counts the
   * leases whose renewal failed.
   */
  failed(error: RheoError, leases: number, consecutive: number): void;
  /** A round renewed everything it could after failed rounds. */
  recovered(): void;
  /** Any round answered (or failed): the Consumer re-checks what it holds against the clock. */
  afterRound(): void;
}

/**
 * Keeps a Consumer's leases alive: every `leaseMs / 2`, `renewMany` for every held
 * lease (in calls of at most the facade's batch limit). The next round is
 * scheduled when the previous one answers, so rounds never overlap. A failed
 * round is reported and retried on the fetch backoff (100 ms doubling, capped
 * at the renewal interval), never silently.
 */
export class Renewals {
  private readonly everyMs: number;
  private timer: NodeJS.Timeout | null = null;
  private stopped = true;
  private failures = 0;
  /** Renewal calls made. */
  rounds = 0;

  constructor(
    private readonly rheo: Rheo,
    private readonly held: Inflight,
    private readonly leaseMs: number,
    private readonly hooks: RenewalHooks,
  ) {
    this.everyMs = Math.max(1, Math.floor(leaseMs / 2));
  }

  /** True while the last round failed (some lease could not be renewed for a reason other than being lost). */
  get failing(): boolean {
    return this.failures > 0;
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.schedule(this.everyMs);
  }

  /** No more rounds; a round in flight is ignored when it answers. */
  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private schedule(delayMs: number): void {
    if (!this.stopped) this.timer = setTimeout(() => void this.round(), delayMs);
  }

  private async round(): Promise<void> {
    this.timer = null;
    if (this.stopped) return;
    const entries = this.held.all();
    if (entries.length === 0) {
      this.hooks.afterRound();
      this.schedule(this.everyMs);
      return;
    }
    let failedError: RheoError | null = null;
    let failedLeases = 0;
    for (let i = 0; i < entries.length && !this.stopped; i += MAX_BATCH) {
      const chunk = entries.slice(i, i + MAX_BATCH);
      this.rounds++;
      try {
        const results = await this.rheo.renewMany(
          chunk.map((e) => e.lease),
          { leaseMs: this.leaseMs },
        );
        if (this.stopped) return;
        chunk.forEach((entry, k) => {
          const result = results[k];
          if (!result || !this.held.holds(entry)) return;
          if (result.ok) {
            entry.expiresAt = result.expiresAt.getTime();
            // The handler's lease shows the renewed expiry (the facade gives each lease its own Date).
            entry.lease.expiresAt.setTime(entry.expiresAt);
          } else if (classifySettleError(result.error) === 'lost') {
            // Dropped without a nack: the newer holder owns the event. A settle
            // on its way decides for itself.
            if (entry.settling) return;
            this.held.delete(entry.lease.leaseId);
            this.hooks.lost(entry);
          } else {
            failedError ??= result.error;
            failedLeases++;
          }
        });
      } catch (err) {
        if (this.stopped) return;
        failedError ??= toRheoError(err);
        failedLeases += chunk.length;
      }
    }
    if (this.stopped) return;
    this.hooks.afterRound();
    if (failedError) {
      this.failures++;
      this.hooks.failed(failedError, failedLeases, this.failures);
      this.schedule(Math.min(this.everyMs, backoffDelay(FETCH_BACKOFF, this.failures)));
      return;
    }
    if (this.failures > 0) {
      this.failures = 0;
      this.hooks.recovered();
    }
    this.schedule(this.everyMs);
  }
}
