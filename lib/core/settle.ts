import type { SettleOp, SettleResult } from '../backends/backend';
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

/**
 * A bulk settle in which one bad op never fails the others. A backend may settle a
 * batch in one statement or script, which one op can break for all (a value the
 * store refuses, a fault): when a batch of several ops fails as a whole with a
 * `definite` error, nothing of it was applied, so each op is settled again alone
 * and gets its own result (an op that was fenced answers `stale_lease` as it
 * would have). A whole batch whose outcome is unknown (`backend_unavailable`,
 * `ambiguous`) or lost is not retried: it may have been applied.
 */
export function settleEach(settle: (ops: SettleOp[]) => Promise<SettleResult[]>, ops: SettleOp[]): Promise<SettleResult[]> {
  const call = settle(ops);
  if (ops.length < 2) return call;
  return call.catch(async (err: unknown) => {
    if (classifySettleError(err) !== 'definite') throw err;
    // One at a time: a rare path, and one op per statement never contends with its neighbours.
    const results: SettleResult[] = [];
    for (const op of ops) {
      try {
        results.push((await settle([op]))[0]);
      } catch (e) {
        results.push({ ok: false, error: toRheoError(e) });
      }
    }
    return results;
  });
}

/**
 * The reason of a delivery the claim dead-letters because its lease expired on the
 * group's last attempt (`attempt >= maxAttempts`): an expiry counts as an attempt,
 * so a delivery nobody could settle ends like one nacked every time. Every backend
 * writes exactly this text (the SQL and Lua claims build it the same way).
 */
export function leaseExpiredReason(attempt: number, maxAttempts: number): string {
  return `lease expired on attempt ${attempt} of ${maxAttempts}`;
}
