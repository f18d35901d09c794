import type { Client } from 'pg';
import { DataSource } from 'typeorm';

/** The machine's PostgreSQL (override with RHEO_PG_URL). */
export const PG_URL = process.env.RHEO_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** A schema name unique to this test file and run. */
export function freshSchema(label: string): string {
  return `rheo_t_${label}_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
}

/** A DataSource on the test database (the test owns and destroys it). */
export async function pgDataSource(poolSize = 5): Promise<DataSource> {
  const ds = new DataSource({ type: 'postgres', url: PG_URL, poolSize });
  await ds.initialize();
  return ds;
}

/** Drop a test schema and everything in it. */
export async function dropSchema(schema: string): Promise<void> {
  const ds = await pgDataSource(1);
  try {
    await ds.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await ds.destroy();
  }
}

/**
 * Commit the transaction open on `holder` once a statement of another connection
 * waits for a lock it holds: a race staged by the locks, not by timing. Throws
 * `never` when no statement comes to wait.
 */
export async function commitOnceWaitedFor(holder: Client, never: string): Promise<void> {
  for (let i = 0; ; i++) {
    const { rows } = await holder.query(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE pg_blocking_pids(pid) @> ARRAY[pg_backend_pid()]`,
    );
    if (rows[0].n > 0) break;
    if (i > 500) throw new Error(never);
    await new Promise((r) => setTimeout(r, 10));
  }
  await holder.query('COMMIT');
}
