// The retention section of the PostgreSQL backend: trim and purgeDeadLetters.
//
// The trim runs in two phases (docs/adr/019-sql-flat-cost.md):
// 1. one short transaction: lock the stream's group partitions in a fixed order
//    (FOR SHARE, or FOR UPDATE when forced), read the marks and the groups'
//    positions, decide the points (sql/trim-plan.ts), drop the deliveries at or
//    below them (forced: the lagging groups' unfinished work, counted), move the
//    lagging cursors, and record the points. Claims, replays and resets of the
//    stream wait for it: milliseconds, whatever the number of events.
// 2. the events at or below each point go in chunks, each its own statement,
//    holding no group lock: a claim meets at most one chunk's row locks, never
//    the whole trim. Safe to run concurrently: a chunk deletes only what is still
//    there, and points only move forward.
import { performance } from 'node:perf_hooks';
import type { TrimResult } from '../../core/types';
import type { TrimRequest } from '../backend';
import { query } from '../sql/statement';
import { decideTrim } from '../sql/trim-plan';
import type { PostgresContext } from './context';
import { startAfters } from './starts';

/** Events per delete: a few milliseconds of work. */
export const TRIM_CHUNK = 1000;

/**
 * After each chunk the trim rests as long as the chunk took (at most this, ms):
 * it uses at most about half of one core, so claims, settles and appends running
 * beside it (on a small server they share its cores) wait for it as little as
 * possible. A trim is background work; it can take twice as long.
 */
export const TRIM_REST_MAX_MS = 10;

const rest = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.min(TRIM_REST_MAX_MS, Math.max(0, ms))));

export async function trim(ctx: PostgresContext, req: TrimRequest): Promise<TrimResult> {
  const { partitions } = await ctx.mustStream(req.stream);
  const plans = ctx.plans.retention;
  const lastBefore = req.before ? await startAfters(ctx, req.stream, partitions, { kind: 'at', time: req.before }) : null;
  const decided = await ctx.tx('trim', async (qr) => {
    const locked = await query(qr, req.force ? plans.lockGroupsExclusive : plans.lockGroupsShared, [req.stream]);
    const marks = (await query(qr, plans.partitions, [req.stream])).map((r) => ({ hwm: Number(r.hwm), trimmedTo: Number(r.trimmed_to) }));
    const positions = (await query(qr, plans.groupPartitions, [req.stream])).map((r) => ({
      group: r.group_name,
      partition: r.partition,
      cursor: Number(r.cursor),
      firstOpen: r.first_open === null ? null : Number(r.first_open),
    }));
    const { points, neverOffered, lagging } = decideTrim(marks, req, lastBefore, positions);
    const skipped: Record<string, number> = {};
    for (const { group_name } of locked) skipped[group_name] = neverOffered.get(group_name) ?? 0;
    const moved = positions.filter((g) => points[g.partition] > marks[g.partition].trimmedTo);
    if (moved.length > 0) {
      const dropped = await query(qr, plans.dropDeliveries, [
        req.stream,
        moved.map((g) => g.group),
        moved.map((g) => g.partition),
        moved.map((g) => points[g.partition]),
        moved.map((g) => marks[g.partition].trimmedTo),
      ]);
      for (const d of dropped) if (d.unfinished) skipped[d.group_name] = (skipped[d.group_name] ?? 0) + 1;
    }
    if (lagging.length > 0) {
      await query(qr, plans.moveCursors, [
        req.stream,
        lagging.map((l) => l.group),
        lagging.map((l) => l.partition),
        lagging.map((l) => l.point),
      ]);
    }
    const rises = points.map((point, p) => ({ p, point })).filter(({ p, point }) => point > marks[p].trimmedTo);
    if (rises.length > 0) await query(qr, plans.markTrimmed, [req.stream, rises.map((r) => r.p), rises.map((r) => r.point)]);
    // What the partitions say now: a concurrent trim may have committed a higher point first.
    const now = await query(qr, plans.partitions, [req.stream]);
    return { points: now.map((r) => Number(r.trimmed_to)), skipped };
  });
  const removed = await deleteUpTo(ctx, req.stream, decided.points);
  return {
    stream: req.stream,
    removed,
    partitions: decided.points.map((trimmedTo, partition) => ({ partition, trimmedTo })),
    skipped: decided.skipped,
  };
}

/**
 * Phase 2: delete the stream's events up to each partition's point, from the
 * first one still stored, in windows of the sequence holding about TRIM_CHUNK
 * events across the partitions, each window its own statement.
 */
async function deleteUpTo(ctx: PostgresContext, stream: string, points: number[]): Promise<number> {
  const top = Math.max(0, ...points);
  const [first] = await ctx.q(ctx.plans.retention.firstStored, [stream, points], 'read', 'trim');
  if (!first) return 0;
  const window = Math.max(1, Math.ceil(TRIM_CHUNK / points.length));
  let removed = 0;
  for (let lo = Number(first.first) - 1; lo < top; lo += window) {
    const t0 = performance.now();
    const [gone] = await ctx.q(ctx.plans.retention.deleteChunk, [stream, lo, Math.min(lo + window, top), points], 'write', 'trim');
    removed += Number(gone.n);
    if (lo + window < top) await rest(performance.now() - t0);
  }
  return removed;
}

/** Dead letters per purge statement. */
const PURGE_CHUNK = 5000;

/** Chunk by chunk (each its own statement), so settles and claims never wait for a whole purge. */
export async function purgeDeadLetters(ctx: PostgresContext, stream: string, group: string, before: Date | null): Promise<number> {
  await ctx.mustGroup(stream, group);
  const plans = ctx.plans.retention;
  let purged = 0;
  for (;;) {
    const [row] =
      before === null
        ? await ctx.q(plans.purgeAll, [stream, group, PURGE_CHUNK], 'write', 'purgeDeadLetters')
        : await ctx.q(plans.purgeBefore, [stream, group, before.getTime(), PURGE_CHUNK], 'write', 'purgeDeadLetters');
    const n = Number(row.n);
    purged += n;
    // Rows another purge holds are skipped, not waited for: an empty chunk means nothing is left to us.
    if (n === 0) return purged;
  }
}
