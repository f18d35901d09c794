import { Clock, systemClock } from '../../core/clock';
import { RheoError } from '../../core/errors';

/** When the tables are created. */
export type InstallMode = 'auto' | 'none';

/** Check the options every SQL factory takes: `install` (default `'auto'`) and `clock` (default the system clock). */
export function checkCommonOptions(field: string, o: { install?: unknown; clock?: unknown }): { install: InstallMode; clock: Clock } {
  const install = o.install ?? 'auto';
  if (install !== 'auto' && install !== 'none') throw RheoError.invalid(`${field}.install`, "must be 'auto' or 'none'");
  const clock = (o.clock ?? systemClock) as Clock;
  if (typeof clock !== 'object' || typeof clock.now !== 'function')
    throw RheoError.invalid(`${field}.clock`, 'must be a Clock ({ now(): number })');
  return { install, clock };
}
