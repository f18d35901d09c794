import type { Lease } from '../core/types';

/** One lease the Group holds: fetched, not yet settled (or given up). */
export interface InflightEntry {
  readonly lease: Lease;
  /** A settle for it is on its way: its result, not a renewal, decides what happens next. */
  settling: boolean;
  /** Latest known expiry (ms since epoch), moved by successful renewals. */
  expiresAt: number;
}

/**
 * The leases a Group holds, by lease id. Holding is what `maxDemand` bounds and
 * what renewals keep alive; an entry leaves on its settle's result, on a lost
 * renewal, or when the Group stops and lets the rest expire.
 */
export class Inflight {
  private readonly entries = new Map<string, InflightEntry>();

  get size(): number {
    return this.entries.size;
  }

  add(lease: Lease): InflightEntry {
    const entry: InflightEntry = { lease, settling: false, expiresAt: lease.expiresAt.getTime() };
    this.entries.set(lease.leaseId, entry);
    return entry;
  }

  /** The entry for `leaseId` while it is still held. */
  get(leaseId: string): InflightEntry | undefined {
    return this.entries.get(leaseId);
  }

  /** Stop holding `leaseId`; true when it was held. */
  delete(leaseId: string): boolean {
    return this.entries.delete(leaseId);
  }

  /** Every held lease, for one renewal round. */
  leases(): Lease[] {
    const out: Lease[] = [];
    for (const e of this.entries.values()) out.push(e.lease);
    return out;
  }

  clear(): void {
    this.entries.clear();
  }
}
