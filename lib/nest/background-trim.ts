// The background retention job a RheoServer runs (docs/adr/017), with its log lines:
// a DEBUG line per trim or purge that removed something, one WARN per burst of
// failures (as with fetches and renewals), one LOG when it works again.
import type { Logger } from '@nestjs/common';
import type { Rheo } from '../core/rheo';
import { Trimmer } from '../runtime';

/** The started job, or undefined when `intervalMs` is 0 (retention left to the user). */
export function startBackgroundTrim(rheo: Rheo, intervalMs: number, logger: Logger): Trimmer | undefined {
  if (intervalMs === 0) return undefined;
  let failures = 0;
  const trimmer = new Trimmer(rheo, {
    intervalMs,
    events: {
      trimmed: (r) => {
        if (r.removed > 0) logger.debug(`${r.stream}: trimmed ${r.removed} event(s) past the retention`);
        if (failures > 0) logger.log('background trim works again');
        failures = 0;
      },
      purged: (stream, group, n) => logger.debug(`${stream}/${group}: purged ${n} dead letter(s) past deadLetterMaxAgeMs`),
      error: (error, stream) => {
        if (++failures === 1) logger.warn(`${stream ?? 'retention'}: background trim failed, retrying next round: ${error.message}`);
      },
    },
  });
  trimmer.start();
  return trimmer;
}
