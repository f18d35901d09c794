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
