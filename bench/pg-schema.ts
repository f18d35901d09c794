// The benches' PostgreSQL: where it is, and how a bench drops the schema it wrote.
import { Client } from 'pg';

export const PG_URL = process.env.RHEO_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** Drop `schema` and everything in it, on a connection opened (and closed) for it. */
export async function dropSchema(schema: string, url: string = PG_URL): Promise<void> {
  const c = new Client({ connectionString: url });
  await c.connect();
  try {
    await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await c.end();
  }
}
