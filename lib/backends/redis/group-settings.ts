// The group-settings section of the Redis backend: a group's settings changed in
// place (docs/adr/047-changing-a-group-in-place.md), by one script over the group's
// cfg hash. The fetch and settle scripts read maxAttempts and the backoff from that
// hash as they decide, so every process applies the change from this call on.
import { RheoError } from '../../core/errors';
import type { GroupConfig } from '../../core/types';
import type { UpdateGroupRequest } from '../backend';
import { copyGroupConfig } from '../copies';
import type { RedisContext } from './context';
import { decodeGroupConfig } from './group-config';
import { partitionsOf } from './registry';

export async function updateGroup(ctx: RedisContext, req: UpdateGroupRequest): Promise<GroupConfig> {
  const { stream, group } = req;
  await partitionsOf(ctx, stream);
  const r = req.retry;
  const keys = [ctx.keys(stream).meta, ctx.keys(stream).group(group).cfg];
  let values: Array<string | null>;
  try {
    values = (await ctx.script('write', 'updateGroup', keys, [req.maxAttempts, r.initialMs, r.factor, r.maxMs], {
      stream,
      group,
    })) as Array<string | null>;
  } catch (err) {
    if (err instanceof RheoError && err.code === 'group_not_found') ctx.registrations.forgetGroup(stream, group);
    throw err;
  }
  const config = decodeGroupConfig(stream, group, values);
  if (!config) throw RheoError.groupNotFound(stream, group);
  ctx.registrations.rememberGroup(config);
  return copyGroupConfig(config);
}
