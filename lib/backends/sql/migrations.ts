import { RheoError } from '../../core/errors';
import { PG_SCHEMA, pgSchemaVersionTable } from '../postgres/schema';
import { SQLITE_SCHEMA, sqliteDropAll, sqliteSchemaVersionTable } from '../sqlite/schema';
import type { TypeormMigration, TypeormMigrationClass, TypeormQueryRunner } from './external';
import { checkKeys, checkObject, keySet } from '../../core/validate';
import { checkSchemaName, pgTables, sqliteTables, TABLES, type TableNames } from './names';
import type { SchemaVersion } from './schema-version';

// Numbered schema versions, shared by both dialects: which versions a database
// still needs, the errors when it is ahead of or behind this release, and the
// TypeORM migrations (one class per version) for hosts that run migrations.

/** The highest version of a dialect's list: what this release reads and writes. */
export function latestVersion(all: readonly SchemaVersion[]): number {
  return all.reduce((m, v) => Math.max(m, v.version), 0);
}

/** A database made by a newer release: its tables may mean things this one does not know, so nothing touches it. */
export function newerSchemaError(installed: number, latest: number): RheoError {
  return new RheoError(
    'failed',
    `the rheo tables are at schema version ${installed}, which is newer than this nestjs-rheo knows (${latest}): upgrade nestjs-rheo`,
  );
}

/** Where a backend looked for its tables: `schema "rheo"`, `file /var/lib/app.db`, and the option that named it. */
export interface TablesPlace {
  place: string;
  field: string;
}

/**
 * `install: 'none'` on a database that is not at this release's version. When
 * nothing was found, the message names the place looked in and the error its
 * option (`field`): the tables may well be somewhere else.
 */
export function outdatedSchemaError(installed: number, latest: number, where?: TablesPlace): RheoError {
  const state = installed === 0 ? `are not installed${where ? ` in ${where.place}` : ''}` : `are at schema version ${installed}`;
  return new RheoError(
    'failed',
    `the rheo tables ${state}, and this nestjs-rheo needs version ${latest} with install: 'none': ` +
      `run rheoMigrations() (or start once with install: 'auto')`,
    installed === 0 && where ? { field: where.field } : {},
  );
}

/** The versions above `installed`, in order; refuses a database newer than `all` knows. */
export function pendingVersions(installed: number, all: readonly SchemaVersion[]): SchemaVersion[] {
  const latest = latestVersion(all);
  if (installed > latest) throw newerSchemaError(installed, latest);
  return all.filter((v) => v.version > installed).sort((a, b) => a.version - b.version);
}

/** `install: 'none'`: the installed version must be exactly this release's (`where`: see {@link outdatedSchemaError}). */
export function requireLatest(installed: number, all: readonly SchemaVersion[], where?: TablesPlace): void {
  const latest = latestVersion(all);
  if (installed > latest) throw newerSchemaError(installed, latest);
  if (installed < latest) throw outdatedSchemaError(installed, latest, where);
}

/**
 * The installed version from what a database holds: the highest recorded one; 1
 * for a database made before versions were recorded (it has rheo_events, and
 * exactly version 1's tables); 0 for none.
 */
export function installedFrom(recorded: number | null, hasEvents: boolean): number {
  if (recorded !== null) return recorded;
  return hasEvents ? 1 : 0;
}

// ---------------------------------------------------------------- TypeORM migrations

/** Options of {@link rheoMigrations}. */
export interface RheoMigrationsOptions {
  /** PostgreSQL schema of the tables (the backend's `schema`). Default `public`. Ignored on SQLite. */
  schema?: string;
}

const SCHEMA_ONLY = keySet('a rheoMigrations option', ['schema']);

/**
 * The migration class of each version, by version. TypeORM orders migrations by
 * the 13-digit timestamp that ends the name, and remembers them by name: a
 * released entry is never renamed (version 1 keeps the name it had before
 * versions existed, so a host that ran it then does not run it again).
 */
const MIGRATION_NAMES: Readonly<Record<number, string>> = {
  1: 'RheoCreateTables1764374400000',
  2: 'RheoFlatCost1796083200000',
  3: 'RheoDelayedEvents1798761600000',
  4: 'RheoPauseGroups1801440000000',
  5: 'RheoSkipRescheduleCancel1803859200000',
  6: 'RheoFlowControl1806537600000',
};

interface Dialect {
  versions: readonly SchemaVersion[];
  tables(schema: string): TableNames;
  versionTable(t: TableNames): string;
  /** Record a version (ignoring one already recorded): parameters version, name, applied_at. */
  record(t: TableNames): string;
  /** What version 1's down leaves behind when the dialect's version 1 has no down of its own. */
  dropAll(t: TableNames): string[];
}

