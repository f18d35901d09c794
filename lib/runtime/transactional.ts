// Transactional consumers (`transactional: true`, docs/adr/030): the handler's
// writes and the ack of its delivery commit in one transaction of the store's own
// database, or neither does. The Consumer runs the handler through
// `runTransactional`; the backend (`ackInTransaction`) owns the transaction,
// since only it knows its connection (one shared connection on SQLite).
import type { TransactionalAck } from '../backends/backend';
import { RheoError } from '../core/errors';
import type { Outcome } from '../core/outcomes';
import { publishSettles, settlesObserved } from '../core/published';
import type { Rheo } from '../core/rheo';
import type { Lease } from '../core/types';
import type { DeliveryControl, ConsumerHandler } from './consumer-types';
import { ACK, outcomeOfValue, SETTLED_BY_HANDLER } from './handler-result';

/**
 * What a transactional run resolves with when its ack did not certainly commit
 * (the fence refused it, or the commit's fate is unknown): the Consumer treats it as
 * that ack's failed settle, through the one classifier (ADR 004).
 */
const ACK_FAILED: unique symbol = Symbol('rheo.transactionalAckFailed');

interface AckFailure {
  readonly [ACK_FAILED]: RheoError;
}

/** The error of a transactional run whose ack failed, else undefined. */
export function ackFailureOf(value: unknown): RheoError | undefined {
  return typeof value === 'object' && value !== null && ACK_FAILED in value ? (value as AckFailure)[ACK_FAILED] : undefined;
}

/**
 * The outcome a handler run resolved with, for telemetry (the process span,
 * `rheo:process`): an ack it wrote itself is an ack; one that failed is a retry
 * that names why; anything else as {@link outcomeOfValue} reads it.
 */
export function outcomeOfRun(value: unknown): Outcome | RheoError {
  if (value === SETTLED_BY_HANDLER) return ACK;
  const failed = ackFailureOf(value);
  if (failed) return { kind: 'nack', reason: `ack failed: ${failed.message}` };
  return outcomeOfValue(value);
}

/**
 * Refuse `transactional` on a backend that cannot ack inside a transaction (memory,
 * Redis, a third-party backend without `ackInTransaction`): at startup, never at
 * the first delivery.
 */
export function checkTransactional(rheo: Rheo): void {
  const backend = rheo.backend;
  if (backend.capabilities.mechanisms.transactionalAck && typeof backend.ackInTransaction === 'function') return;
  throw RheoError.invalid(
    'transactional',
    `needs a backend that writes the ack inside the handler's transaction (the TypeORM backends: PostgreSQL, SQLite); the ${backend.name} backend cannot`,
  );
}

/**
 * One delivery of a transactional consumer: the handler runs inside a
 * transaction of the store, with its EntityManager as `delivery.manager`. When it
 * resolves with an ack, the ack is written in that transaction and committed with
 * the handler's writes (resolves {@link SETTLED_BY_HANDLER}). Any other outcome
 * rolls the writes back and is returned for the Consumer to settle as usual; a throw
 * rolls them back and is rethrown (retried as today). `settling` is called just
 * before the ack is written: from then on, a renewal that finds the delivery gone
 * must leave the lease to this run (the Consumer's `entry.settling`).
 */
export async function runTransactional(
  rheo: Rheo,
  lease: Lease,
  control: DeliveryControl,
  handler: ConsumerHandler,
  settling: () => void,
): Promise<Outcome | void> {
  let value: Outcome | void = undefined;
  const result: TransactionalAck = await rheo.backend.ackInTransaction!(lease, async (manager) => {
    value = await handler(lease, withManager(control, manager));
    const outcome = outcomeOfValue(value);
    if (outcome instanceof RheoError || outcome.kind !== 'ack') return false;
    settling();
    return true;
  });
  switch (result.kind) {
    case 'committed':
      // Written inside the handler's transaction, through no settle call: told like any other ack.
      if (settlesObserved()) publishSettles([{ kind: 'ack', lease }], [{ ok: true }]);
      return SETTLED_BY_HANDLER as unknown as Outcome;
    case 'rolled_back':
      return value;
    case 'ack_failed':
      return { [ACK_FAILED]: result.error } as unknown as Outcome;
  }
}

/** The handler's view of its delivery: the Consumer's control (its signal read through), and the transaction. */
function withManager(control: DeliveryControl, manager: unknown): DeliveryControl {
  return {
    get signal() {
      return control.signal;
    },
    manager,
  };
}
