import { HttpException } from '@nestjs/common';
import { MAX_REASON_LENGTH } from '../core/limits';
import { outcomeOfError, reasonOf, type Outcome } from '../core/outcomes';

/** HTTP statuses that say "ask again later", not "this input is wrong". */
const RETRYABLE_CLIENT_STATUSES = new Set([408, 425, 429]);

/** One entry of an `HttpException` response's `message`, as text. */
function detailText(item: unknown): string {
  if (typeof item === 'string') return item;
  try {
    return JSON.stringify(item) ?? String(item);
  } catch {
    return String(item);
  }
}

/**
 * The reason for an `HttpException`: its message, followed by what its response
 * body's `message` adds. `ValidationPipe` throws `Bad Request Exception` with the
 * validator's findings only in the body (`{ message: ['amount must be a positive
 * number', ...] }`); without them a dead letter cannot say which field was wrong.
 * Bounded to `MAX_REASON_LENGTH`.
 */
function reasonOfHttpException(err: HttpException): string {
  const response = err.getResponse();
  const raw = typeof response === 'object' && response !== null ? (response as { message?: unknown }).message : undefined;
  const items = Array.isArray(raw) ? raw : raw === undefined ? [] : [raw];
  let text = err.message || err.name;
  let first = true;
  for (const item of items) {
    const detail = detailText(item);
    if (detail === '' || detail === err.message) continue;
    text += (first ? ': ' : '; ') + detail;
    first = false;
    if (text.length > MAX_REASON_LENGTH) break;
  }
  return reasonOf(text);
}

/**
 * Core's `outcomeOfError`, plus one Nest rule: an `HttpException` with a 4xx
 * status (what `ValidationPipe`, `ParseIntPipe` and friends throw for a bad
 * payload) is permanent, so the event is dead-lettered at once instead of being
 * retried `maxAttempts` times. 408/425/429 stay retryable. The reason of an
 * `HttpException` keeps the messages of its response body
 * (`Bad Request Exception: amount must be a positive number; currency must be a string`).
 * See docs/adr/011.
 */
export function outcomeOfNestError(err: unknown): Outcome {
  if (err instanceof HttpException) {
    const status = err.getStatus();
    const reason = reasonOfHttpException(err);
    if (status >= 400 && status < 500 && !RETRYABLE_CLIENT_STATUSES.has(status)) return { kind: 'reject', reason };
    return { kind: 'nack', reason };
  }
  return outcomeOfError(err);
}

/** Nest's RPC filters serialise errors to `{ status: 'error', message }`. */
function serialisedMessage(value: unknown): string {
  if (typeof value === 'object' && value !== null && typeof (value as { message?: unknown }).message === 'string') {
    return reasonOf((value as { message: string }).message);
  }
  return reasonOf(value);
}

/** Nest's message when a guard returns false. */
const FORBIDDEN_MESSAGE = 'Forbidden resource';

/**
 * The outcome of a delivery whose Nest pipeline (guards, interceptors, pipes,
 * handler, filters) failed with `failure`:
 * 1. an `Error` coming out of the pipeline was rethrown by a filter: it decides;
 * 2. else Nest's default filter serialised it: the original recorded by
 *    {@link RheoOutcomeInterceptor} decides;
 * 3. else it failed before the handler's interceptor ran: a guard that said no
 *    dead-letters (retrying cannot change its mind), anything else retries.
 */
export function outcomeOfPipelineFailure(failure: unknown, capture: { reached: boolean; error?: { value: unknown } }): Outcome {
  if (failure instanceof Error) return outcomeOfNestError(failure);
  if (capture.error) return outcomeOfNestError(capture.error.value);
  const message = serialisedMessage(failure);
  if (!capture.reached && message === FORBIDDEN_MESSAGE) return { kind: 'reject', reason: `guard denied: ${FORBIDDEN_MESSAGE}` };
  return { kind: 'nack', reason: message };
}
