// The recovery section of the PostgreSQL backend: replay, reset and redrive, and
// what an operator inspects (lag, groupInfo, deadLetters, countDeadLetters).
import { RheoError } from '../../core/errors';
import { keyPlaces } from '../../core/flow';
import type { DeadLetter, GroupInfo, Lag } from '../../core/types';
import type { ReplayRequest, ResolvedStart } from '../backend';
import { groupInfoOf, lagOf, pauseOf, toDeadLetter, toGroup } from '../sql/rows';
import { query } from '../sql/statement';
import type { PostgresContext } from './context';
import { skipsOf } from './waiting';
import { partitionMarks, startAfters } from './starts';

export async function replay(ctx: PostgresContext, req: ReplayRequest): Promise<number> {
  const info = await ctx.mustStream(req.stream);
  const keyed = keyPlaces(await ctx.mustGroup(req.stream, req.group)) !== null;
  const all = Array.from({ length: info.partitions }, (_, p) => p);
  // The time lookup runs before the transaction takes the group's locks (it is an index seek per partition,
  // and events appended meanwhile are after it anyway).
  const before = req.kind === 'time' ? await startAfters(ctx, req.stream, info.partitions, { kind: 'at', time: req.from }) : null;
  const n = await ctx.tx('replay', async (qr) => {
    if (req.kind === 'events') {
      const parts = [...new Set(req.events.map((e) => e.partition))].sort((a, b) => a - b);
      await query(qr, ctx.plans.delivery.lockGroupPartitions, [req.stream, req.group, parts]);
      const rows = await query(qr, ctx.plans.recovery.reopen, [
        req.stream,
        req.group,
        req.events.map((e) => e.partition),
        req.events.map((e) => e.sequence),
      ]);
      // Re-opened deliveries of keyed events wait for a place of their key again (plans/flow.ts rekey).
      if (keyed) await query(qr, ctx.plans.flow.rekey, [req.stream, req.group]);
      return rows.length;
    }
    const parts = req.partitions ?? all;
    await query(qr, ctx.plans.delivery.lockGroupPartitions, [req.stream, req.group, parts]);
    const marks = await partitionMarks(ctx, req.stream, qr);
    // Never below the trim point: only events still stored are re-opened, and counted.
    const afters = parts.map((p) =>
      Math.max(marks[p].trimmedTo, Math.min(req.kind === 'sequence' ? req.afterSequence : before![p], marks[p].hwm)),
    );
    await query(qr, ctx.plans.recovery.rewindDeliveries, [req.stream, req.group, parts, afters]);
    await query(qr, ctx.plans.recovery.rewindDeadLetters, [req.stream, req.group, parts, afters]);
    await query(qr, ctx.plans.recovery.rewindCursors, [req.stream, req.group, parts, afters]);
    return parts.reduce((sum, p, i) => sum + (marks[p].hwm - afters[i]), 0);
  });
  await notify(ctx, req.stream);
  return n;
}

export async function reset(ctx: PostgresContext, stream: string, group: string, start: ResolvedStart): Promise<void> {
  const info = await ctx.mustStream(stream);
  await ctx.mustGroup(stream, group);
  const all = Array.from({ length: info.partitions }, (_, p) => p);
  const at = start.kind === 'at' ? await startAfters(ctx, stream, info.partitions, start) : null;
  await ctx.tx('reset', async (qr) => {
    await query(qr, ctx.plans.delivery.lockGroupPartitions, [stream, group, all]);
    const marks = await partitionMarks(ctx, stream, qr);
    const afters = (at ?? (await startAfters(ctx, stream, info.partitions, start, qr))).map((a, p) => Math.max(a, marks[p].trimmedTo));
    await query(qr, ctx.plans.recovery.resetDeliveries, [stream, group]);
    await query(qr, ctx.plans.recovery.resetDeadLetters, [stream, group]);
    await query(qr, ctx.plans.recovery.rewindCursors, [stream, group, all, afters]);
  });
  await notify(ctx, stream);
}

