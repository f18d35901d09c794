// A backend from one connection URL, the way an operator names a store (the
// `rheo` CLI's --url / RHEO_URL). The factories load their drivers lazily, so
// naming a PostgreSQL URL never loads ioredis. Opening an existing store is the
// default (`install: 'none'`): an operator's tool pointed at the wrong database,
// a mistyped file or prefix fails instead of creating empty tables or claiming
// the prefix there, and writes nothing before it fails.
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { RheoError } from '../core/errors';
import type { Backend } from '../backends/backend';
import { postgresBackend } from '../backends/postgres';
import { redisBackend } from '../backends/redis';
import type { InstallMode } from '../backends/sql';
import { sqliteBackend } from '../backends/sqlite';
import { checkBoolean, checkKeys, checkObject, keySet } from '../core/validate';

/** Options of {@link backendFromUrl}. */
export interface BackendFromUrlOptions {
  /** PostgreSQL schema of the tables (postgres URLs only). Default `public`. */
  schema?: string;
  /** Redis key prefix (redis URLs only). Default `rheo`. */
  prefix?: string;
  /**
   * `'none'` (default) opens an existing store and refuses anything else: SQL
   * tables at this release's schema version (a SQLite file that does not exist, or
   * holds no rheo tables, is refused as it is), a Redis prefix that holds
   * nestjs-rheo data. `'auto'` creates or upgrades the tables and records the Redis
   * layout, as an application does.
   */
  install?: InstallMode;
  /**
   * Only read: a SQLite file is opened read-only (every write fails); PostgreSQL
   * and Redis, with `install: 'none'`, write nothing to open the store. What the
   * `rheo` CLI's read commands use. Cannot be combined with `install: 'auto'`.
   * Default false.
   */
  readOnly?: boolean;
}

const OPTION_KEYS = keySet('a backendFromUrl option', ['schema', 'prefix', 'install', 'readOnly']);

const FORMS = 'must be postgres://…, postgresql://…, redis://…, rediss://… or sqlite:<file>';

/**
 * The backend a URL names: `postgres://` / `postgresql://` (with `schema`),
 * `redis://` / `rediss://` (with `prefix`), `sqlite:<file>` (a path, relative to
 * the working directory or absolute). Anything else is a RheoError naming `url`;
 * the message never repeats the URL, which may hold a password.
 */
export function backendFromUrl(url: string, options: BackendFromUrlOptions = {}): Backend {
  checkKeys('options', checkObject('options', options), OPTION_KEYS);
  if (typeof url !== 'string' || url.length === 0) throw RheoError.invalid('url', FORMS);
  const install = options.install ?? 'none';
  const readOnly = options.readOnly ?? false;
  checkBoolean('readOnly', readOnly);
  if (readOnly && install === 'auto') throw RheoError.invalid('readOnly', "cannot be combined with install: 'auto'");
  const scheme = /^([a-z]+):/i.exec(url)?.[1]?.toLowerCase();
  if (scheme !== 'postgres' && scheme !== 'postgresql' && options.schema !== undefined)
    throw RheoError.invalid('schema', 'applies to postgres:// URLs only');
  if (scheme !== 'redis' && scheme !== 'rediss' && options.prefix !== undefined)
    throw RheoError.invalid('prefix', 'applies to redis:// URLs only');
  return renamingFields(() => {
    switch (scheme) {
      case 'postgres':
      case 'postgresql':
        if (!url.includes('://')) break;
        return postgresBackend({ url, schema: options.schema, install });
      case 'redis':
      case 'rediss':
        if (!url.includes('://')) break;
        return redisBackend({ url, prefix: options.prefix, install });
      case 'sqlite': {
        const database = sqliteFile(url.slice('sqlite:'.length), install);
        return sqliteBackend(readOnly ? { database, readOnly } : { database, install });
      }
    }
    throw RheoError.invalid('url', FORMS);
  });
}

/** The file of a `sqlite:<file>` URL, resolved against the working directory. */
function sqliteFile(path: string, install: InstallMode): string {
  if (path.length === 0 || path.startsWith('//'))
    throw RheoError.invalid('url', 'must be sqlite:<file>, e.g. sqlite:./rheo.db or sqlite:/var/lib/app/rheo.db');
  const file = resolve(path);
  if (install === 'none' && !existsSync(file)) throw RheoError.invalid('url', `names no existing file (${file})`);
  return file;
}

/** The factories name their options `options.schema`, `options.prefix`; here they are this function's `schema`, `prefix`. */
function renamingFields(build: () => Backend): Backend {
  try {
    return build();
  } catch (err) {
    if (err instanceof RheoError && err.field?.startsWith('options.')) {
      const field = err.field.slice('options.'.length);
      throw new RheoError(err.code, err.message.replace(err.field, field), { field, cause: err });
    }
    throw err;
  }
}
