// Recovery and inspection on SQLite: re-opening offered events (replay, reset,
// redrive of dead letters), and what a group's state says (lag, groupInfo, dead
// letters and their count).
import { RheoError } from '../../core/errors';
import type { DeadLetter, GroupInfo, Lag } from '../../core/types';
import type { ReplayRequest, ResolvedStart } from '../backend';
import { type DbPartitionState, groupInfoOf, lagOf, pauseOf, toDeadLetter, toGroup } from '../sql/rows';
import type { SqliteContext } from './context';
import { skipsOf } from './waiting';
import { startAfters } from './group-start';
import { recountGroup, storedPlaces } from './keys';
import { lastBefore } from './time-lookup';

export async function replay(ctx: SqliteContext, req: ReplayRequest): Promise<number> {
  const info = await ctx.base.mustStream(req.stream);
  await ctx.base.mustGroup(req.stream, req.group);
  const { stream, group } = req;
  const now = ctx.clock.now();
  const n = await ctx.write('replay', () => {
    const p = ctx.plans;
    const keyed = storedPlaces(ctx, stream, group) !== null;
    if (req.kind === 'events') {
      let reopened = 0;
      for (const e of req.events) reopened += reopen(ctx, stream, group, e.partition, e.sequence, keyed) ? 1 : 0;
      // Re-opened keyed deliveries wait: places are counted again from the rows (keys.ts).
      if (keyed) recountGroup(ctx, stream, group, new Set(req.events.map((e) => e.partition)), now);
      return reopened;
    }
    const parts = req.partitions ?? Array.from({ length: info.partitions }, (_, i) => i);
    const marks = new Map(
      ctx
        .stmt(p.partitionMarks)
        .all(stream)
        .map((m) => [m.partition, m]),
    );
    let reopened = 0;
    for (const partition of parts) {
      const m = marks.get(partition);
      if (!m) continue;
      // Never below the trim point: only events still there are re-opened (and counted).
      const from = req.kind === 'time' ? lastBefore(ctx.stmt(p.tsMaxAt), stream, m, req.from) : Math.min(req.afterSequence, m.hwm);
      const after = Math.max(from, m.trimmed_to);
      ctx.stmt(p.rewindDeliveries).run(stream, group, partition, after);
      ctx.stmt(p.rewindDeadLetters).run(stream, group, partition, after);
      ctx.stmt(p.setCursor).run(after + 1, stream, group, partition);
      reopened += m.hwm - after;
    }
    // Open deliveries of keys went with the rewind: their waiting ones below it get the places.
    if (keyed) recountGroup(ctx, stream, group, parts, now);
    return reopened;
  });
  ctx.wake(stream);
  return n;
}

/** Re-open one offered event (below the cursor, above the trim point); false when it is pending anyway, or gone. */
function reopen(ctx: SqliteContext, stream: string, group: string, partition: number, sequence: number, keyed: boolean): boolean {
  const cur = ctx.stmt(ctx.plans.cursor).get(stream, group, partition);
  if (!cur || sequence >= cur.cursor || sequence <= cur.trimmed_to) return false;
  reopenRow(ctx, stream, group, partition, sequence, keyed);
  ctx.stmt(ctx.plans.deleteDeadLetter).run(stream, group, partition, sequence);
  return true;
}

/** The re-opened delivery row; in a group with key places a keyed one comes back waiting (flow-plans.ts reopenKeyed). */
function reopenRow(ctx: SqliteContext, stream: string, group: string, partition: number, sequence: number, keyed: boolean): void {
  if (keyed) ctx.stmt(ctx.flow.reopenKeyed).run(group, stream, partition, sequence);
  else ctx.stmt(ctx.plans.reopen).run(stream, group, partition, sequence);
}

export async function reset(ctx: SqliteContext, stream: string, group: string, start: ResolvedStart): Promise<void> {
  const info = await ctx.base.mustStream(stream);
  await ctx.base.mustGroup(stream, group);
  await ctx.write('reset', () => {
    const afters = startAfters(ctx, stream, info.partitions, start);
    ctx.stmt(ctx.plans.resetDeliveries).run(stream, group);
    ctx.stmt(ctx.plans.resetDeadLetters).run(stream, group);
    // A group started over starts its rate limit's window over too (as on memory).
    ctx.stmt(ctx.flow.setRateLog).run(null, stream, group);
    afters.forEach((after, p) => ctx.stmt(ctx.plans.setCursor).run(after + 1, stream, group, p));
  });
  ctx.wake(stream);
}