const DIALECTS: Record<string, Dialect> = {
  postgres: {
    versions: PG_SCHEMA,
    tables: (schema) => pgTables(schema),
    versionTable: pgSchemaVersionTable,
    record: (t) => `INSERT INTO ${t.schemaVersion} (version, name, applied_at) VALUES ($1, $2, $3) ON CONFLICT (version) DO NOTHING`,
    dropAll: (t) => Object.keys(TABLES).map((k) => `DROP TABLE IF EXISTS ${t[k as keyof TableNames]}`),
  },
  'better-sqlite3': {
    versions: SQLITE_SCHEMA,
    tables: () => sqliteTables(),
    versionTable: sqliteSchemaVersionTable,
    record: (t) => `INSERT OR IGNORE INTO ${t.schemaVersion} (version, name, applied_at) VALUES (?, ?, ?)`,
    dropAll: sqliteDropAll,
  },
};

function dialectOf(qr: TypeormQueryRunner): Dialect {
  const type = qr.connection.options.type;
  const d = DIALECTS[type];
  if (!d) throw new RheoError('invalid_argument', `rheo migrations support postgres and better-sqlite3, not ${String(type)}`);
  return d;
}

/** The class that applies (and undoes) version `version` of whichever dialect the DataSource speaks. */
function migrationOf(version: number, schema: string): TypeormMigrationClass {
  const name = MIGRATION_NAMES[version];
  if (name === undefined) throw new RheoError('failed', `schema version ${version} has no migration name (sql/migrations.ts)`);
  const Migration = class implements TypeormMigration {
    name = name;
    /**
     * The version's DDL, then its record, and the records of the versions
     * before it when missing: a database migrated before versions were recorded
     * gets version 1 recorded when version 2 runs.
     */
    async up(qr: TypeormQueryRunner): Promise<void> {
      const d = dialectOf(qr);
      const t = d.tables(schema);
      const v = d.versions.find((x) => x.version === version);
      if (!v) return; // the dialect has no such version (yet): nothing to do
      // A database `install: 'auto'` already brought to this version (a host that switched to migrations later)
      // only gets the records. Version 1 creates the schema the version table lives in, and is idempotent anyway.
      let applied = false;
      if (version > 1) {
        await qr.query(d.versionTable(t));
        const [row] = (await qr.query(`SELECT max(version) AS v FROM ${t.schemaVersion}`)) as Array<{ v: number | string | null }>;
        applied = row !== undefined && row.v !== null && Number(row.v) >= version;
      }
      if (!applied) for (const sql of v.up(t, schema)) await qr.query(sql);
      await qr.query(d.versionTable(t));
      for (const done of d.versions) if (done.version <= version) await qr.query(d.record(t), [done.version, done.name, Date.now()]);
    }
    async down(qr: TypeormQueryRunner): Promise<void> {
      const d = dialectOf(qr);
      const t = d.tables(schema);
      const v = d.versions.find((x) => x.version === version);
      if (!v) return;
      if (version === 1) {
        for (const sql of v.down ? v.down(t, schema) : d.dropAll(t)) await qr.query(sql);
        await qr.query(`DROP TABLE IF EXISTS ${t.schemaVersion}`);
        return;
      }
      if (!v.down) throw new RheoError('failed', `version ${version} (${v.name}) of the rheo schema cannot be undone`);
      for (const sql of v.down(t, schema)) await qr.query(sql);
      await qr.query(`DELETE FROM ${t.schemaVersion} WHERE version >= ${version}`);
    }
  };
  Object.defineProperty(Migration, 'name', { value: name });
  return Migration;
}

/**
 * The migrations that create the library's tables and bring them to each later
 * schema version, for hosts that run migrations themselves: add them to the
 * DataSource's `migrations` and build the backend with `install: 'none'`. One
 * class per version, each running exactly the DDL `install: 'auto'` runs for
 * that version, so the two paths never disagree; `down` undoes its version
 * (version 1's drops the tables).
 *
 * ```ts
 * new DataSource({ type: 'postgres', ..., migrations: [...rheoMigrations({ schema: 'rheo' }), ...mine] })
 * ```
 */
export function rheoMigrations(options: RheoMigrationsOptions = {}): TypeormMigrationClass[] {
  checkKeys('', checkObject('options', options), SCHEMA_ONLY);
  const schema = options.schema === undefined ? 'public' : checkSchemaName('schema', options.schema);
  // Every version either dialect has, in order.
  const versions = [...new Set([...PG_SCHEMA, ...SQLITE_SCHEMA].map((v) => v.version))].sort((a, b) => a - b);
  return versions.map((version) => migrationOf(version, schema));
}
