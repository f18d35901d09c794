// The group-settings section of the PostgreSQL backend: a group's settings changed
// in place (docs/adr/047-changing-a-group-in-place.md). One UPDATE of the group's row
// (and, when keyConcurrency grew, release rows for its waiting keys: flow.ts);
// the claim and the settle statements read that row when they decide, so every
// process applies the change from its commit on.
import { RheoError } from '../../core/errors';
import type { GroupConfig } from '../../core/types';
import type { UpdateGroupRequest } from '../backend';
import { copyGroupConfig } from '../copies';
import { flowColumns, toGroup } from '../sql/rows';
import type { PostgresContext } from './context';
import { groupChangedPayload } from './listener';

export async function updateGroup(ctx: PostgresContext, req: UpdateGroupRequest): Promise<GroupConfig> {
  await ctx.mustStream(req.stream);
  const r = req.retry;
  const params = [req.stream, req.group, req.maxAttempts, r.initialMs, r.factor, r.maxMs, ...flowColumns(req)];
  const [row] = await ctx.q(ctx.plans.groupSettings.updateGroup, params, 'write', 'updateGroup');
  if (!row) {
    ctx.forgetGroup(req.stream, req.group);
    throw RheoError.groupNotFound(req.stream, req.group);
  }
  // Every process reads the group again (listener.ts): one that knew it without flow limits claims by them next.
  await ctx.q(ctx.plans.recovery.wake, [ctx.channel, groupChangedPayload(req.stream, req.group)], 'write', 'notify').catch(() => undefined);
  if (req.keyConcurrency !== null && req.keyConcurrency > Number(row.old_key_concurrency ?? Infinity)) {
    // More places per key: waiting deliveries take them at the next claim, not at their key's next end.
    await ctx.q(ctx.plans.flow.releaseWaitingKeys, [req.stream, req.group, ctx.channel], 'write', 'updateGroup');
    ctx.board.wake(req.stream);
  }
  return copyGroupConfig(ctx.rememberGroup(toGroup(row)));
}
