import type { SettleOutcome } from './diagnostics';
import { RheoError, toRheoError } from './errors';

/**
 * What the runtime does when a settle (ack, nack, reject) or a renew fails.
 * - `lost`: the lease is no longer ours (`stale_lease`, `receipt_mismatch`): drop it, never nack.
 * - `unknown`: the write may have happened (`backend_unavailable`, `ambiguous`): leave the lease to expire.
 * - `definite`: it certainly did not happen: a failed ack is nacked so the event comes back at once.
 */
export type SettleFailure = 'lost' | 'unknown' | 'definite';

/** The one settle classifier. */
export function classifySettleError(err: unknown): SettleFailure {
  const e: RheoError = toRheoError(err);
  switch (e.code) {
    case 'stale_lease':
    case 'receipt_mismatch':
      return 'lost';
    case 'backend_unavailable':
    case 'ambiguous':
      return 'unknown';
    default:
      return 'definite';
  }
}

/**
 * What a written settle did, the rule every backend applies: an ack is `ack`, a
 * reject `reject` (dead-lettered by the handler's decision), a nack on the group's
 * last attempt (`attempt >= maxAttempts`) `dead_letter`, any other nack `retry`.
 * `maxAttempts` unknown: a nack is reported as a retry.
 */
export function writtenOutcome(kind: 'ack' | 'nack' | 'reject', attempt: number, maxAttempts: number | undefined): SettleOutcome {
  if (kind !== 'nack') return kind;
  return maxAttempts !== undefined && attempt >= maxAttempts ? 'dead_letter' : 'retry';
}
