// The waiting section of the SQLite backend (docs/adr/048-skip-reschedule-cancel.md):
// skip, reschedule and cancelDelayed, each one write transaction, so no claim of any
// process on the file runs between what it reads of a delivery and what it writes. A
// skip ends a delivery as an ack does (its row deleted: the cursor says it was
// offered); a cancelled delayed event carries `cancelled_at`, which the claim reads
// with `deliver_at` and passes as done, so a group whose cursor has not reached it
// never gets a row for it.
import { RheoError } from '../../core/errors';
import type { GroupSkips } from '../../core/types';
import type { CancelDelayedRequest, RescheduleRequest, SettleResult, SkipRequest } from '../backend';
import { CANCELLED_REASON, notDelayed, notInStream, notOffered, settledAlready, waitsForKey, type WaitingOperation } from '../waiting';
import type { SqliteContext } from './context';
import { keyEnded } from './keys';
import type { DbWaiting } from './waiting-plans';

export async function skip(ctx: SqliteContext, req: SkipRequest): Promise<SettleResult[]> {
  await ctx.base.mustGroup(req.stream, req.group);
  const now = ctx.clock.now();
  const { results, changed } = await ctx.write('skip', () => {
    const out = each(ctx, 'skip', req.stream, req.group, req.ids, now, (w) => end(ctx, req.stream, req.group, w, now));
    if (out.changed > 0) ctx.stmt(ctx.waiting.recordSkips).run(out.changed, req.reason, now, req.stream, req.group);
    return out;
  });
  if (changed > 0) ctx.wake(req.stream);
  return results;
}

export async function reschedule(ctx: SqliteContext, req: RescheduleRequest): Promise<SettleResult[]> {
  await ctx.base.mustGroup(req.stream, req.group);
  const now = ctx.clock.now();
  const due = req.deliverAt ? req.deliverAt.getTime() : now + req.delayMs!;
  const { results, changed } = await ctx.write('reschedule', () =>
    each(ctx, 'reschedule', req.stream, req.group, req.ids, now, (w) =>
      ctx.stmt(ctx.waiting.reschedule).run(due, req.stream, req.group, w.partition, w.sequence),
    ),
  );
  if (changed > 0 && due <= now) ctx.wake(req.stream);
  return results;
}

export async function cancelDelayed(ctx: SqliteContext, req: CancelDelayedRequest): Promise<number> {
  await ctx.base.mustStream(req.stream);
  const now = ctx.clock.now();
  const reason = req.reason ?? CANCELLED_REASON;
  const n = await ctx.write('cancelDelayed', () => {
    const e = ctx.stmt(ctx.waiting.eventOf).get(req.stream, req.id);
    if (!e) throw notInStream('cancelDelayed', req.id, req.stream);
    if (e.deliver_at === null) throw notDelayed(req.id);
    if (e.cancelled_at !== null) return 0;
    const rows = ctx.stmt(ctx.waiting.waitingInAll).all(req.stream, req.id);
    // Refused whole while any group runs it: every group is looked at before anything is written.
    const ending = rows.filter((w) => Number(w.sequence) >= Number(w.cursor) || w.state !== null);
    for (const w of ending) {
      if (w.state === 'leased' && Number(w.due_at) > now)
        throw RheoError.leaseHeld('cancelDelayed', req.id, w.group_name, new Date(Number(w.due_at)));
    }
    ctx.stmt(ctx.waiting.cancel).run(now, req.stream, e.partition, e.sequence);
    for (const w of ending) {
      if (w.state !== null) end(ctx, req.stream, w.group_name, w, now);
      ctx.stmt(ctx.waiting.recordSkips).run(1, reason, now, req.stream, w.group_name);
    }
    return ending.length;
  });
  if (n > 0) ctx.wake(req.stream);
  return n;
}

/**
 * End a waiting delivery as an ack does: its row deleted. One with a key (a group with
 * key places) gives its key's place, or its turn, on in this transaction (keys.ts).
 */
function end(ctx: SqliteContext, stream: string, group: string, w: DbWaiting, now: number): void {
  const ended = ctx.stmt(ctx.flow.ackKeyed).get(stream, group, w.partition, w.sequence);
  if (ended?.key != null) keyEnded(ctx, stream, group, w.partition, ended.key, now);
}

/** The group's skips as stored, for groupInfo. */
export async function skipsOf(ctx: SqliteContext, stream: string, group: string): Promise<GroupSkips> {
  const row = await ctx.locked('read', 'groupInfo', () => ctx.stmt(ctx.waiting.skips).get(stream, group));
  if (!row) throw RheoError.groupNotFound(stream, group);
  return {
    count: Number(row.skipped),
    lastReason: row.skip_reason,
    lastAt: row.skipped_at === null ? null : new Date(Number(row.skipped_at)),
  };
}

/** Judge each id against the group's delivery of it, in order, and `apply` to the waiting ones. */
function each(
  ctx: SqliteContext,
  operation: WaitingOperation,
  stream: string,
  group: string,
  ids: string[],
  now: number,
  apply: (w: DbWaiting) => void,
): { results: SettleResult[]; changed: number } {
  // Inside the write: a group deleted since the facade looked answers as it would have then.
  if (!ctx.stmt(ctx.waiting.skips).get(stream, group)) throw RheoError.groupNotFound(stream, group);
  let changed = 0;
  const results = ids.map((id): SettleResult => {
    const w = ctx.stmt(ctx.waiting.waitingIn).get(group, stream, id);
    let error: RheoError | undefined;
    if (!w) error = notInStream(operation, id, stream);
    else if (Number(w.sequence) >= Number(w.cursor)) error = notOffered(operation, id, group);
    else if (w.state === null) error = settledAlready(operation, id, group);
    else if (w.state === 'leased' && Number(w.due_at) > now) error = RheoError.leaseHeld(operation, id, group, new Date(Number(w.due_at)));
    // Its turn is its key's: a time of its own would run it beside the key's open delivery.
    else if (operation === 'reschedule' && w.state === 'waiting') error = waitsForKey(id, group);
    if (error) return { ok: false, error };
    apply(w!);
    changed++;
    return { ok: true };
  });
  return { results, changed };
}
