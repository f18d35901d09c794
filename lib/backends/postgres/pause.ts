// The pause section of the PostgreSQL backend (docs/adr/046-pausing-a-group.md).
// A pause is one transaction: it locks the group's partition rows as a claim does
// (in partition order, first), so it waits for a claim under way, then writes its
// details to the group's row and the gate (`paused_to`) to every partition row.
// A claim that waited for those locks re-checks the gate on the rows it gets
// (plans/delivery.ts, claimPlan), so from the commit on no claim leases anything
// of the group. The SQL is in plans/pause.ts.
import { RheoError } from '../../core/errors';
import type { GroupPause } from '../../core/types';
import type { PauseGroupRequest } from '../backend';
import { PAUSED_UNTIL_RESUMED, pauseOf } from '../sql/rows';
import { query } from '../sql/statement';
import type { PostgresContext } from './context';

export async function pauseGroup(ctx: PostgresContext, req: PauseGroupRequest): Promise<GroupPause> {
  const info = await ctx.mustStream(req.stream);
  const all = Array.from({ length: info.partitions }, (_, p) => p);
  const now = ctx.clock.now();
  const until = req.until === null ? null : req.until.getTime();
  const rows = await ctx.tx('pauseGroup', async (qr) => {
    await query(qr, ctx.plans.delivery.lockGroupPartitions, [req.stream, req.group, all]);
    return query(qr, ctx.plans.pause.pause, [req.stream, req.group, now, until, req.reason, req.by, until ?? PAUSED_UNTIL_RESUMED]);
  });
  if (rows.length === 0) {
    ctx.forgetGroup(req.stream, req.group);
    throw RheoError.groupNotFound(req.stream, req.group);
  }
  return { pausedAt: new Date(now), until: until === null ? null : new Date(until), reason: req.reason, by: req.by };
}

export async function resumeGroup(ctx: PostgresContext, stream: string, group: string): Promise<boolean> {
  const info = await ctx.mustStream(stream);
  const all = Array.from({ length: info.partitions }, (_, p) => p);
  const now = ctx.clock.now();
  const [before] = await ctx.tx('resumeGroup', async (qr) => {
    await query(qr, ctx.plans.delivery.lockGroupPartitions, [stream, group, all]);
    return query(qr, ctx.plans.pause.resume, [stream, group, now, ctx.channel]);
  });
  if (!before) {
    ctx.forgetGroup(stream, group);
    throw RheoError.groupNotFound(stream, group);
  }
  const held = pauseOf(before, now) !== null;
  // The statement NOTIFYs the other processes; this process's own waiters need not wait for the round trip.
  if (held) ctx.board.wake(stream);
  return held;
}

/**
 * Why a claim came back empty, when a gate of its partition rows did it: the
 * group is paused, or (`flow`) it has flow limits this process's copy of the group
 * lacks (docs/adr/049-flow-control.md). The ordered claim knows from the rows it
 * locked (`locked`), the other one asks (one statement, on an empty answer only).
 */
export async function claimGate(
  ctx: PostgresContext,
  stream: string,
  group: string,
  partitions: number[],
  now: number,
  locked?: ReadonlyArray<{ paused_to: unknown; flow?: boolean }>,
): Promise<'paused' | 'flow' | null> {
  if (locked) {
    if (locked.some((r) => r.paused_to !== null && Number(r.paused_to) > now)) return 'paused';
    return locked.some((r) => r.flow === true) ? 'flow' : null;
  }
  const [row] = await ctx.q(ctx.plans.pause.paused, [stream, group, partitions, now], 'read', 'fetch');
  return row?.paused === true ? 'paused' : row?.flow === true ? 'flow' : null;
}
