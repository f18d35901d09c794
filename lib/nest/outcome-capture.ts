import type { CallHandler, ExecutionContext, NestInterceptor } from '@nestjs/common';
import { catchError, throwError, type Observable } from 'rxjs';
import { RheoContext } from './rheo-context';

/** What the innermost interceptor saw of one delivery. */
interface Capture {
  /** Guards passed and the interceptor chain reached us: pipes and the handler ran (or were about to). */
  reached: boolean;
  /** The original error thrown by a pipe, the handler, or an interceptor inside ours. */
  error?: { value: unknown };
}

const captures = new WeakMap<RheoContext<unknown>, Capture>();

/** Start recording for one delivery. */
export function beginCapture(ctx: RheoContext<unknown>): Capture {
  const capture: Capture = { reached: false };
  captures.set(ctx, capture);
  return capture;
}

/**
 * Installed by `@RheoConsumer` on every consumer. Nest's default RPC exception
 * filter replaces any error with `{ status: 'error', message }`, losing the
 * `RheoReject` / `RheoRetry` / validation error the outcome depends on; this
 * interceptor records the original before filters run, and leaves the error
 * flowing so user interceptors and filters still see it. See docs/adr/011.
 */
export class RheoOutcomeInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const ctx = context.switchToRpc().getContext();
    const capture = ctx instanceof RheoContext ? captures.get(ctx) : undefined;
    if (!capture) return next.handle();
    capture.reached = true;
    return next.handle().pipe(
      catchError((err: unknown) => {
        capture.error = { value: err };
        return throwError(() => err);
      }),
    );
  }
}

/** The one instance `@RheoConsumer` installs (stateless). */
export const rheoOutcomeInterceptor = new RheoOutcomeInterceptor();
