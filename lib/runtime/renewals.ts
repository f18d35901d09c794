import { type RheoError, toRheoError } from '../core/errors';
import type { Rheo } from '../core/rheo';
import { classifySettleError } from '../core/settle';
import type { Inflight, InflightEntry } from './inflight';

/** What the renewal loop reports back to its Group. */
export interface RenewalHooks {
  /** A held lease was answered lost (stale_lease, receipt_mismatch): it has been dropped. */
  lost(entry: InflightEntry): void;
  /** A whole round failed; the leases are kept for the next one. */
  roundFailed(error: RheoError, leases: number): void;
}

/**
 * Keeps a Group's leases alive: every `leaseMs / 2`, one `renewMany` call for
 * every held lease. The next round is scheduled when the previous one answers,
 * so rounds never overlap; after a failed round the next comes sooner, since the
 * leases are at risk of expiring.
 */
export class Renewals {
  private readonly everyMs: number;
  private timer: NodeJS.Timeout | null = null;
  private stopped = true;
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
    if (!this.stopped) this.timer = setTimeout(() => this.round(), delayMs);
  }

  private round(): void {
    this.timer = null;
    if (this.stopped) return;
    const leases = this.held.leases();
    if (leases.length === 0) {
      this.schedule(this.everyMs);
      return;
    }
    this.rounds++;
    let call: ReturnType<Rheo['renewMany']>;
    try {
      call = this.rheo.renewMany(leases, { leaseMs: this.leaseMs });
    } catch (err) {
      call = Promise.reject(err);
    }
    call.then(
      (results) => {
        if (this.stopped) return;
        for (let i = 0; i < leases.length; i++) {
          const result = results[i];
          const entry = this.held.get(leases[i].leaseId);
          if (!entry || !result) continue;
          if (result.ok) entry.expiresAt = result.expiresAt.getTime();
          // A lost lease is dropped without a nack (the newer holder owns the event);
          // a settle on its way decides for itself. Other errors: try next round.
          else if (classifySettleError(result.error) === 'lost' && !entry.settling) {
            this.held.delete(entry.lease.leaseId);
            this.hooks.lost(entry);
          }
        }
        this.schedule(this.everyMs);
      },
      (err: unknown) => {
        if (this.stopped) return;
        this.hooks.roundFailed(toRheoError(err), leases.length);
        this.schedule(Math.max(1, Math.floor(this.everyMs / 4)));
      },
    );
  }
}
