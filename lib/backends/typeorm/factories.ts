import type { DataSource } from 'typeorm';
import { Clock, systemClock } from '../../core/clock';
import { RheoError } from '../../core/errors';
import { checkInt, checkObject } from '../../core/validate';
import { loadDriver } from './load';
import { checkSchemaName } from './names';
import { PostgresBackend } from './pg-backend';
import { SqliteBackend } from './sqlite-backend';
import { DEFAULT_LOCK_TIMEOUT_MS, MAX_LOCK_TIMEOUT_MS, SQLITE_BUSY_TIMEOUT_MS } from './sqlite-locks';

/** When the tables are created. */
export type InstallMode = 'auto' | 'none';

/** Options of {@link typeormBackend}. */
export interface TypeormBackendOptions {
  /**
   * The host's TypeORM DataSource, `type: 'postgres'` or `type: 'better-sqlite3'`.
   * The host owns it: it initializes it before the backend is used and destroys it;
   * `close()` never destroys a borrowed DataSource.
   */
  dataSource: DataSource;
  /** PostgreSQL schema (namespace) of the tables. Default `public`. Ignored on SQLite. */
  schema?: string;
  /**
   * `'auto'` (default): create missing tables at startup (concurrent starts are
   * serialised by an advisory lock on PostgreSQL). `'none'`: the host ran
   * {@link rheoMigrations} (or equivalent DDL) itself.
   */
  install?: InstallMode;
  clock?: Clock;
  /**
   * SQLite only: how long, in all, an operation waits for a lock another
   * connection holds before failing with `backend_unavailable`. Default 5000.
   * The wait never blocks the event loop (see docs/sql.md).
   */
  lockTimeoutMs?: number;
}

/** Options of {@link postgresBackend}. */
export interface PostgresBackendOptions {
  /** Connection URL, e.g. `postgres://user:pass@host:5432/db`. */
  url: string;
  /** Schema (namespace) of the tables. Default `public`. */
  schema?: string;
  /** Pool size. Default 10. */
  poolSize?: number;
  install?: InstallMode;
  clock?: Clock;
}

/** Options of {@link sqliteBackend}. */
export interface SqliteBackendOptions {
  /** Database file path (`':memory:'` for a throwaway in-process database). */
  database: string;
  install?: InstallMode;
  clock?: Clock;
  /**
   * How long, in all, an operation waits for a lock another connection (another
   * process on the file) holds before failing with `backend_unavailable`. Default
   * 5000. The wait never blocks the event loop (see docs/sql.md).
   */
  lockTimeoutMs?: number;
}

function common(field: string, o: { install?: unknown; clock?: unknown }): { install: InstallMode; clock: Clock } {
  const install = o.install ?? 'auto';
  if (install !== 'auto' && install !== 'none') throw RheoError.invalid(`${field}.install`, "must be 'auto' or 'none'");
  const clock = (o.clock ?? systemClock) as Clock;
  if (typeof clock !== 'object' || typeof clock.now !== 'function')
    throw RheoError.invalid(`${field}.clock`, 'must be a Clock ({ now(): number })');
  return { install, clock };
}

function lockTimeout(field: string, value: unknown): number {
  return value === undefined ? DEFAULT_LOCK_TIMEOUT_MS : checkInt(field, value, 0, MAX_LOCK_TIMEOUT_MS);
}

/**
 * A SQL backend on a DataSource the host owns (e.g. the one TypeOrmModule made):
 * PostgreSQL or SQLite, chosen from `dataSource.options.type`.
 *
 * ```ts
 * RheoModule.forRootAsync({ inject: [DataSource], useFactory: (ds: DataSource) => typeormBackend({ dataSource: ds }) })
 * ```
 */
export function typeormBackend(options: TypeormBackendOptions): PostgresBackend | SqliteBackend {
  const o = checkObject('options', options) as unknown as TypeormBackendOptions;
  const ds = o.dataSource;
  if (!ds || typeof ds !== 'object' || typeof ds.createQueryRunner !== 'function' || !ds.options) {
    throw RheoError.invalid('options.dataSource', 'must be a TypeORM DataSource');
  }
  const { install, clock } = common('options', o);
  const type = ds.options.type;
  if (type === 'postgres') {
    const schema = o.schema === undefined ? 'public' : checkSchemaName('options.schema', o.schema);
    if (o.lockTimeoutMs !== undefined)
      throw RheoError.invalid('options.lockTimeoutMs', 'is SQLite only (PostgreSQL waits for row locks in the server)');
    return new PostgresBackend({ dataSource: ds, owned: false, schema, install, clock });
  }
  if (type === 'better-sqlite3') {
    if (o.schema !== undefined) throw RheoError.invalid('options.schema', 'is PostgreSQL only (SQLite has no schemas)');
    const lockTimeoutMs = lockTimeout('options.lockTimeoutMs', o.lockTimeoutMs);
    return new SqliteBackend({ dataSource: ds, owned: false, install, clock, lockTimeoutMs });
  }
  throw RheoError.invalid('options.dataSource', `has type "${String(type)}": only "postgres" and "better-sqlite3" are supported`);
}

/**
 * PostgreSQL: multi-node production store. Creates and owns its DataSource
 * (destroyed on close). `FOR UPDATE SKIP LOCKED` claims, LISTEN/NOTIFY wake-ups.
 */
export function postgresBackend(options: PostgresBackendOptions): PostgresBackend {
  const o = checkObject('options', options) as unknown as PostgresBackendOptions;
  if (typeof o.url !== 'string' || !/^postgres(ql)?:\/\//.test(o.url)) throw RheoError.invalid('options.url', 'must be a postgres:// URL');
  const schema = o.schema === undefined ? 'public' : checkSchemaName('options.schema', o.schema);
  const poolSize = o.poolSize === undefined ? 10 : checkInt('options.poolSize', o.poolSize, 1, 1000);
  const { install, clock } = common('options', o);
  const { DataSource } = loadDriver<typeof import('typeorm')>('typeorm', 'postgresBackend');
  loadDriver('pg', 'postgresBackend');
  const dataSource = new DataSource({ type: 'postgres', url: o.url, poolSize, connectTimeoutMS: 10_000, applicationName: 'rheo' });
  return new PostgresBackend({ dataSource, owned: true, schema, install, clock });
}

/**
 * SQLite: the embedded durable default, one file, no server. Creates and owns its
 * DataSource (WAL; destroyed on close). Single node: several processes may share
 * the file, but it is not a distributed store.
 */
export function sqliteBackend(options: SqliteBackendOptions): SqliteBackend {
  const o = checkObject('options', options) as unknown as SqliteBackendOptions;
  if (typeof o.database !== 'string' || o.database.length === 0)
    throw RheoError.invalid('options.database', "must be a file path or ':memory:'");
  const { install, clock } = common('options', o);
  const lockTimeoutMs = lockTimeout('options.lockTimeoutMs', o.lockTimeoutMs);
  const { DataSource } = loadDriver<typeof import('typeorm')>('typeorm', 'sqliteBackend');
  loadDriver('better-sqlite3', 'sqliteBackend');
  // SQLite's busy timeout is a synchronous sleep on the event loop: a few ms only, the rest of a lock
  // wait is the backend's, on timers. WAL is switched on by the backend's init, under the same wait.
  const dataSource = new DataSource({ type: 'better-sqlite3', database: o.database, timeout: SQLITE_BUSY_TIMEOUT_MS });
  return new SqliteBackend({ dataSource, owned: true, install, clock, lockTimeoutMs });
}
