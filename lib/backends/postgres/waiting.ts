// The waiting section of the PostgreSQL backend (docs/adr/048-skip-reschedule-cancel.md):
// skip, reschedule and cancelDelayed. Each is one transaction of two statements
// (plans/waiting.ts): the deliveries judged are locked first, so no claim leases one
// and no settle ends one between the judgement and the change. No fresh event ever
// gets a delivery row here: an id the group's cursor has not reached is refused
// (skip, reschedule), or cancelled on the event's row, which the claim reads with
// deliver_at and passes as done (cancelDelayed).
import { RheoError } from '../../core/errors';
import type { GroupSkips } from '../../core/types';
import type { CancelDelayedRequest, RescheduleRequest, SettleResult, SkipRequest } from '../backend';
import { query } from '../sql/statement';
import type { TypeormQueryable } from '../sql/external';
import { CANCELLED_REASON, notDelayed, notInStream, notOffered, settledAlready, waitsForKey, type WaitingOperation } from '../waiting';
import { intArray, textArray } from './arrays';
import type { PostgresContext } from './context';
import type { DbWaiting } from './plans/waiting';

export async function skip(ctx: PostgresContext, req: SkipRequest): Promise<SettleResult[]> {
  await ctx.mustGroup(req.stream, req.group);
  const now = ctx.clock.now();
  const { results, changed } = await ctx.tx('skip', (qr) =>
    judged(ctx, qr, 'skip', req.stream, req.group, req.ids, now, async (keys) => {
      const params = [req.stream, req.group, keys.partitions, keys.sequences, req.reason, now, ctx.channel];
      await query(qr, ctx.plans.waiting.skip, params);
    }),
  );
  if (changed > 0) ctx.board.wake(req.stream);
  return results;
}

export async function reschedule(ctx: PostgresContext, req: RescheduleRequest): Promise<SettleResult[]> {
  await ctx.mustGroup(req.stream, req.group);
  const now = ctx.clock.now();
  const due = req.deliverAt ? req.deliverAt.getTime() : now + req.delayMs!;
  const { results, changed } = await ctx.tx('reschedule', (qr) =>
    judged(ctx, qr, 'reschedule', req.stream, req.group, req.ids, now, async (keys) => {
      const params = [req.stream, req.group, keys.partitions, keys.sequences, due, now, ctx.channel];
      await query(qr, ctx.plans.waiting.reschedule, params);
    }),
  );
  if (changed > 0 && due <= now) ctx.board.wake(req.stream);
  return results;
}

export async function cancelDelayed(ctx: PostgresContext, req: CancelDelayedRequest): Promise<number> {
  await ctx.mustStream(req.stream);
  const now = ctx.clock.now();
  const n = await ctx.tx('cancelDelayed', async (qr) => {
    const [e] = await query(qr, ctx.plans.waiting.eventForCancel, [req.stream, req.id]);
    if (!e) throw notInStream('cancelDelayed', req.id, req.stream);
    if (e.deliver_at === null) throw notDelayed(req.id);
    if (e.cancelled_at !== null) return 0;
    const rows = await query(qr, ctx.plans.waiting.judgeAll, [req.stream, req.id]);
    // Refused whole while any group runs it: every group is looked at before anything is written.
    const ending = rows.filter((w) => Number(w.sequence) >= Number(w.cursor) || w.state !== null);
    for (const w of ending) {
      if (w.state === 'leased' && Number(w.due_at) > now)
        throw RheoError.leaseHeld('cancelDelayed', req.id, w.group_name!, new Date(Number(w.due_at)));
    }
    const groups = textArray(ending.map((w) => w.group_name!));
    const params = [req.stream, groups, e.partition, e.sequence, now, req.reason ?? CANCELLED_REASON, ctx.channel];
    await query(qr, ctx.plans.waiting.cancel, params);
    return ending.length;
  });
  if (n > 0) ctx.board.wake(req.stream);
  return n;
}

/** The group's skips as stored, for groupInfo. */
export async function skipsOf(ctx: PostgresContext, stream: string, group: string): Promise<GroupSkips> {
  const [row] = await ctx.q(ctx.plans.waiting.skips, [stream, group], 'read', 'groupInfo');
  if (!row) throw RheoError.groupNotFound(stream, group);
  return {
    count: Number(row.skipped),
    lastReason: row.skip_reason,
    lastAt: row.skipped_at === null ? null : new Date(Number(row.skipped_at)),
  };
}

/** Judge each id against the group's (locked) delivery of it, in order, and `apply` to the waiting ones, by key. */
async function judged(
  ctx: PostgresContext,
  qr: TypeormQueryable,
  operation: WaitingOperation,
  stream: string,
  group: string,
  ids: string[],
  now: number,
  apply: (keys: { partitions: unknown; sequences: unknown }) => Promise<void>,
): Promise<{ results: SettleResult[]; changed: number }> {
  // Inside the transaction: a group deleted since the facade looked answers as it would have then.
  if ((await query(qr, ctx.plans.waiting.skips, [stream, group])).length === 0) throw RheoError.groupNotFound(stream, group);
  const rows = await query(qr, ctx.plans.waiting.judge, [stream, group, textArray(ids)]);
  const chosen: DbWaiting[] = [];
  const results = rows.map((w, i): SettleResult => {
    const id = ids[i];
    let error: RheoError | undefined;
    if (w.partition === null || w.cursor === null) error = notInStream(operation, id, stream);
    else if (w.state !== null) {
      if (w.state === 'waiting' && operation === 'reschedule') error = waitsForKey(id, group);
      else if (w.state === 'leased' && Number(w.due_at) > now)
        error = RheoError.leaseHeld(operation, id, group, new Date(Number(w.due_at)));
    } else if (Number(w.sequence) >= Number(w.cursor)) error = notOffered(operation, id, group);
    else error = settledAlready(operation, id, group);
    if (error) return { ok: false, error };
    chosen.push(w);
    return { ok: true };
  });
  if (chosen.length > 0) {
    await apply({ partitions: intArray(chosen.map((w) => w.partition!)), sequences: intArray(chosen.map((w) => Number(w.sequence))) });
  }
  return { results, changed: chosen.length };
}
