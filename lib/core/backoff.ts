import type { RetryBackoff } from './types';

/** The defaults of a group's retry backoff. */
export const DEFAULT_RETRY: Required<RetryBackoff> = { initialMs: 1000, factor: 2, maxMs: 60_000 };

/**
 * Exponential backoff: `initialMs * factor^(step - 1)`, capped at `maxMs`. `step`
 * counts from 1. Used for redelivery after a nack (step = the attempt that
 * failed) and, with its own policy, for fetch errors in the runtime.
 */
export function backoffDelay(policy: Required<RetryBackoff>, step: number): number {
  const n = Math.max(1, Math.floor(step));
  const raw = policy.initialMs * Math.pow(policy.factor, n - 1);
  return Math.min(policy.maxMs, Math.round(raw));
}
