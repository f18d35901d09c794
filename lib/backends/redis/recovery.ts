import { RheoError } from '../../core/errors';
import type { DeadLetter, GroupInfo, GroupPause, Lag } from '../../core/types';
import type { ReplayRequest, ResolvedStart } from '../backend';
import { copyGroupConfig } from '../copies';
import { eventFromEntry, parseDeadRecord } from './codec';
import type { RedisContext } from './context';
import { skipsOf } from './waiting';
import { tidy } from './delivery';
import { firstAtOrAfter } from './log-scan';
import { activePause } from './pause';
import { configOf, getGroup, partitionsOf, startArgs } from './registry';
import { indexDeadTimes } from './retention';
import { flowSlots } from './keys';

// The recovery section: replay, reset, redrive, the dead letters, lag and groupInfo.

/** Events per re-open call (replay by query, redrive by id) and dead letters per redrive-all page. */
const REOPEN_PER_CALL = 100;

/** An event a re-open call names: its id and where it is stored. */
interface StoredEvent {
  id: string;
  partition: number;
  sequence: number;
}

/**
 * Replay by sequence or time rewinds partitions: the replay script records the target (or
 * applies it at once when nothing was delivered above it) and tidy brings the
 * cursor down in bounded slices. Replay by events re-opens them in bounded calls.
 */
export async function replay(ctx: RedisContext, req: ReplayRequest): Promise<number> {
  const P = await partitionsOf(ctx, req.stream);
  await configOf(ctx, req.stream, req.group);
  const k = ctx.keys(req.stream);
  const g = k.group(req.group);
  if (req.kind === 'events') {
    return reopen(ctx, req.stream, req.group, 'events', req.events);
  }
  const parts = req.partitions ?? Array.from({ length: P }, (_, p) => p);
  // Finish what an earlier replay of these partitions left, so this one starts from a settled state.
  await tidy(ctx, req.stream, req.group, parts);
  const args: Array<string | number> = [req.kind === 'sequence' ? 'sequence' : 'after'];
  for (const p of parts) {
    args.push(
      p,
      req.kind === 'sequence'
        ? req.afterSequence
        : (await ctx.call('read', (redis) => firstAtOrAfter(redis, k.log(p), req.from.getTime()))) - 1,
    );
  }
  const out = (await ctx.script('write', 'replay', [k.meta, g.cfg, k.wake], args, req)) as unknown[];
  await tidy(ctx, req.stream, req.group, out.slice(1).map(Number));
  return Number(out[0]);
}

/** Re-open events in calls of at most REOPEN_PER_CALL; returns the sum of the calls' counts. */
async function reopen(
  ctx: RedisContext,
  stream: string,
  group: string,
  mode: 'events' | 'redrive',
  events: StoredEvent[],
): Promise<number> {
  const k = ctx.keys(stream);
  const g = k.group(group);
  let n = 0;
  for (let from = 0; from < events.length; from += REOPEN_PER_CALL) {
    const slots = new Map<number, number>();
    const args: Array<string | number> = [mode, ctx.clock.now()];
    for (let i = from; i < Math.min(from + REOPEN_PER_CALL, events.length); i++) {
      const e = events[i];
      if (!slots.has(e.partition)) slots.set(e.partition, slots.size);
      args.push(slots.get(e.partition)!, e.partition, e.sequence, e.id);
    }
    const parts = [...slots.keys()];
    const keys = [k.meta, g.cfg, g.deliveries, g.dead, g.deadOrder, k.wake, g.deadTimes, ...g.slots(parts), ...flowSlots(k, g, parts)];
    n += Number(await ctx.script('write', 'reopen', keys, args, { stream, group }));
  }
  return n;
}

export async function reset(ctx: RedisContext, stream: string, group: string, start: ResolvedStart): Promise<void> {
  const P = await partitionsOf(ctx, stream);
  await configOf(ctx, stream, group);
  const k = ctx.keys(stream);
  const g = k.group(group);
  const { mode, after } = await startArgs(ctx, stream, P, start);
  const all = Array.from({ length: P }, (_, p) => p);
  const keys = [k.meta, g.cfg, g.deliveries, g.dead, g.deadOrder, k.wake, g.deadTimes, ...g.slots(all), ...flowSlots(k, g, all)];
  await ctx.script('write', 'reset', keys, [mode, ...after], { stream, group });
}

