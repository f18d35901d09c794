// Request validation of the delivery operations (fetch, renew, settle, release):
// the leases the facade issues and the settles it is given, the settle path's
// checks kept as cheap as the hottest path of the library needs.
import type { SettleOp } from '../backends/backend';
import { RheoError } from './errors';
import { newId } from './ids';
import { DEFAULT_FETCH_LIMIT, MAX_DELAY_MS, MAX_FETCH_LIMIT, MAX_PARTITIONS } from './limits';
import { checkBatch, checkLeaseMs, checkOptions, checkPartition, checkReason } from './requests';
import type { Lease } from './types';
import { checkInt, checkKeys, checkName, checkObject, hasOnlyKeys, isPlainObject, keySet } from './validate';

/** Options of fetch. */
export interface FetchOptions {
  /** Most leases to return, 1..1000. Default 10. */
  limit?: number;
  /** Lease time-to-live, ms. Default 30000. */
  leaseMs?: number;
  consumerId?: string;
  partitions?: number[];
}

/** Options of nack. */
export interface NackOptions {
  reason?: string;
  /** Redeliver after this delay; the group's backoff when absent. */
  delayMs?: number;
}

/** Options of reject. */
export interface RejectOptions {
  /** Why the event is dead-lettered; stored with the dead letter. Default `rejected`. */
  reason?: string;
}

/** One settle of a bulk call: `{ lease, outcome }`. */
export type SettleRequest =
  | { kind: 'ack'; lease: Lease<unknown> }
  | { kind: 'nack'; lease: Lease<unknown>; reason?: string; delayMs?: number }
  | { kind: 'reject'; lease: Lease<unknown>; reason?: string };

/**
 * Leases this process fetched through a facade. They are frozen when issued, so
 * their shape is known good and settling them skips re-validation: the settle
 * path is the hottest in the library. Anything else is checked field by field.
 */
const issued = new WeakSet<object>();

/** Mark a lease as issued by a facade (and freeze it); returns it. */
export function issueLease<L extends Lease<unknown>>(lease: L): L {
  // Its own Date: the runtime moves a held lease's expiry in place as renewals
  // succeed, and a backend may have built one Date for a whole batch.
  lease.expiresAt = new Date(lease.expiresAt.getTime());
  Object.freeze(lease.event);
  issued.add(Object.freeze(lease));
  return lease;
}

/** True when `lease` came from a facade's fetch or renew. */
export function isIssued(lease: unknown): boolean {
  return typeof lease === 'object' && lease !== null && issued.has(lease);
}

/** A lease to settle, renew or release: one this process issued, or one whose every field checks out. */
export function checkLease(field: string, lease: unknown): Lease<unknown> {
  if (isIssued(lease)) return lease as Lease<unknown>;
  const l = checkObject(field, lease) as unknown as Lease<unknown>;
  checkName(`${field}.leaseId`, l.leaseId);
  checkName(`${field}.stream`, l.stream);
  checkName(`${field}.group`, l.group);
  if (typeof l.receipt !== 'string') throw RheoError.invalid(`${field}.receipt`, 'must be a string');
  checkObject(`${field}.event`, l.event);
  checkName(`${field}.event.id`, l.event.id);
  checkInt(`${field}.attempt`, l.attempt, 1);
  checkPartition(`${field}.event.partition`, l.event.partition, MAX_PARTITIONS);
  checkInt(`${field}.event.sequence`, l.event.sequence, 1);
  return l;
}

/** Leases of a bulk renew or release call. */
export function checkLeases(leases: Lease<unknown>[]): Lease<unknown>[] {
  checkBatch('leases', leases, 'leases');
  leases.forEach((l, i) => checkLease(leases.length === 1 ? 'lease' : `leases[${i}]`, l));
  return leases;
}

const SETTLE_KEYS = {
  ack: keySet('a key of an ack', ['kind', 'lease']),
  nack: keySet('a key of a nack', ['kind', 'lease', 'reason', 'delayMs']),
  reject: keySet('a key of a reject', ['kind', 'lease', 'reason']),
};

/** Settles of a bulk call, as backend ops; all checked before any is applied. */
export function checkSettles(requests: SettleRequest[]): SettleOp[] {
  checkBatch('settles', requests, 'settles');
  return requests.map((r, i) => {
    // The runtime's settles are acks of leases it was issued: nothing to check, and no field name to build.
    if (isPlainObject(r) && r.kind === 'ack' && isIssued(r.lease) && hasOnlyKeys(r, SETTLE_KEYS.ack))
      return { kind: 'ack', lease: r.lease };
    const at = requests.length === 1 ? '' : `settles[${i}].`;
    checkObject(`settles[${i}]`, r);
    if (r.kind === 'ack' || r.kind === 'nack' || r.kind === 'reject') checkKeys(`settles[${i}]`, r, SETTLE_KEYS[r.kind]);
    const lease = checkLease(`${at}lease`, r.lease);
    switch (r.kind) {
      case 'ack':
        return { kind: 'ack', lease };
      case 'nack': {
        const op: SettleOp = { kind: 'nack', lease, reason: checkReason(`${at}reason`, r.reason, 'retry') };
        if (r.delayMs !== undefined) op.delayMs = checkInt(`${at}delayMs`, r.delayMs, 0, MAX_DELAY_MS);
        return op;
      }
      case 'reject':
        return { kind: 'reject', lease, reason: checkReason(`${at}reason`, r.reason, 'rejected') };
      default:
        throw RheoError.invalid(`settles[${i}].kind`, "must be 'ack', 'nack' or 'reject'");
    }
  });
}

/** Fetch options with defaults; the partition filter is checked once the stream is known. */
export function checkFetchOptions(options: FetchOptions): { limit: number; leaseMs: number; consumerId: string } {
  checkOptions('fetch', options);
  const limit = options.limit === undefined ? DEFAULT_FETCH_LIMIT : checkInt('limit', options.limit, 1, MAX_FETCH_LIMIT);
  const leaseMs = checkLeaseMs(options.leaseMs);
  const consumerId = options.consumerId === undefined ? newId() : checkName('consumerId', options.consumerId);
  return { limit, leaseMs, consumerId };
}
