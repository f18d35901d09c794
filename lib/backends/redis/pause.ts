// The pause section of the Redis backend (docs/adr/046-pausing-a-group.md): a pause is
// four fields of the group's cfg hash (STORED_PAUSE_FIELDS), written and removed by one
// script each. The fetch script reads the gate (`pu`) in the HMGET it makes anyway and
// claims nothing while it holds, judged by the `now` every claim is sent (the store's
// clock by default), so a pause costs an idle group's claim nothing measurable.
import { RheoError } from '../../core/errors';
import type { GroupPause } from '../../core/types';
import type { PauseGroupRequest } from '../backend';
import type { RedisContext } from './context';
import { NO_UNTIL, STORED_PAUSE_FIELDS } from './group-config';
import { partitionsOf } from './registry';

/** The stored pause fields, in the order {@link decodePause} expects their values. */
export const STORED_PAUSE_FIELD_NAMES: readonly string[] = [
  STORED_PAUSE_FIELDS.until,
  STORED_PAUSE_FIELDS.pausedAt,
  STORED_PAUSE_FIELDS.reason,
  STORED_PAUSE_FIELDS.by,
];

export async function pauseGroup(ctx: RedisContext, req: PauseGroupRequest): Promise<GroupPause> {
  const { stream, group } = req;
  await partitionsOf(ctx, stream);
  const k = ctx.keys(stream);
  const args = [ctx.clock.now(), req.until === null ? NO_UNTIL : req.until.getTime(), req.reason ?? '', req.by ?? ''];
  const values = (await groupScript(ctx, 'pauseGroup', [k.meta, k.group(group).cfg], args, stream, group)) as Array<string | null>;
  const pause = decodePause(values);
  if (!pause) throw RheoError.groupNotFound(stream, group);
  return pause;
}

export async function resumeGroup(ctx: RedisContext, stream: string, group: string): Promise<boolean> {
  await partitionsOf(ctx, stream);
  const k = ctx.keys(stream);
  const held = await groupScript(ctx, 'resumeGroup', [k.meta, k.group(group).cfg, k.wake], [ctx.clock.now()], stream, group);
  return Number(held) === 1;
}

/** A pause from the values of {@link STORED_PAUSE_FIELD_NAMES} (an HMGET of the cfg hash), or null when there is none. */
export function decodePause(values: ReadonlyArray<string | null | undefined>): GroupPause | null {
  const [until, pausedAt, reason, by] = values;
  if (until === null || until === undefined || pausedAt === null || pausedAt === undefined) return null;
  return {
    pausedAt: new Date(Number(pausedAt)),
    until: until === NO_UNTIL ? null : new Date(Number(until)),
    reason: reason || null,
    by: by || null,
  };
}

/** The pause of those values while it holds at `now` (no `until`, or one after now), else null. */
export function activePause(values: ReadonlyArray<string | null | undefined>, now: number): GroupPause | null {
  const pause = decodePause(values);
  return pause && (pause.until === null || pause.until.getTime() > now) ? pause : null;
}

/** A script of the group; a group found missing is forgotten, as updateGroup forgets it. */
async function groupScript(
  ctx: RedisContext,
  name: 'pauseGroup' | 'resumeGroup',
  keys: string[],
  args: Array<string | number>,
  stream: string,
  group: string,
): Promise<unknown> {
  try {
    return await ctx.script('write', name, keys, args, { stream, group });
  } catch (err) {
    if (err instanceof RheoError && err.code === 'group_not_found') ctx.registrations.forgetGroup(stream, group);
    throw err;
  }
}
