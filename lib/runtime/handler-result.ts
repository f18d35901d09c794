import { RheoError } from '../core/errors';
import { MAX_DELAY_MS } from '../core/limits';
import { boundReason, type Outcome, reasonOf } from '../core/outcomes';
import type { SettleRequest } from '../core/rheo';
import type { Lease } from '../core/types';

/** The outcome of a handler that resolved with nothing. */
export const ACK: Outcome = { kind: 'ack' };

/**
 * What a handler resolves with when it wrote its own ack, inside the transaction
 * that holds its business writes (the transactional consumers of the SQL
 * backends): the Consumer counts the delivery acked and writes nothing more.
 */
export const SETTLED_BY_HANDLER: unique symbol = Symbol('rheo.settledByHandler');

// The facade refuses delays above MAX_DELAY_MS; a handler's RheoRetry could ask
// for more (or for NaN), and one bad delay must not fail the other settles of its batch.

function boundedReason(value: unknown): string {
  return typeof value === 'string' ? boundReason(value) : reasonOf(value);
}

function boundedDelay(value: unknown): number | undefined {
  if (typeof value !== 'number' || !Number.isFinite(value)) return undefined;
  return Math.min(MAX_DELAY_MS, Math.max(0, Math.round(value)));
}

/**
 * What a handler resolved with, as an outcome the facade accepts: `undefined`
 * (or `null`) acks, a well-formed {@link Outcome} is kept with its reason and
 * delay bounded, anything else is an error (the Consumer nacks it and reports it).
 */
export function outcomeOfValue(value: unknown): Outcome | RheoError {
  if (value === undefined || value === null) return ACK;
  if (typeof value === 'object') {
    const o = value as { kind?: unknown; reason?: unknown; delayMs?: unknown };
    if (o.kind === 'ack') return ACK;
    if (o.kind === 'reject') return { kind: 'reject', reason: boundedReason(o.reason ?? 'rejected') };
    if (o.kind === 'nack') {
      const delayMs = boundedDelay(o.delayMs);
      const reason = boundedReason(o.reason ?? 'retry');
      return delayMs === undefined ? { kind: 'nack', reason } : { kind: 'nack', reason, delayMs };
    }
  }
  return new RheoError('invalid_argument', `the handler resolved with ${reasonOf(value)}; expected nothing or an Outcome`, {
    field: 'outcome',
  });
}

/** An outcome of a throw, with its delay bounded like {@link outcomeOfValue}'s. */
export function bounded(outcome: Outcome): Outcome {
  if (outcome.kind !== 'nack' || outcome.delayMs === undefined) return outcome;
  const delayMs = boundedDelay(outcome.delayMs);
  return delayMs === undefined ? { kind: 'nack', reason: outcome.reason } : { ...outcome, delayMs };
}

/** The facade's settle request for `lease` settled by `outcome`. */
export function settleRequest(lease: Lease, outcome: Outcome): SettleRequest {
  switch (outcome.kind) {
    case 'ack':
      return { kind: 'ack', lease };
    case 'reject':
      return { kind: 'reject', lease, reason: outcome.reason };
    case 'nack':
      return outcome.delayMs === undefined
        ? { kind: 'nack', lease, reason: outcome.reason }
        : { kind: 'nack', lease, reason: outcome.reason, delayMs: outcome.delayMs };
  }
}

/**
 * The nack that follows a settle that definitely failed (nothing of it was
 * written): it records why, and counts the attempt, so a delivery whose settles
 * keep failing is dead-lettered at `maxAttempts` with the error as its reason
 * instead of coming back forever (docs/adr/035-every-delivery-ends.md). A failed
 * ack comes back at once (the handler's work is done; only the ack is missing), a
 * failed nack after the delay it asked for, a failed reject after the group's backoff.
 */
export function nackAfterFailedSettle(failed: Outcome, error: RheoError): Outcome {
  const reason = boundedReason(`settle failed: ${error.code}: ${error.message}`);
  if (failed.kind === 'ack') return { kind: 'nack', reason, delayMs: 0 };
  return failed.kind === 'nack' && failed.delayMs !== undefined
    ? { kind: 'nack', reason, delayMs: failed.delayMs }
    : { kind: 'nack', reason };
}
