import { HttpException } from '@nestjs/common';
import { outcomeOfError, reasonOf, type Outcome } from '../core/outcomes';

/** HTTP statuses that say "ask again later", not "this input is wrong". */
const RETRYABLE_CLIENT_STATUSES = new Set([408, 425, 429]);

/**
 * Core's `outcomeOfError`, plus one Nest rule: an `HttpException` with a 4xx
 * status (what `ValidationPipe`, `ParseIntPipe` and friends throw for a bad
 * payload) is permanent, so the event is dead-lettered at once instead of being
 * retried `maxAttempts` times. 408/425/429 stay retryable. See docs/adr/011.
 */
export function outcomeOfNestError(err: unknown): Outcome {
  if (err instanceof HttpException) {
    const status = err.getStatus();
    if (status >= 400 && status < 500 && !RETRYABLE_CLIENT_STATUSES.has(status)) return { kind: 'reject', reason: reasonOf(err) };
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
