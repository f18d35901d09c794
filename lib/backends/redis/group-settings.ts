// The group-settings section of the Redis backend: a group's settings changed in
// place (docs/adr/047-changing-a-group-in-place.md), by one script over the group's
// cfg hash. The fetch and settle scripts read maxAttempts, the backoff and the flow
// limits from that hash as they decide, so every process applies the change from
// this call on.
import { RheoError } from '../../core/errors';
import type { GroupConfig } from '../../core/types';
import type { UpdateGroupRequest } from '../backend';
import { copyGroupConfig } from '../copies';
import type { RedisContext } from './context';
import { decodeGroupConfig } from './group-config';
import { recordFlowLayout } from './lifecycle';
import { partitionsOf } from './registry';

export async function updateGroup(ctx: RedisContext, req: UpdateGroupRequest): Promise<GroupConfig> {
  const { stream, group } = req;
  const P = await partitionsOf(ctx, stream);
  if (req.keyConcurrency !== null || req.groupConcurrency !== null || req.rateLimit !== null) await recordFlowLayout(ctx);
  const r = req.retry;
  const k = ctx.keys(stream);
  const g = k.group(group);
  const keys = [k.meta, g.cfg, g.deliveries, k.wake];
  for (let p = 0; p < P; p++) keys.push(g.keyOpen(p), g.keyWaiting(p), g.available(p), k.log(p));
  const rate = req.rateLimit ? `${req.rateLimit.max}:${req.rateLimit.perMs}` : '';
  const args = [
    req.maxAttempts,
    r.initialMs,
    r.factor,
    r.maxMs,
    req.keyConcurrency ?? '',
    req.groupConcurrency ?? '',
    rate,
    ctx.clock.now(),
  ];
  let values: Array<string | null>;
  try {
    values = (await ctx.script('write', 'updateGroup', keys, args, { stream, group })) as Array<string | null>;
  } catch (err) {
    if (err instanceof RheoError && err.code === 'group_not_found') ctx.registrations.forgetGroup(stream, group);
    throw err;
  }
  const config = decodeGroupConfig(stream, group, values);
  if (!config) throw RheoError.groupNotFound(stream, group);
  ctx.registrations.rememberGroup(config);
  return copyGroupConfig(config);
}
