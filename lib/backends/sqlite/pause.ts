// The pause section of the SQLite backend (docs/adr/046-pausing-a-group.md). A
// pause is written in one write transaction to the group's row (its details, for
// groupInfo) and to each of its partition rows (`paused_to`, the gate the claim
// reads with the cursor it reads anyway: delivery-claim.ts). SQLite has one
// writer, so a claim either committed before the pause or sees it.
import { RheoError } from '../../core/errors';
import type { GroupPause } from '../../core/types';
import type { PauseGroupRequest } from '../backend';
import { PAUSED_UNTIL_RESUMED, pauseOf } from '../sql/rows';
import type { SqliteContext } from './context';

export async function pauseGroup(ctx: SqliteContext, req: PauseGroupRequest): Promise<GroupPause> {
  await ctx.base.mustStream(req.stream);
  const p = ctx.pause;
  const now = ctx.clock.now();
  const until = req.until === null ? null : req.until.getTime();
  const found = await ctx.write('pauseGroup', () => {
    if (ctx.stmt(p.setPause).run(now, until, req.reason, req.by, req.stream, req.group).changes === 0) return false;
    ctx.stmt(p.closeGate).run(until ?? PAUSED_UNTIL_RESUMED, req.stream, req.group);
    return true;
  });
  if (!found) {
    ctx.base.forgetGroup(req.stream, req.group);
    throw RheoError.groupNotFound(req.stream, req.group);
  }
  return { pausedAt: new Date(now), until: until === null ? null : new Date(until), reason: req.reason, by: req.by };
}

export async function resumeGroup(ctx: SqliteContext, stream: string, group: string): Promise<boolean> {
  await ctx.base.mustStream(stream);
  const p = ctx.pause;
  const now = ctx.clock.now();
  const held = await ctx.write('resumeGroup', () => {
    const row = ctx.stmt(p.pauseOf).get(stream, group);
    if (!row) return null;
    // A pause past its `until` holds nothing back; it is cleared all the same, so groupInfo never sees it again.
    if (row.paused_at !== null) {
      ctx.stmt(p.clearPause).run(stream, group);
      ctx.stmt(p.openGate).run(stream, group);
    }
    return pauseOf(row, now) !== null;
  });
  if (held === null) {
    ctx.base.forgetGroup(stream, group);
    throw RheoError.groupNotFound(stream, group);
  }
  // This process's waiting consumers claim at once, as after an append (other processes see it at their next poll).
  if (held) ctx.wake(stream);
  return held;
}
