import { RheoError } from '../core/errors';
import type { Outcome } from '../core/outcomes';
import type { OnTimeout } from './options';

/**
 * The reason a timed-out call's signal aborts with, and what `handler_error`
 * reports. Code `failed`: the handler did not finish, nothing is known of its effects.
 */
export function timeoutError(timeoutMs: number): RheoError {
  return new RheoError('failed', `timeout after ${timeoutMs} ms: the handler's result will be dropped`);
}

/** The outcome a timeout decides: a retry on the group's backoff, or a dead letter. */
export function timeoutOutcome(timeoutMs: number, onTimeout: OnTimeout): Outcome {
  const reason = `timeout after ${timeoutMs} ms`;
  return onTimeout === 'dead-letter' ? { kind: 'reject', reason } : { kind: 'nack', reason };
}

/** What a bounded call tells its Consumer beyond its result. */
export interface TimeoutHooks {
  /** The timer fired first: abort the call's signal; the call now counts as overdue. */
  expired(error: RheoError): void;
  /** The call ended after its timeout (`threw` or resolved): its result is dropped. */
  late(ended: 'resolved' | 'threw'): void;
}

/**
 * `call`, bounded by `timeoutMs`: settles as `call` does if it ends first,
 * otherwise resolves with `outcome` at the timeout (so spans and the settle see
 * the timeout as the call's outcome) after `hooks.expired`. The timer is a real
 * one: a handler's duration is wall time, not the store's clock.
 */
export function withTimeout<T>(call: Promise<T>, timeoutMs: number, outcome: Outcome, hooks: TimeoutHooks): Promise<T | Outcome> {
  return new Promise<T | Outcome>((resolve, reject) => {
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      hooks.expired(timeoutError(timeoutMs));
      resolve(outcome);
    }, timeoutMs);
    call.then(
      (value) => {
        if (timedOut) return hooks.late('resolved');
        clearTimeout(timer);
        resolve(value);
      },
      (err: unknown) => {
        if (timedOut) return hooks.late('threw');
        clearTimeout(timer);
        reject(err);
      },
    );
  });
}
