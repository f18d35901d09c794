import type { CallHandler, ExecutionContext, NestInterceptor } from '@nestjs/common';
import { catchError, EMPTY, throwError, type Observable } from 'rxjs';
import { RheoReject, RheoRetry } from '../core/outcomes';
import { reportedByRheo } from './quiet-rpc-errors';
import { isRheoDeliveryContext, type RheoDeliveryContext } from './rheo-context';

/** What the innermost interceptor saw of one delivery. */
interface Capture {
  /** Guards passed and the interceptor chain reached us: pipes and the handler ran (or were about to). */
  reached: boolean;
  /** The original error thrown by a pipe, the handler, or an interceptor inside ours. */
  error?: { value: unknown };
  /** The error was a deliberate outcome (RheoReject / RheoRetry), not a failure: it was not passed on to filters. */
  deliberate?: boolean;
}

const captures = new WeakMap<RheoDeliveryContext, Capture>();

/** What the interceptor recorded of a delivery: the original error, and whether it was a deliberate outcome. */
export function capturedError(ctx: RheoDeliveryContext): { error?: unknown; deliberate: boolean; reached: boolean } {
  const c = captures.get(ctx);
  return { error: c?.error?.value, deliberate: c?.deliberate === true, reached: c?.reached === true };
}

/** Start recording for one delivery. */
export function beginCapture(ctx: RheoDeliveryContext): Capture {
  const capture: Capture = { reached: false };
  captures.set(ctx, capture);
  return capture;
}

/**
 * Installed by `@RheoConsumer` on every consumer. Nest's default RPC exception
 * filter replaces any error with `{ status: 'error', message }`, losing the
 * `RheoReject` / `RheoRetry` / validation error the outcome depends on; this
 * interceptor records the original before filters run. Failures keep flowing
 * so outer interceptors and filters still see (and log) them; a `RheoReject` or
 * `RheoRetry` is a decision, not a failure, so it stops here and Nest does not
 * log it as an error. See docs/adr/011.
 */
export class RheoOutcomeInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const ctx = context.switchToRpc().getContext();
    const capture = isRheoDeliveryContext(ctx) ? captures.get(ctx) : undefined;
    if (!capture) return next.handle();
    capture.reached = true;
    return next.handle().pipe(
      catchError((err: unknown) => {
        capture.error = { value: err };
        if (err instanceof RheoReject || err instanceof RheoRetry) {
          capture.deliberate = true;
          return EMPTY;
        }
        // RheoServer logs it (one WARN line, the stack at DEBUG): Nest's fallback filter need not.
        reportedByRheo(err);
        return throwError(() => err);
      }),
    );
  }
}

/** The one instance `@RheoConsumer` installs (stateless). */
export const rheoOutcomeInterceptor = new RheoOutcomeInterceptor();
