import { type Clock, storeClock } from '../../core/clock';
import { RheoError } from '../../core/errors';
import { checkInt, checkKeys, checkObject, keySet } from '../../core/validate';
import { checkSchemaName } from '../sql/names';
import { checkCommonOptions, type InstallMode } from '../sql/options';

/** Options of {@link postgresBackend}. */
export interface PostgresBackendOptions {
  /** Connection URL, e.g. `postgres://user:pass@host:5432/db`. */
  url: string;
  /** Schema (namespace) of the tables. Default `public`. */
  schema?: string;
  /** Pool size. Default 10. */
  poolSize?: number;
  install?: InstallMode;
  /**
   * Time source for timestamps, lease expiry, retry delays and delayed events. Default: the
   * store's time (`storeClock()`: this process's clock corrected by an offset measured against
   * PostgreSQL's `clock_timestamp()`, docs/adr/041). Any other clock is used as it is.
   */
  clock?: Clock;
}

/**
 * The options of {@link postgresBackend} once checked ({@link checkOptions}): what its
 * DataSource is built from (`url`, `poolSize`) and what the backend runs with.
 */
export interface PostgresSettings {
  url: string;
  poolSize: number;
  schema: string;
  install: InstallMode;
  clock: Clock;
}

const OPTION_KEYS = keySet('a postgresBackend option', ['url', 'schema', 'poolSize', 'install', 'clock']);

/**
 * The options of {@link postgresBackend}, checked (the first thing wrong refuses them, as
 * `invalid_argument` on `options.<field>`), with their defaults filled in.
 */
export function checkOptions(options: PostgresBackendOptions): PostgresSettings {
  checkKeys('options', checkObject('options', options), OPTION_KEYS);
  const o = options;
  if (typeof o.url !== 'string' || !/^postgres(ql)?:\/\//.test(o.url)) throw RheoError.invalid('options.url', 'must be a postgres:// URL');
  const schema = o.schema === undefined ? 'public' : checkSchemaName('options.schema', o.schema);
  const poolSize = o.poolSize === undefined ? 10 : checkInt('options.poolSize', o.poolSize, 1, 1000);
  const { install, clock } = checkCommonOptions('options', o, () => storeClock());
  return { url: o.url, poolSize, schema, install, clock };
}