/**
 * `all`: page through the dead letters in (partition, sequence) order, one
 * bounded script call per page, each resuming after the last member of the
 * previous one. By id: look the records up and re-open them, in bounded calls.
 */
export async function redrive(ctx: RedisContext, stream: string, group: string, eventIds: string[] | 'all'): Promise<number> {
  const P = await partitionsOf(ctx, stream);
  await configOf(ctx, stream, group);
  const k = ctx.keys(stream);
  const g = k.group(group);
  if (eventIds === 'all') {
    const all = Array.from({ length: P }, (_, p) => p);
    const keys = [k.meta, g.cfg, g.deliveries, g.dead, g.deadOrder, k.wake, g.deadTimes, ...g.slots(all), ...flowSlots(k, g, all)];
    let total = 0;
    let start = '-';
    for (;;) {
      const [n, seen, last] = (await ctx.script('write', 'redrive', keys, [ctx.clock.now(), start, REOPEN_PER_CALL], {
        stream,
        group,
      })) as [number, number, string];
      total += Number(n);
      // Pages are cut by what was looked at: dead letters of trimmed events stay, skipped.
      if (Number(seen) < REOPEN_PER_CALL) return total;
      start = `(${last}`;
    }
  }
  const ids = [...new Set(eventIds)];
  let total = 0;
  for (let from = 0; from < ids.length; from += REOPEN_PER_CALL) {
    const chunk = ids.slice(from, from + REOPEN_PER_CALL);
    const recs = await ctx.call('read', (redis) => redis.hmget(g.dead, ...chunk));
    const events: StoredEvent[] = [];
    chunk.forEach((id, i) => {
      const rec = recs[i];
      if (rec === null) return;
      const d = parseDeadRecord(rec);
      events.push({ id, partition: d.partition, sequence: d.sequence });
    });
    total += await reopen(ctx, stream, group, 'redrive', events);
  }
  return total;
}

export async function deadLetters(ctx: RedisContext, stream: string, group: string, limit: number, after?: string): Promise<DeadLetter[]> {
  const P = await partitionsOf(ctx, stream);
  const k = ctx.keys(stream);
  const g = k.group(group);
  const keys = [k.meta, g.cfg, g.dead, g.deadOrder, ...Array.from({ length: P }, (_, p) => k.log(p))];
  const out = (await ctx.script('read', 'deadLetters', keys, [limit, after ?? ''], { stream, group }).catch((err: RheoError) => {
    throw err.code === 'invalid_argument' ? RheoError.invalid('after', `is not a dead-lettered event id of group "${group}"`) : err;
  })) as unknown[];
  const letters: DeadLetter[] = [];
  for (let i = 0; i + 2 < out.length; i += 3) {
    const d = parseDeadRecord(String(out[i + 1]));
    const fields = out[i + 2] as string[];
    letters.push({
      stream,
      group,
      eventId: String(out[i]),
      partition: d.partition,
      sequence: d.sequence,
      reason: d.reason,
      attempt: d.attempt,
      deadLetteredAt: new Date(d.at),
      event: fields.length ? eventFromEntry(stream, d.partition, d.sequence, fields) : null,
    });
  }
  return letters;
}

/**
 * Count a group's dead letters (scripts/count-dead-letters.ts), one constant-time
 * script call: all of them, or those dead-lettered at or after `since`, by the time
 * index `deadt`. A group with dead letters from before layout 2 has them indexed
 * first (retention.ts, indexDeadTimes), once: every write since keeps the index whole.
 */
