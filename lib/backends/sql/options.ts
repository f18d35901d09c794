import { checkClock, type Clock } from '../../core/clock';
import { RheoError } from '../../core/errors';

/** When the tables are created. */
export type InstallMode = 'auto' | 'none';

/**
 * Check the options every SQL factory takes: `install` (default `'auto'`) and `clock` (default
 * `defaultClock()`: the store's time on PostgreSQL, the process clock on SQLite; ADR 041).
 */
export function checkCommonOptions(
  field: string,
  o: { install?: unknown; clock?: unknown },
  defaultClock: () => Clock,
): { install: InstallMode; clock: Clock } {
  const install = o.install ?? 'auto';
  if (install !== 'auto' && install !== 'none') throw RheoError.invalid(`${field}.install`, "must be 'auto' or 'none'");
  const clock = o.clock === undefined ? defaultClock() : checkClock(`${field}.clock`, o.clock);
  return { install, clock };
}
