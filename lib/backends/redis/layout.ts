import { RheoError } from '../../core/errors';

/**
 * The Redis layout this code writes. Layout 1 is the data written before the key
 * existed (no `<prefix>:layout`); layout 2 adds trimmed logs (`lw:<p>` trim points:
 * entries below the high watermark may be gone), stream retention in `meta`, and the
 * dead-letter time index `deadt`. Layout 1 data is read as it is (no trim point means
 * nothing was trimmed, no retention means keep everything) and its dead letters are
 * added to `deadt` by the first purge or count by time that needs them (purging.ts), so a
 * prefix upgrades online. See docs/adr/020-redis-retention-and-layout-version.md.
 */
export const LAYOUT_VERSION = 2;

/**
 * The answer of the layout script (the version recorded under the prefix now): a
 * newer layout than this code knows, or something that is no version at all, means
 * data this process could misread or damage, so it refuses to start.
 */
export function checkLayout(recorded: unknown, prefix: string): void {
  const text = String(recorded);
  const version = /^\d{1,9}$/.test(text) ? Number(text) : NaN;
  if (Number.isNaN(version)) {
    throw new RheoError(
      'failed',
      `Redis key ${prefix}:layout holds "${text}", not a layout version: it is not nestjs-rheo's, or it was damaged; refusing to use prefix ${prefix}`,
    );
  }
  if (version > LAYOUT_VERSION) {
    throw new RheoError(
      'failed',
      `Redis layout version ${version} at prefix ${prefix} is newer than this nestjs-rheo knows (${LAYOUT_VERSION}): upgrade nestjs-rheo`,
    );
  }
}
