import { RheoError } from '../../core/errors';

/**
 * The newest Redis layout this code knows. Layout 1 is the data written before the
 * key existed (no `<prefix>:layout`); layout 2 adds trimmed logs (`lw:<p>` trim points:
 * entries below the high watermark may be gone), stream retention in `meta`, and the
 * dead-letter time index `deadt`. Layout 1 data is read as it is (no trim point means
 * nothing was trimmed, no retention means keep everything) and its dead letters are
 * added to `deadt` by the first purge or count by time that needs them (purging.ts), so a
 * prefix upgrades online. See docs/adr/020-redis-retention-and-layout-version.md.
 * Layout 3 adds delayed events: entries with a deliverAt (`w`) and `dz:<p>` marks in
 * `meta`, which code of layout 2 would deliver at once. It is recorded only when the
 * first delayed event is written ({@link DELAYED_LAYOUT}), so a prefix that never
 * delays an event stays at layout 2 (docs/adr/028-delayed-events.md).
 * Layout 4 adds flow limits (docs/adr/049-flow-control.md): groups with `kc`, `gc` or
 * `rl` in cfg, delivery records in state W (waiting for a place of their key) and the
 * key-place keys `ko:<p>`, `kw:<p>`, which code of layout 3 would ignore (claiming past
 * every limit, and never handing a key's place on). It is recorded only when the first
 * group with a flow limit is written ({@link FLOW_LAYOUT}).
 */
export const LAYOUT_VERSION = 4;

/** The layout this code records at start-up: what it writes until a delayed event is appended. */
export const BASE_LAYOUT = 2;

/** The layout recorded before the first delayed event under a prefix is written: older code refuses it from then on. */
export const DELAYED_LAYOUT = 3;

/** The layout recorded before the first group with a flow limit under a prefix is written. */
export const FLOW_LAYOUT = 4;

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
