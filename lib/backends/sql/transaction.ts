import { RheoError } from '../../core/errors';
import type { TypeormDataSource, TypeormEntityManager } from './external';

/**
 * Check the `manager` of a transactional append (outbox): it must be an
 * EntityManager of a transaction that is running now, on a DataSource of the same
 * database type as the backend's, or the event could not commit together with the
 * caller's rows.
 */
export function transactionManager(manager: unknown, dataSource: TypeormDataSource): TypeormEntityManager {
  const m = manager as Partial<TypeormEntityManager> | null;
  if (!m || typeof m !== 'object' || typeof m.query !== 'function') {
    throw RheoError.invalid('options.manager', 'must be a TypeORM EntityManager');
  }
  if (!m.queryRunner || !m.queryRunner.isTransactionActive) {
    throw RheoError.invalid(
      'options.manager',
      'must be the EntityManager of a running transaction (dataSource.transaction(manager => ...))',
    );
  }
  const type = (m.queryRunner as { connection?: TypeormDataSource }).connection?.options?.type;
  if (type !== undefined && type !== dataSource.options.type) {
    throw RheoError.invalid('options.manager', `belongs to a ${String(type)} DataSource, not ${dataSource.options.type}`);
  }
  return m as TypeormEntityManager;
}

/**
 * A transactional consumer's handler (ackInTransaction), run in the transaction
 * the backend opened: a throw rolls back and is rethrown (retried as a handler
 * failure); `false` (an outcome other than ack) rolls back. True: go on to the
 * fenced ack and the commit.
 */
export async function runHandlerWork(
  work: (manager: unknown) => Promise<boolean>,
  manager: unknown,
  rollback: () => Promise<unknown> | undefined,
): Promise<boolean> {
  let commit: boolean;
  try {
    commit = await work(manager);
  } catch (err) {
    await rollback();
    throw err;
  }
  if (!commit) await rollback();
  return commit;
}
