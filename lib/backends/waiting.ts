// Skip, reschedule and cancelDelayed (docs/adr/048-skip-reschedule-cancel.md), the part
// every backend shares: the words of each per-id refusal, so every backend says them alike.
import { RheoError } from '../core/errors';

/** The operations of the waiting section, as their refusals name them. */
export type WaitingOperation = 'skip' | 'reschedule' | 'cancelDelayed';

/** An id the stream does not hold (never appended, or trimmed). */
export function notInStream(operation: WaitingOperation, id: string, stream: string): RheoError {
  const field = operation === 'cancelDelayed' ? 'id' : 'ids';
  return RheoError.invalid(field, `holds "${id}", which is not an event of stream "${stream}" (${operation})`);
}

/** An event the group's cursor has not reached: nothing of it waits in the group. */
export function notOffered(operation: WaitingOperation, id: string, group: string): RheoError {
  return RheoError.invalid(
    'ids',
    `holds "${id}", which group "${group}" has not been offered yet: nothing of it waits (${operation}; cancelDelayed cancels a delayed event in every group)`,
  );
}

/** An event the group has settled: acked, dead-lettered or skipped. */
export function settledAlready(operation: WaitingOperation, id: string, group: string): RheoError {
  return RheoError.invalid(
    'ids',
    `holds "${id}", which group "${group}" has settled already (acked, dead-lettered or skipped) (${operation})`,
  );
}

/** cancelDelayed of an event appended without a delay. */
export function notDelayed(id: string): RheoError {
  return RheoError.invalid('id', `"${id}" is not a delayed event (appended without deliverAt or delayMs): skip it per group instead`);
}

/** What a skip made by cancelDelayed records when the caller gave no reason. */
export const CANCELLED_REASON = 'delayed event cancelled';

/**
 * reschedule of a delivery waiting for its key (docs/adr/049-flow-control.md): its
 * turn comes when its key has a place, so a time of its own would run it beside
 * the key's open delivery. Skip it, or reschedule the key's open delivery.
 */
export function waitsForKey(id: string, group: string): RheoError {
  return RheoError.invalid(
    'ids',
    `holds "${id}", which waits in group "${group}" for a place of its key (reschedule): it runs when the key's earlier delivery ends; skip it, or reschedule that one`,
  );
}
