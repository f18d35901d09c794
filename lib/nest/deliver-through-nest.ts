import type { MessageHandler } from '@nestjs/microservices';
import { isObservable, lastValueFrom } from 'rxjs';
import type { Outcome } from '../core/outcomes';
import { outcomeOfNestError, outcomeOfPipelineFailure } from './nest-error-outcome';
import { beginCapture } from './thrown-error-capture';
import { RheoBatchContext, type RheoContext } from './rheo-context';

/**
 * Run one delivery (an event, or a batch: then the payload is the array of its
 * payloads) through the handler Nest built (guards, interceptors, pipes,
 * the method, filters) and turn what came out into an outcome. Never throws.
 * Nest resolves to a value or to an Observable that must be subscribed for the
 * method to run at all; errors arrive serialised, so the original is taken from
 * the capture (docs/adr/011).
 */
export async function deliverThroughNest(handler: MessageHandler, ctx: RheoContext | RheoBatchContext): Promise<Outcome> {
  const capture = beginCapture(ctx);
  try {
    const payload = ctx instanceof RheoBatchContext ? ctx.leases.map((lease) => lease.event.payload) : ctx.event.payload;
    const result = await handler(payload, ctx);
    if (isObservable(result)) await lastValueFrom(result, { defaultValue: undefined });
    return capture.deliberate && capture.error ? outcomeOfNestError(capture.error.value) : { kind: 'ack' };
  } catch (failure) {
    return outcomeOfPipelineFailure(failure, capture);
  }
}