export async function countDeadLetters(ctx: RedisContext, stream: string, group: string, since: Date | null): Promise<number> {
  await partitionsOf(ctx, stream);
  await configOf(ctx, stream, group);
  const k = ctx.keys(stream);
  const g = k.group(group);
  const on = { stream, group };
  const keys = [k.meta, g.cfg, g.dead, g.deadTimes];
  const count = async (indexed: boolean) =>
    ((await ctx.script('read', 'countDeadLetters', keys, [since === null ? '' : since.getTime(), indexed ? 1 : 0], on)) as unknown[])[0];
  const first = await count(false);
  if (first !== 'index') return Number(first);
  await indexDeadTimes(ctx, [k.meta, g.cfg, g.dead, g.deadOrder, g.deadTimes], on);
  // Indexed once: whatever a concurrent writer of the old layout adds, count what the index holds.
  return Number(await count(true));
}

export async function lag(ctx: RedisContext, stream: string, group: string): Promise<Lag> {
  return (await inspect(ctx, stream, group)).lag;
}

export async function groupInfo(ctx: RedisContext, stream: string, group: string): Promise<GroupInfo> {
  // The config as stored now: another process may have changed it (updateGroup).
  const config = await getGroup(ctx, stream, group);
  if (!config) throw RheoError.groupNotFound(stream, group);
  const { lag, inflight, dead, oldest, now, paused, waitingForKey } = await inspect(ctx, stream, group);
  return {
    stream,
    group,
    lag,
    inflight,
    deadLetters: dead,
    oldestUnsettledAgeMs: oldest === null ? null : Math.max(0, now - oldest),
    config: copyGroupConfig(config),
    waitingForKey,
    paused,
    skipped: await skipsOf(ctx, stream, group),
    ...(ctx.durabilityWarnings.length > 0 ? { warnings: [...ctx.durabilityWarnings] } : {}),
  };
}

/** What one inspect script call reads of a group, at `now`; `pending`: partitions with work left unfinished. */
interface Inspection {
  lag: Lag;
  inflight: number;
  dead: number;
  oldest: number | null;
  now: number;
  pending: number[];
  /** The group's pause while it holds at `now` (not past its until), else null. */
  paused: GroupPause | null;
  /** Deliveries waiting for a place of their key (docs/adr/049-flow-control.md). */
  waitingForKey: number;
}

/** One consistent read; work found unfinished (a cut-short walk, a rewind) is finished and the read repeated. */
async function inspect(ctx: RedisContext, stream: string, group: string): Promise<Inspection> {
  const first = await inspectOnce(ctx, stream, group);
  if (first.pending.length === 0) return first;
  await tidy(ctx, stream, group, first.pending);
  return inspectOnce(ctx, stream, group);
}

async function inspectOnce(ctx: RedisContext, stream: string, group: string): Promise<Inspection> {
  const P = await partitionsOf(ctx, stream);
  const k = ctx.keys(stream);
  const g = k.group(group);
  const keys = [k.meta, g.cfg, g.deliveries, g.dead];
  for (let p = 0; p < P; p++) keys.push(g.leased(p), k.log(p), g.keyWaiting(p));
  const now = ctx.clock.now();
  const out = (await ctx.script('read', 'inspect', keys, [now], { stream, group })) as Array<number | string | null>;
  const partitions = [];
  const pending: number[] = [];
  let inflight = 0;
  let oldest: number | null = null;
  for (let p = 0; p < P; p++) {
    const [hw, f, live, ts, unfinished] = out.slice(1 + 5 * p, 6 + 5 * p);
    const highWatermark = Number(hw);
    const frontier = Number(f);
    partitions.push({ partition: p, frontier, highWatermark, lag: Math.max(0, highWatermark - frontier) });
    inflight += Number(live);
    if (ts !== '' && (oldest === null || Number(ts) < oldest)) oldest = Number(ts);
    if (Number(unfinished) === 1) pending.push(p);
  }
  const lag: Lag = { stream, group, lag: partitions.reduce((n, x) => n + x.lag, 0), partitions };
  // The pause fields follow the partitions' figures (scripts/inspect.ts).
  const paused = activePause(out.slice(1 + 5 * P, 5 + 5 * P) as Array<string | null>, now);
  return { lag, inflight, dead: Number(out[0]), oldest, now, pending, paused, waitingForKey: Number(out[5 + 5 * P]) };
}
