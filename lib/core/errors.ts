/**
 * The closed vocabulary of failure codes. Every error that leaves nestjs-rheo is a
 * {@link RheoError} carrying one of these; a driver's own exception never leaks.
 */
export const RHEO_ERROR_CODES = [
  'stream_not_found',
  'group_not_found',
  'already_exists',
  'stale_lease',
  'receipt_mismatch',
  'lease_held',
  'invalid_argument',
  'payload_too_large',
  'confirm_required',
  'backend_unavailable',
  'ambiguous',
  'failed',
] as const;

/** One code of the closed error vocabulary. */
export type RheoErrorCode = (typeof RHEO_ERROR_CODES)[number];

/** Options of a {@link RheoError}. */
export interface RheoErrorOptions {
  /** The input field the error is about (for `invalid_argument`, `payload_too_large`, `confirm_required`). */
  field?: string;
  /** The underlying cause, e.g. the driver's exception. */
  cause?: unknown;
}

/**
 * The only error type nestjs-rheo throws. `code` is machine-readable and stable;
 * `field` names the offending input where there is one.
 */
export class RheoError extends Error {
  readonly code: RheoErrorCode;
  readonly field?: string;

  constructor(code: RheoErrorCode, message: string, options: RheoErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'RheoError';
    this.code = code;
    if (options.field !== undefined) this.field = options.field;
  }

  /** Shorthand for an `invalid_argument` error about `field`. */
  static invalid(field: string, problem: string): RheoError {
    return new RheoError('invalid_argument', `${field} ${problem}`, { field });
  }

  /** The `stream_not_found` error of `stream`: every layer and backend says it in these words. */
  static streamNotFound(stream: string, cause?: unknown): RheoError {
    return new RheoError('stream_not_found', `stream "${stream}" does not exist`, { cause });
  }

  /** The `group_not_found` error of `group` on `stream`: every layer and backend says it in these words. */
  static groupNotFound(stream: string, group: string, cause?: unknown): RheoError {
    return new RheoError('group_not_found', `group "${group}" does not exist on stream "${stream}"`, { cause });
  }

  /** The `already_exists` error of a stream created twice: every backend says it in these words. */
  static streamExists(stream: string, cause?: unknown): RheoError {
    return new RheoError('already_exists', `stream "${stream}" already exists`, { cause });
  }

  /** The `already_exists` error of a group created twice on `stream`: every backend says it in these words. */
  static groupExists(stream: string, group: string, cause?: unknown): RheoError {
    return new RheoError('already_exists', `group "${group}" already exists on stream "${stream}"`, { cause });
  }

  /** The `stale_lease` error of an operation (`ack`, `renew`, `release`, ...) whose lease the store no longer holds. */
  static staleLease(operation: string): RheoError {
    return new RheoError('stale_lease', `${operation}: the lease is no longer held (expired, settled or replaced)`);
  }

  /**
   * The `lease_held` error of an operator's change (skip, reschedule, cancelDelayed)
   * of a delivery in flight: a live lease, held until `expiresAt`, which the change
   * would otherwise run beside (docs/adr/048-skip-reschedule-cancel.md).
   */
  static leaseHeld(operation: string, eventId: string, group: string, expiresAt: Date): RheoError {
    return new RheoError(
      'lease_held',
      `${operation}: event "${eventId}" is in flight in group "${group}": its lease is held until ${expiresAt.toISOString()} (settle it, or retry after then)`,
    );
  }

  /** The `receipt_mismatch` error of an operation whose lease's receipt is not the delivery's. */
  static receiptMismatch(operation: string): RheoError {
    return new RheoError('receipt_mismatch', `${operation}: the receipt does not match the delivery`);
  }
}

/** True when `err` is a {@link RheoError}, optionally of one of `codes`. */
export function isRheoError(err: unknown, ...codes: RheoErrorCode[]): err is RheoError {
  return err instanceof RheoError && (codes.length === 0 || codes.includes(err.code));
}

/**
 * Turn anything thrown into a {@link RheoError}. Backends call this at their edge so
 * that driver exceptions never reach users; unknown failures become `failed`.
 */
export function toRheoError(err: unknown, code: RheoErrorCode = 'failed'): RheoError {
  if (err instanceof RheoError) return err;
  const message = err instanceof Error ? err.message : String(err);
  return new RheoError(code, message, { cause: err });
}
