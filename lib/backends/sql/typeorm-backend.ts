import { type Clock, storeClock, systemClock } from '../../core/clock';
import { RheoError } from '../../core/errors';
import { checkKeys, checkObject, keySet } from '../../core/validate';
import { PostgresBackend } from '../postgres/postgres-backend';
import { checkLockTimeout } from '../sqlite/locks';
import { SqliteBackend } from '../sqlite/sqlite-backend';
import type { TypeormDataSource } from './external';
import { checkSchemaName } from './names';
import { checkCommonOptions, InstallMode } from './options';

/** Options of {@link typeormBackend}. */
export interface TypeormBackendOptions {
  /**
   * The host's TypeORM DataSource, `type: 'postgres'` or `type: 'better-sqlite3'`.
   * The host owns it: it initializes it before the backend is used and destroys it;
   * `close()` never destroys a borrowed DataSource.
   */
  dataSource: TypeormDataSource;
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

const OPTION_KEYS = keySet('a typeormBackend option', ['dataSource', 'schema', 'install', 'clock', 'lockTimeoutMs']);

/**
 * A SQL backend on a DataSource the host owns (e.g. the one TypeOrmModule made):
 * PostgreSQL or SQLite, chosen from `dataSource.options.type`.
 *
 * ```ts
 * RheoModule.forRootAsync({ inject: [DataSource], useFactory: (ds: DataSource) => typeormBackend({ dataSource: ds }) })
 * ```
 */
export function typeormBackend(options: TypeormBackendOptions): PostgresBackend | SqliteBackend {
  checkKeys('options', checkObject('options', options), OPTION_KEYS);
  const o = options;
  const ds = o.dataSource;
  if (!ds || typeof ds !== 'object' || typeof ds.createQueryRunner !== 'function' || !ds.options) {
    throw RheoError.invalid('options.dataSource', 'must be a TypeORM DataSource');
  }
  const type = ds.options.type;
  const { install, clock } = checkCommonOptions('options', o, type === 'postgres' ? () => storeClock() : () => systemClock);
  if (type === 'postgres') {
    const schema = o.schema === undefined ? 'public' : checkSchemaName('options.schema', o.schema);
    if (o.lockTimeoutMs !== undefined)
      throw RheoError.invalid('options.lockTimeoutMs', 'is SQLite only (PostgreSQL waits for row locks in the server)');
    return new PostgresBackend({ dataSource: ds, owned: false, schema, install, clock });
  }
  if (type === 'better-sqlite3') {
    if (o.schema !== undefined) throw RheoError.invalid('options.schema', 'is PostgreSQL only (SQLite has no schemas)');
    const lockTimeoutMs = checkLockTimeout('options.lockTimeoutMs', o.lockTimeoutMs);
    return new SqliteBackend({ dataSource: ds, owned: false, install, clock, lockTimeoutMs });
  }
  throw RheoError.invalid('options.dataSource', `has type "${String(type)}": only "postgres" and "better-sqlite3" are supported`);
}
