// The group-settings section of the SQLite backend: a group's settings changed in
// place (docs/adr/047-changing-a-group-in-place.md). The claim and the settle read the
// stored settings inside their own write transaction (storedSettings) whenever a
// setting decides something, so a change by any process on the file decides from
// its commit on.
import { RheoError } from '../../core/errors';
import { hasFlowLimits } from '../../core/flow';
import type { GroupConfig } from '../../core/types';
import type { UpdateGroupRequest } from '../backend';
import { copyGroupConfig } from '../copies';
import { flowColumns, toGroup } from '../sql/rows';
import type { SqliteContext } from './context';
import { placesOf, recountGroup } from './keys';

export async function updateGroup(ctx: SqliteContext, req: UpdateGroupRequest): Promise<GroupConfig> {
  await ctx.base.mustStream(req.stream);
  const r = req.retry;
  const now = ctx.clock.now();
  const { row, promoted } = await ctx.write('updateGroup', () => {
    const before = ctx.stmt(ctx.flow.flowSettings).get(req.stream, req.group);
    const row = ctx
      .stmt(ctx.groupSettings.updateGroup)
      .get(req.maxAttempts, r.initialMs, r.factor, r.maxMs, ...flowColumns(req), req.stream, req.group);
    if (!row || !before) return { row, promoted: 0 };
    const config = toGroup(row);
    // The claim's gate on every partition row: a claim of any process judges the new limits from this commit on.
    ctx.stmt(ctx.flow.setFlow).run(hasFlowLimits(config) ? 1 : null, req.stream, req.group);
    // More places per key: waiting deliveries take them now, not at their key's next ending (keys.ts).
    const places = placesOf(before);
    const more = places !== null && req.keyConcurrency !== null && req.keyConcurrency > places;
    if (!more) return { row, promoted: 0 };
    const partitions = ctx
      .stmt(ctx.flow.partitionsOf)
      .all(req.stream, req.group)
      .map((x) => x.partition);
    return { row, promoted: recountGroup(ctx, req.stream, req.group, partitions, now) };
  });
  if (promoted > 0) ctx.wake(req.stream);
  if (!row) {
    ctx.base.forgetGroup(req.stream, req.group);
    throw RheoError.groupNotFound(req.stream, req.group);
  }
  return copyGroupConfig(ctx.base.rememberGroup(toGroup(row)));
}

/**
 * The group's maxAttempts and retry as stored now, for a decision inside a write
 * transaction; null when the group is gone. This process's copy is replaced by
 * it, so what it reports (diagnostics, logs) follows the store too.
 */
export function storedSettings(ctx: SqliteContext, stream: string, group: string): Pick<GroupConfig, 'maxAttempts' | 'retry'> | null {
  const row = ctx.stmt(ctx.groupSettings.storedSettings).get(stream, group);
  if (!row) return null;
  const settings = {
    maxAttempts: Number(row.max_attempts),
    retry: { initialMs: Number(row.retry_initial_ms), factor: Number(row.retry_factor), maxMs: Number(row.retry_max_ms) },
  };
  const known = ctx.base.cachedGroup(stream, group);
  if (known && (known.maxAttempts !== settings.maxAttempts || !sameRetry(known.retry, settings.retry))) {
    ctx.base.rememberGroup({ ...known, ...settings });
  }
  return settings;
}

function sameRetry(a: GroupConfig['retry'], b: GroupConfig['retry']): boolean {
  return a.initialMs === b.initialMs && a.factor === b.factor && a.maxMs === b.maxMs;
}
