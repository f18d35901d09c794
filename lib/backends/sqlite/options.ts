import { type Clock, systemClock } from '../../core/clock';
import { RheoError } from '../../core/errors';
import { checkBoolean, checkKeys, checkObject, keySet } from '../../core/validate';
import { checkCommonOptions, type InstallMode } from '../sql/options';
import { checkLockTimeout } from './locks';

/** Options of {@link sqliteBackend}. */
export interface SqliteBackendOptions {
  /** Database file path (`':memory:'` for a throwaway in-process database). */
  database: string;
  install?: InstallMode;
  /**
   * Open an existing store for reading only: the file is opened read-only (it must
   * exist, and must hold this release's tables), no setting is written to it, and
   * every operation that writes fails with `failed`. What an inspecting tool uses
   * (the `rheo` CLI's read commands): a path to another application's database is
   * refused with the file byte for byte as it was. Implies `install: 'none'`.
   * Default false.
   */
  readOnly?: boolean;
  clock?: Clock;
  /**
   * How long, in all, an operation waits for a lock another connection (another
   * process on the file) holds before failing with `backend_unavailable`. Default
   * 5000. The wait never blocks the event loop (see docs/sql.md).
   */
  lockTimeoutMs?: number;
}

/**
 * The options of {@link sqliteBackend} once checked ({@link checkOptions}): what its
 * DataSource is opened on (`database`, `readOnly`) and what the backend runs with.
 */
export interface SqliteSettings {
  database: string;
  readOnly: boolean;
  /** `'none'` whenever `readOnly`. */
  install: InstallMode;
  clock: Clock;
  lockTimeoutMs: number;
}

const OPTION_KEYS = keySet('a sqliteBackend option', ['database', 'install', 'readOnly', 'clock', 'lockTimeoutMs']);

/**
 * The options of {@link sqliteBackend}, checked (the first thing wrong refuses them, as
 * `invalid_argument` on `options.<field>`), with their defaults filled in.
 */
export function checkOptions(options: SqliteBackendOptions): SqliteSettings {
  checkKeys('options', checkObject('options', options), OPTION_KEYS);
  const o = options;
  if (typeof o.database !== 'string' || o.database.length === 0)
    throw RheoError.invalid('options.database', "must be a file path or ':memory:'");
  const common = checkCommonOptions('options', o, () => systemClock);
  const readOnly = o.readOnly ?? false;
  checkBoolean('options.readOnly', readOnly);
  if (readOnly && o.install === 'auto') throw RheoError.invalid('options.readOnly', "cannot be combined with install: 'auto'");
  if (readOnly && o.database === ':memory:') throw RheoError.invalid('options.readOnly', "needs a file: ':memory:' starts empty");
  const install = readOnly ? 'none' : common.install;
  const lockTimeoutMs = checkLockTimeout('options.lockTimeoutMs', o.lockTimeoutMs);
  return { database: o.database, readOnly, install, clock: common.clock, lockTimeoutMs };
}