export async function redrive(ctx: SqliteContext, stream: string, group: string, eventIds: string[] | 'all'): Promise<number> {
  const info = await ctx.base.mustStream(stream);
  await ctx.base.mustGroup(stream, group);
  const now = ctx.clock.now();
  const n = await ctx.write('redrive', () => {
    const keyed = storedPlaces(ctx, stream, group) !== null;
    // Every dead letter whose event is still there: two statements, however many there are.
    if (eventIds === 'all') {
      const n = ctx.stmt(keyed ? ctx.flow.redriveAllKeyed : ctx.plans.redriveAll).run(stream, group).changes;
      ctx.stmt(ctx.plans.redriveAllDelete).run(stream, group);
      if (keyed && n > 0)
        recountGroup(
          ctx,
          stream,
          group,
          Array.from({ length: info.partitions }, (_, p) => p),
          now,
        );
      return n;
    }
    const dead = [...new Set(eventIds)].map((id) => ctx.stmt(ctx.plans.deadById).get(group, stream, id)).filter((r) => r !== undefined);
    for (const d of dead) {
      reopenRow(ctx, stream, group, Number(d.partition), Number(d.sequence), keyed);
      ctx.stmt(ctx.plans.deleteDeadLetter).run(stream, group, d.partition, d.sequence);
    }
    if (keyed) recountGroup(ctx, stream, group, new Set(dead.map((d) => Number(d.partition))), now);
    return dead.length;
  });
  if (n > 0) ctx.wake(stream);
  return n;
}

function state(ctx: SqliteContext, stream: string, group: string, now: number): Promise<DbPartitionState[]> {
  return ctx.locked('read', 'lag', () => ctx.stmt(ctx.plans.groupState).all(stream, now, stream, group));
}

export async function lag(ctx: SqliteContext, stream: string, group: string): Promise<Lag> {
  await ctx.base.mustGroup(stream, group);
  return lagOf(stream, group, await state(ctx, stream, group, ctx.clock.now()));
}

export async function groupInfo(ctx: SqliteContext, stream: string, group: string): Promise<GroupInfo> {
  await ctx.base.mustStream(stream);
  // The config and the pause as stored now: another process may have changed them (updateGroup, pauseGroup).
  const stored = await ctx.locked('read', 'groupInfo', () => ctx.stmt(ctx.plans.getGroup).get(stream, group));
  if (!stored) throw RheoError.groupNotFound(stream, group);
  const config = ctx.base.rememberGroup(toGroup(stored));
  const now = ctx.clock.now();
  const rows = await state(ctx, stream, group, now);
  const dead = (await ctx.locked('read', 'groupInfo', () => ctx.stmt(ctx.plans.deadCount).get(stream, group)))!;
  const info = groupInfoOf(stream, group, rows, dead.n, config, now);
  return { ...info, paused: pauseOf(stored, now), skipped: await skipsOf(ctx, stream, group) };
}

export async function deadLetters(ctx: SqliteContext, stream: string, group: string, limit: number, after?: string): Promise<DeadLetter[]> {
  await ctx.base.mustGroup(stream, group);
  let from = { partition: -1, sequence: 0 };
  if (after !== undefined) {
    // By the event while it is there (indexed); a dead letter whose event was trimmed, by the id it kept.
    const pos = await ctx.locked(
      'read',
      'deadLetters',
      () => ctx.stmt(ctx.plans.deadById).get(group, stream, after) ?? ctx.stmt(ctx.plans.deadByKeptId).get(stream, group, after),
    );
    if (!pos) throw RheoError.invalid('after', `is not a dead-lettered event id of group "${group}"`);
    from = { partition: Number(pos.partition), sequence: Number(pos.sequence) };
  }
  const rows = await ctx.locked('read', 'deadLetters', () =>
    ctx.stmt(ctx.plans.deadLetters).all(stream, group, from.partition, from.partition, from.sequence, limit),
  );
  return rows.map((r) => toDeadLetter(stream, group, r));
}

export async function countDeadLetters(ctx: SqliteContext, stream: string, group: string, since: Date | null): Promise<number> {
  await ctx.base.mustGroup(stream, group);
  const row = await ctx.locked('read', 'countDeadLetters', () =>
    since === null
      ? ctx.stmt(ctx.plans.deadCount).get(stream, group)
      : ctx.stmt(ctx.plans.deadCountSince).get(stream, group, since.getTime()),
  );
  return Number(row!.n);
}
