import type { DataSource } from 'typeorm';
import { Clock, systemClock } from '../../core/clock';
import { RheoError } from '../../core/errors';
import { checkInt, checkObject } from '../../core/validate';
import { loadDriver } from './load';
import { checkSchemaName } from './names';
import { PostgresBackend } from './pg-backend';
import { SqliteBackend } from './sqlite-backend';

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
}

function common(field: string, o: { install?: unknown; clock?: unknown }): { install: InstallMode; clock: Clock } {
  const install = o.install ?? 'auto';
  if (install !== 'auto' && install !== 'none') throw RheoError.invalid(`${field}.install`, "must be 'auto' or 'none'");
  const clock = (o.clock ?? systemClock) as Clock;
  if (typeof clock !== 'object' || typeof clock.now !== 'function') throw RheoError.invalid(`${field}.clock`, 'must be a Clock ({ now(): number })');
  return { install, clock };
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
    return new PostgresBackend({ dataSource: ds, owned: false, schema, install, clock });
  }
  if (type === 'better-sqlite3') {
    if (o.schema !== undefined) throw RheoError.invalid('options.schema', 'is PostgreSQL only (SQLite has no schemas)');
    return new SqliteBackend({ dataSource: ds, owned: false, install, clock });
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
 * DataSource (WAL, 5 s busy timeout; destroyed on close). Single node: several
 * processes may share the file, but it is not a distributed store.
 */
export function sqliteBackend(options: SqliteBackendOptions): SqliteBackend {
  const o = checkObject('options', options) as unknown as SqliteBackendOptions;
  if (typeof o.database !== 'string' || o.database.length === 0) throw RheoError.invalid('options.database', 'must be a file path or \':memory:\'');
  const { install, clock } = common('options', o);
  const { DataSource } = loadDriver<typeof import('typeorm')>('typeorm', 'sqliteBackend');
  loadDriver('better-sqlite3', 'sqliteBackend');
  const dataSource = new DataSource({ type: 'better-sqlite3', database: o.database, enableWAL: true, timeout: 5000 });
  return new SqliteBackend({ dataSource, owned: true, install, clock });
}
