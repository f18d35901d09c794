// Which schema version a PostgreSQL schema is at, and bringing it to this
// release's (postgres/schema.ts), with the shared rules of sql/migrations.ts.
import { installedFrom, pendingVersions, requireLatest } from '../sql/migrations';
import { quoteIdent, TABLES, type TableNames } from '../sql/names';
import { query } from '../sql/statement';
import type { TypeormQueryable } from '../sql/external';
import { PG_SCHEMA, pgSchemaVersionTable } from './schema';

/** Serialises concurrent installs: every process of every app takes the same transaction-scoped advisory lock. */
export const PG_INSTALL_LOCK = `SELECT pg_advisory_xact_lock(hashtext($1))`;

/** True when `table` (a bare name, e.g. rheo_events) exists in `schema` (false when the schema does not). */
async function tableExists(on: TypeormQueryable, schema: string, table: string): Promise<boolean> {
  const [row] = await query<{ present: boolean }>(on, `SELECT to_regclass($1) IS NOT NULL AS present`, [
    `${quoteIdent(schema)}.${quoteIdent(table)}`,
  ]);
  return row.present;
}

/**
 * The installed version: the highest recorded, 1 for a schema made before
 * versions were recorded (it has rheo_events but no record), 0 for none.
 */
export async function installedPgVersion(on: TypeormQueryable, schema: string, t: TableNames): Promise<number> {
  let recorded: number | null = null;
  if (await tableExists(on, schema, TABLES.schemaVersion)) {
    const [row] = await query<{ v: number | null }>(on, `SELECT max(version) AS v FROM ${t.schemaVersion}`, []);
    recorded = row.v === null ? null : Number(row.v);
  }
  return installedFrom(recorded, recorded === null && (await tableExists(on, schema, TABLES.events)));
}

/**
 * `install: 'auto'`, inside the caller's transaction that holds the install
 * lock: apply every version above the installed one and record each (a
 * pre-versioning schema first gets version 1 recorded, since it has exactly
 * version 1's tables). All in that one transaction: a failed upgrade leaves the
 * schema as it was. Returns the versions applied.
 */
export async function upgradePg(on: TypeormQueryable, schema: string, t: TableNames, now: number): Promise<number[]> {
  const installed = await installedPgVersion(on, schema, t);
  const pending = pendingVersions(installed, PG_SCHEMA);
  const record = `INSERT INTO ${t.schemaVersion} (version, name, applied_at) VALUES ($1, $2, $3) ON CONFLICT (version) DO NOTHING`;
  if (installed > 0) {
    if (pending.length === 0) return [];
    await query(on, pgSchemaVersionTable(t), []);
    const first = PG_SCHEMA.find((v) => v.version === installed);
    if (first) await query(on, record, [installed, first.name, now]);
  }
  for (const v of pending) {
    for (const sql of v.up(t, schema)) await query(on, sql, []);
    // Version 1 makes the schema the record table lives in.
    await query(on, pgSchemaVersionTable(t), []);
    await query(on, record, [v.version, v.name, now]);
  }
  return pending.map((v) => v.version);
}

/** `install: 'none'`: the schema must already be at this release's version (made by rheoMigrations, or by another process). */
export async function requirePgVersion(on: TypeormQueryable, schema: string, t: TableNames): Promise<void> {
  requireLatest(await installedPgVersion(on, schema, t), PG_SCHEMA, { place: `schema "${schema}"`, field: 'schema' });
}