export async function redrive(ctx: PostgresContext, stream: string, group: string, eventIds: string[] | 'all'): Promise<number> {
  const keyed = keyPlaces(await ctx.mustGroup(stream, group)) !== null;
  const info = await ctx.mustStream(stream);
  const all = Array.from({ length: info.partitions }, (_, p) => p);
  const [row] = await ctx.tx('redrive', async (qr) => {
    // As a replay does: a trim deciding its points waits for this (or this for it), so a trim never
    // drops the events of dead letters this makes unfinished again.
    await query(qr, ctx.plans.delivery.lockGroupPartitions, [stream, group, all]);
    const redriven =
      eventIds === 'all'
        ? await query(qr, ctx.plans.recovery.redriveAll, [stream, group, ctx.channel])
        : await query(qr, ctx.plans.recovery.redriveIds, [stream, group, eventIds, ctx.channel]);
    // Redriven deliveries of keyed events wait for a place of their key (plans/flow.ts rekey).
    if (keyed && Number(redriven[0].n) > 0) await query(qr, ctx.plans.flow.rekey, [stream, group]);
    return redriven;
  });
  const n = Number(row.n);
  if (n > 0) ctx.board.wake(stream);
  return n;
}

async function notify(ctx: PostgresContext, stream: string): Promise<void> {
  await ctx.q(ctx.plans.recovery.wake, [ctx.channel, stream], 'write', 'notify').catch(() => undefined);
}

async function state(ctx: PostgresContext, stream: string, group: string) {
  await ctx.mustGroup(stream, group);
  const now = ctx.clock.now();
  const rows = await ctx.q(ctx.plans.recovery.groupState, [stream, group, now], 'read', 'lag');
  return { now, rows };
}

export async function lag(ctx: PostgresContext, stream: string, group: string): Promise<Lag> {
  return lagOf(stream, group, (await state(ctx, stream, group)).rows);
}

export async function groupInfo(ctx: PostgresContext, stream: string, group: string): Promise<GroupInfo> {
  const { now, rows } = await state(ctx, stream, group);
  const [dead] = await ctx.q(ctx.plans.recovery.deadCount, [stream, group], 'read', 'groupInfo');
  // The config and the pause as stored now: another process may have changed them (updateGroup, pauseGroup).
  const [stored] = await ctx.q(ctx.plans.registry.getGroup, [stream, group], 'read', 'groupInfo');
  if (!stored) throw RheoError.groupNotFound(stream, group);
  const info = groupInfoOf(stream, group, rows, dead.n, ctx.rememberGroup(toGroup(stored)), now);
  return { ...info, paused: pauseOf(stored, now), skipped: await skipsOf(ctx, stream, group) };
}

export async function deadLetters(
  ctx: PostgresContext,
  stream: string,
  group: string,
  limit: number,
  after?: string,
): Promise<DeadLetter[]> {
  await ctx.mustGroup(stream, group);
  let from = { partition: -1, sequence: 0 };
  if (after !== undefined) {
    const [pos] = await ctx.q(ctx.plans.recovery.deadLetterPosition, [stream, group, after], 'read', 'deadLetters');
    if (!pos) throw RheoError.invalid('after', `is not a dead-lettered event id of group "${group}"`);
    from = { partition: Number(pos.partition), sequence: Number(pos.sequence) };
  }
  const rows = await ctx.q(ctx.plans.recovery.deadLetters, [stream, group, from.partition, from.sequence, limit], 'read', 'deadLetters');
  return rows.map((r) => toDeadLetter(stream, group, r));
}

export async function countDeadLetters(ctx: PostgresContext, stream: string, group: string, since: Date | null): Promise<number> {
  await ctx.mustGroup(stream, group);
  const [row] =
    since === null
      ? await ctx.q(ctx.plans.recovery.deadCount, [stream, group], 'read', 'countDeadLetters')
      : await ctx.q(ctx.plans.recovery.deadCountSince, [stream, group, since.getTime()], 'read', 'countDeadLetters');
  return Number(row.n);
}
