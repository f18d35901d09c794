import type { RheoError } from '../core/errors';
import type { Lease } from '../core/types';
import type { BatchRun } from './batch-run';
import type { LazyDeliveryControl } from './delivery-control';

/** One lease the Consumer holds: fetched, not yet settled (or given up). */
export interface InflightEntry {
  readonly lease: Lease;
  /** A settle for it is on its way: its result, not a renewal, decides what happens next. */
  settling: boolean;
  /** Latest known expiry (ms since epoch), moved by successful renewals. */
  expiresAt: number;
  /** Set when a handler starts on it: aborted when the lease is lost or a drain times out. */
  control: LazyDeliveryControl | null;
  /** Set when a batch handler starts on it: the batch's signal aborts only when all its leases are gone. */
  batch: BatchRun | null;
}

/**
 * The leases a Consumer holds, by lease id. Holding is what `maxDemand` bounds and
 * what renewals keep alive; an entry leaves on its settle's result, on a lost
 * renewal, when it is given back unhandled, or when the Consumer stops and lets the
 * rest expire.
 */
export class Inflight {
  private readonly entries = new Map<string, InflightEntry>();

  get size(): number {
    return this.entries.size;
  }

  add(lease: Lease): InflightEntry {
    const entry: InflightEntry = { lease, settling: false, expiresAt: lease.expiresAt.getTime(), control: null, batch: null };
    this.entries.set(lease.leaseId, entry);
    return entry;
  }

  /** The entry for `leaseId` while it is still held. */
  get(leaseId: string): InflightEntry | undefined {
    return this.entries.get(leaseId);
  }

  /** True while `entry` itself (not a newer entry of the same id) is held. */
  holds(entry: InflightEntry): boolean {
    return this.entries.get(entry.lease.leaseId) === entry;
  }

  /** Stop holding `leaseId`; true when it was held. */
  delete(leaseId: string): boolean {
    return this.entries.delete(leaseId);
  }

  /** Every held entry, for one renewal round or a sweep. */
  all(): InflightEntry[] {
    return [...this.entries.values()];
  }

  clear(): void {
    this.entries.clear();
  }
}

/** A handler started on `entry`'s lease and has not been told yet that the lease is gone. */
export function isBeingHandled(entry: InflightEntry): boolean {
  return entry.batch ? !entry.batch.isGone(entry.lease.leaseId) : entry.control !== null && !entry.control.aborted;
}

/**
 * The lease of a running delivery is no longer ours: abort its signal. A
 * batch's signal aborts only when none of its leases is left (the others are
 * still worth finishing).
 */
export function abortDelivery(entry: InflightEntry, error: RheoError): void {
  if (entry.batch) {
    if (entry.batch.leaseGone(entry.lease.leaseId)) entry.batch.control.abort(error);
  } else entry.control?.abort(error);
}
