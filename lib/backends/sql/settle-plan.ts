import { RheoError } from '../../core/errors';
import type { GroupConfig, Lease } from '../../core/types';
import type { RenewResult, SettleOp, SettleResult } from '../backend';

/**
 * What a settle asks of the stored delivery. 'nack' becomes a retry or, when the
 * STORED attempt has reached maxAttempts, a dead letter: the store decides, never
 * the caller's copy of the lease.
 */
export type SettleAction = 'ack' | 'nack' | 'reject';

/** A lease resolved to the delivery row it names. */
export interface PlannedLease {
  /** Index of the op in the caller's batch. */
  i: number;
  stream: string;
  group: string;
  partition: number;
  sequence: number;
  leaseId: string;
  receipt: string;
}

/** One settle op, resolved to a row and an action. */
export interface PlannedSettle extends PlannedLease {
  action: SettleAction;
  /** For 'nack': the explicit delay, or null for the group's backoff at the stored attempt. */
  delayMs: number | null;
  reason: string | null;
  maxAttempts: number;
  retry: GroupConfig['retry'];
  /** The group orders by partition: settling this event makes the next one claimable, which no append announces (wake the waiters). */
  ordered: boolean;
}

/** The stored position a lease refers to, or null when the lease cannot name a delivery (then it is stale). */
export function leasePosition(lease: Lease<unknown>): { partition: number; sequence: number } | null {
  const p = lease.event?.partition;
  const s = lease.event?.sequence;
  if (!Number.isSafeInteger(p) || !Number.isSafeInteger(s) || p < 0 || s < 1 || p > 2_147_483_647) return null;
  return { partition: p, sequence: s };
}

/**
 * Resolve leases to rows. Leases the store need not see are answered here: an
 * unknown group, a lease that cannot name a delivery, or a second op on the same
 * lease in one batch (the first one settles or releases it, so the second finds it
 * stale). `what(i)` names the operation of lease i in its error.
 */
export function planLeases(
  leases: Array<Lease<unknown>>,
  what: (i: number) => string,
  groupOf: (stream: string, group: string) => GroupConfig | null,
): { planned: Array<PlannedLease & { config: GroupConfig }>; answered: Map<number, RheoError> } {
  return planEach(
    leases.length,
    (i) => leases[i],
    what,
    groupOf,
    (base, config) => ({ ...base, config }),
  );
}

/** Resolve settle ops to rows and actions (see {@link planLeases} for the ops answered without the store). */
export function planSettles(
  ops: SettleOp[],
  groupOf: (stream: string, group: string) => GroupConfig | null,
): { planned: PlannedSettle[]; answered: Map<number, RheoError> } {
  // The hot path of every SQL settle: objects are built field by field, once
  // (no rest/spread copies: measured ~4 µs an op on the SQLite bench).
  return planEach(
    ops.length,
    (i) => ops[i].lease,
    (i) => ops[i].kind,
    groupOf,
    (base, config, i): PlannedSettle => {
      const op = ops[i];
      return {
        i: base.i,
        stream: base.stream,
        group: base.group,
        partition: base.partition,
        sequence: base.sequence,
        leaseId: base.leaseId,
        receipt: base.receipt,
        action: op.kind,
        delayMs: op.kind === 'nack' && op.delayMs !== undefined ? op.delayMs : null,
        reason: op.kind === 'ack' ? null : op.reason,
        maxAttempts: config.maxAttempts,
        retry: config.retry,
        ordered: config.ordering === 'partition',
      };
    },
  );
}

/** The one loop behind planLeases and planSettles: resolve each lease, answer what the store need not see, build the rest. */
function planEach<P>(
  count: number,
  leaseAt: (i: number) => Lease<unknown>,
  what: (i: number) => string,
  groupOf: (stream: string, group: string) => GroupConfig | null,
  build: (base: PlannedLease, config: GroupConfig, i: number) => P,
): { planned: P[]; answered: Map<number, RheoError> } {
  const planned: P[] = [];
  const answered = new Map<number, RheoError>();
  const seen = new Set<string>();
  for (let i = 0; i < count; i++) {
    const lease = leaseAt(i);
    const config = groupOf(lease.stream, lease.group);
    if (!config) {
      answered.set(i, RheoError.groupNotFound(lease.stream, lease.group));
      continue;
    }
    const pos = leasePosition(lease);
    const key = pos && `${lease.stream}\u0000${lease.group}\u0000${pos.partition}\u0000${pos.sequence}`;
    if (!pos || !key || seen.has(key)) {
      answered.set(i, RheoError.staleLease(what(i)));
      continue;
    }
    seen.add(key);
    const base: PlannedLease = {
      i,
      stream: lease.stream,
      group: lease.group,
      partition: pos.partition,
      sequence: pos.sequence,
      leaseId: lease.leaseId,
      receipt: lease.receipt,
    };
    planned.push(build(base, config, i));
  }
  return { planned, answered };
}

/** Fill in the ops no row answered (`results` has one slot per op): the error planning gave them, else stale_lease. */
export function settled(
  results: Array<SettleResult | undefined>,
  answered: Map<number, RheoError>,
  what: (i: number) => string,
): SettleResult[] {
  return Array.from(results, (r, i) => r ?? { ok: false, error: answered.get(i) ?? RheoError.staleLease(what(i)) });
}

/** Renewals no row answered are stale. */
export function staleRenewals(results: Array<RenewResult | undefined>): RenewResult[] {
  return Array.from(results, (r) => r ?? { ok: false, error: RheoError.staleLease('renew') });
}
