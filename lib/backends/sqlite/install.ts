// Which schema version a SQLite database is at, and bringing it to this
// release's (sqlite/schema.ts; the version rules are sql/migrations.ts's, shared
// with PostgreSQL). Everything here is synchronous and runs inside the caller's
// `BEGIN IMMEDIATE` transaction: starters racing on one file queue on the write
// lock, and the second finds the work done.
import { RheoError } from '../../core/errors';
import type { SqliteDatabase } from '../sql/external';
import { installedFrom, pendingVersions, requireLatest } from '../sql/migrations';
import { TABLES, type TableNames } from '../sql/names';
import { SQLITE_SCHEMA, sqliteSchemaVersionTable } from './schema';

function tableExists(db: SqliteDatabase, name: string): boolean {
  return db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?`).get(name) !== undefined;
}

/** The installed version: the highest recorded, 1 for a database made before versions were recorded, 0 for none. */
export function installedSqliteVersion(db: SqliteDatabase, t: TableNames): number {
  let recorded: number | null = null;
  if (tableExists(db, TABLES.schemaVersion)) {
    const row = db.prepare(`SELECT max(version) AS v FROM ${t.schemaVersion}`).get() as { v: number | null } | undefined;
    recorded = row?.v ?? null;
  }
  return installedFrom(recorded === null ? null : Number(recorded), tableExists(db, TABLES.events));
}

/**
 * `install: 'auto'`: apply every version above the installed one, recording each
 * (a pre-versioning database first gets version 1 recorded: it has exactly
 * version 1's tables). Refuses a database of a newer release. Returns the
 * versions applied.
 */
export function upgradeSqlite(db: SqliteDatabase, t: TableNames, now: number): number[] {
  const installed = installedSqliteVersion(db, t);
  const pending = pendingVersions(installed, SQLITE_SCHEMA);
  if (pending.length === 0) return [];
  db.exec(sqliteSchemaVersionTable(t));
  const record = db.prepare(`INSERT OR IGNORE INTO ${t.schemaVersion} (version, name, applied_at) VALUES (?, ?, ?)`);
  for (const v of SQLITE_SCHEMA) if (v.version <= installed) record.run(v.version, v.name, now);
  for (const v of pending) {
    for (const sql of v.up(t, '')) db.exec(sql);
    record.run(v.version, v.name, now);
  }
  return pending.map((v) => v.version);
}

/**
 * `install: 'none'`: the tables must already be at this release's version (rheoMigrations, or another process's
 * install). Only reads: a file that is no rheo store (another application's database, an empty file) is refused
 * as it is, and one that is no SQLite database at all is said to be so. `file` names it in the refusal.
 */
export function requireSqliteVersion(db: SqliteDatabase, t: TableNames, file: string): void {
  let installed: number;
  try {
    installed = installedSqliteVersion(db, t);
  } catch (err) {
    if ((err as { code?: unknown }).code !== 'SQLITE_NOTADB') throw err;
    throw new RheoError('failed', `file ${file} is not a SQLite database, so not a rheo store`, { cause: err });
  }
  requireLatest(installed, SQLITE_SCHEMA, { place: `file ${file}`, field: 'database' });
}
