import { channels, deliveryOf } from '../core/diagnostics';
import { MAX_BATCH } from '../core/limits';
import type { Rheo } from '../core/rheo';
import type { Lease } from '../core/types';
import type { Inflight, InflightEntry } from './inflight';

/** What giving leases back tells the Consumer. */
export interface ReleaseHooks {
  /** Leases stopped being held: their room goes back to the fetch loop. */
  freed(): void;
  /** A release call answered (or failed): a drain may be done. */
  answered(): void;
}

/**
 * Gives back leases no handler started on (docs/adr/009): the buffer when a drain
 * begins, leases a fetch returns while draining, buffered leases too close to
 * expiry. They are claimable at once elsewhere, with the attempt they had.
 */
export class Releases {
  /** Release calls on their way (a drain waits for them). */
  private calls = 0;
  /** Leases given back and accepted by the store. */
  released = 0;
  /** Leases dropped from the buffer, too close to expiry to start. */
  dropped = 0;

  constructor(
    private readonly rheo: Rheo,
    private readonly held: Inflight,
    private readonly hooks: ReleaseHooks,
  ) {}

  /** No release call on its way. */
  get idle(): boolean {
    return this.calls === 0;
  }

  /** Buffered leases with less than the start margin left: counted, told on `rheo:lease_expired`, given back. */
  drop(entries: InflightEntry[]): void {
    this.dropped += entries.length;
    if (channels.leaseExpired.hasSubscribers) {
      for (const { lease } of entries) {
        channels.leaseExpired.publish({
          ...deliveryOf(lease),
          reason: `lease on event ${lease.event.id} too close to expiry to start; given back`,
        });
      }
    }
    this.giveBack(entries);
  }

  /**
   * Stop holding leases no handler started on and give them back. A lease someone
   * else claimed since answers stale_lease and is simply let go.
   */
  giveBack(entries: InflightEntry[]): void {
    const leases: Lease[] = [];
    for (const entry of entries) {
      if (!this.held.holds(entry)) continue;
      this.held.delete(entry.lease.leaseId);
      leases.push(entry.lease);
    }
    if (leases.length === 0) return;
    this.hooks.freed();
    for (let i = 0; i < leases.length; i += MAX_BATCH) {
      const chunk = leases.slice(i, i + MAX_BATCH);
      this.calls++;
      let call: ReturnType<Rheo['releaseMany']>;
      try {
        call = this.rheo.releaseMany(chunk);
      } catch (err) {
        call = Promise.reject(err);
      }
      call
        .then(
          (results) => {
            for (const r of results) if (r.ok) this.released++;
          },
          () => undefined, // not given back: they expire and come back as a later attempt
        )
        .finally(() => {
          this.calls--;
          this.hooks.answered();
        });
    }
  }
}
