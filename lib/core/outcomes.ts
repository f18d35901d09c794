import { MAX_REASON_LENGTH } from './limits';
/**
 * Throw from a handler to dead-letter the event now: retrying cannot help.
 * The message is stored as the dead-letter reason.
 */
export class RheoReject extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = 'RheoReject';
  }
}

/** Options of {@link RheoRetry}. */
export interface RheoRetryOptions {
  /** Redeliver after this delay instead of the group's backoff. */
  delayMs?: number;
}

/**
 * Throw from a handler to retry the event, optionally after `delayMs`. Counts as
 * an attempt: at `maxAttempts` the event is dead-lettered.
 */
export class RheoRetry extends Error {
  readonly delayMs?: number;
  constructor(reason: string, options: RheoRetryOptions = {}) {
    super(reason);
    this.name = 'RheoRetry';
    if (options.delayMs !== undefined) this.delayMs = options.delayMs;
  }
}

/** How a handler's result settles its lease. */
export type Outcome = { kind: 'ack' } | { kind: 'nack'; reason: string; delayMs?: number } | { kind: 'reject'; reason: string };

/** A diagnostic string for anything thrown, bounded to {@link MAX_REASON_LENGTH}. */
export function reasonOf(err: unknown): string {
  let text: string;
  if (err instanceof Error) text = err.message || err.name;
  else if (typeof err === 'string') text = err;
  else {
    try {
      text = JSON.stringify(err) ?? String(err);
    } catch {
      text = String(err);
    }
  }
  return boundReason(text);
}

/**
 * `text` as every backend can store it, the one rule for reasons (docs/adr/035):
 * cut to {@link MAX_REASON_LENGTH}, made well-formed (a cut through a surrogate
 * pair, or a lone surrogate in a thrown message, would otherwise be stored
 * differently by each backend's UTF-8 encoder), and each U+0000 replaced by
 * U+FFFD (PostgreSQL's text refuses U+0000, and V8's JSON.parse messages quote
 * the character they stopped at). What reads it back, on any backend, is this.
 */
export function boundReason(text: string): string {
  let cut = text.length > MAX_REASON_LENGTH ? text.slice(0, MAX_REASON_LENGTH) : text;
  if (!cut.isWellFormed()) cut = cut.toWellFormed();
  return cut.includes('\u0000') ? cut.replaceAll('\u0000', '\uFFFD') : cut;
}

/**
 * The one mapping from "what the handler did" to an outcome: return -> ack;
 * `RheoReject` -> reject; `RheoRetry` -> nack with its delay; anything else -> nack
 * with the group's backoff, the error's message as reason.
 */
export function outcomeOfError(err: unknown): Outcome {
  if (err instanceof RheoReject) return { kind: 'reject', reason: reasonOf(err) };
  if (err instanceof RheoRetry) {
    return err.delayMs === undefined
      ? { kind: 'nack', reason: reasonOf(err) }
      : { kind: 'nack', reason: reasonOf(err), delayMs: err.delayMs };
  }
  return { kind: 'nack', reason: reasonOf(err) };
}
