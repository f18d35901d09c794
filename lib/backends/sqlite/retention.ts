// Retention on SQLite: trim and dead-letter purge (their statements in
// retention-plans.ts). Each moves its bounds in one short transaction, then
// deletes in chunks, each chunk its own transaction, pausing between them
// (pacer.ts): a claim during a million-event trim waits for one chunk at most,
// never for the trim.
import { performance } from 'node:perf_hooks';
import type { TrimResult } from '../../core/types';
import type { TrimRequest } from '../backend';
import { decideTrim, type GroupPosition, type PartitionMark } from '../sql/trim-plan';
import type { SqliteContext } from './context';
import { recountKeys } from './keys';
import { lastBefore } from './time-lookup';

/**
 * How long one chunk should hold the connection. A claim (fetch + ack) takes
 * about 0.15 ms in-process and waits for at most one chunk, so a chunk of a
 * quarter of a millisecond keeps the slowest claim during a trim within a few
 * times the usual one (about 30 events a chunk at a million events, on a loaded
 * machine). The chunk size follows what chunks actually take (rows are not all
 * the same size, and the machine is not always as busy), between the bounds below.
 */
const CHUNK_TARGET_MS = 0.25;
const CHUNK_MIN_ROWS = 16;
const CHUNK_MAX_ROWS = 4096;
const CHUNK_FIRST_ROWS = 128;

/** Runs `step` (one transaction deleting at most `rows` rows; -1 when done) until done, sizing and pacing the chunks. */
async function chunked(ctx: SqliteContext, step: (rows: number) => Promise<number>): Promise<number> {
  let rows = CHUNK_FIRST_ROWS;
  let total = 0;
  for (;;) {
    const t0 = performance.now();
    const n = await step(rows);
    const ms = performance.now() - t0;
    if (n < 0) return total;
    total += n;
    if (ms < CHUNK_TARGET_MS / 2) rows = Math.min(CHUNK_MAX_ROWS, rows * 2);
    else if (ms > CHUNK_TARGET_MS) rows = Math.max(CHUNK_MIN_ROWS, Math.floor(rows / 2));
    await ctx.pacer.pause(ms);
  }
}

interface Point {
  partition: number;
  trimmedTo: number;
}

/**
 * Move every partition's trim point (sql/trim-plan.ts decides, as on PostgreSQL),
 * in one transaction, and say what each group skipped. Forced, a group behind the
 * point gets its cursor moved past it; its deliveries there stop counting at once
 * (the trim guard in plans.ts) and are deleted with the events.
 */
function movePoints(ctx: SqliteContext, req: TrimRequest): { points: Point[]; skipped: Record<string, number> } {
  const { plans: p, retention: q } = ctx;
  const stream = req.stream;
  const rows = ctx.stmt(p.partitionMarks).all(stream);
  const marks: PartitionMark[] = rows.map((m) => ({ hwm: m.hwm, trimmedTo: m.trimmed_to }));
  const before = req.before;
  const lastBefores = before === undefined ? null : rows.map((m) => lastBefore(ctx.stmt(p.tsMaxAt), stream, m, before));
  const groups: GroupPosition[] = ctx
    .stmt(q.groupCursors)
    .all(stream)
    .map((c) => {
      const tt = marks[c.partition].trimmedTo;
      const firstOpen = ctx.stmt(p.firstOpen).get(stream, c.group_name, c.partition, tt)?.sequence ?? null;
      return { group: c.group_name, partition: c.partition, cursor: Math.max(c.cursor, tt + 1), firstOpen };
    });
  const decision = decideTrim(marks, req, lastBefores, groups);
  const skipped: Record<string, number> = {};
  for (const g of ctx.stmt(q.groupNames).all(stream)) skipped[g.name] = decision.neverOffered.get(g.name) ?? 0;
  for (const { group, partition, point } of decision.lagging) {
    // Its offered, unfinished events there: the deliveries in (trim point, new point].
    skipped[group] += Number(ctx.stmt(q.inFlightUpTo).get(stream, group, partition, marks[partition].trimmedTo, point)!.n);
    ctx.stmt(q.advanceCursor).run(point + 1, stream, group, partition, point + 1);
  }
  decision.points.forEach((point, partition) => {
    if (point > marks[partition].trimmedTo) ctx.stmt(q.setTrimmedTo).run(point, stream, partition, point);
  });
  // Open deliveries of keys went below the point (they stop counting at once): waiting ones above it get the places.
  const now = ctx.clock.now();
  for (const { group, partition } of decision.lagging) recountKeys(ctx, stream, group, partition, now);
  return { points: decision.points.map((trimmedTo, partition) => ({ partition, trimmedTo })), skipped };
}

export async function trim(ctx: SqliteContext, req: TrimRequest): Promise<TrimResult> {
  await ctx.base.mustStream(req.stream);
  const out = await trimStream(ctx, req);
  ctx.wake(req.stream); // a forced trim may have moved cursors past work a consumer waits on
  return out;
}

/** Delete a group's dead letters dead-lettered before `before` (all when null), a chunk at a time. */
export async function purgeDeadLetters(ctx: SqliteContext, stream: string, group: string, before: Date | null): Promise<number> {
  await ctx.base.mustGroup(stream, group);
  const until = before === null ? Number.MAX_SAFE_INTEGER : before.getTime();
  return chunked(ctx, (rows) =>
    ctx.write('purgeDeadLetters', () => {
      const n = ctx.stmt(ctx.retention.purgeDeadLetters).run(stream, group, stream, group, until, rows).changes;
      return n === 0 ? -1 : n;
    }),
  );
}

/** Move the trim points, then delete what is below them: the stream's events, then each group's deliveries there. */
async function trimStream(ctx: SqliteContext, req: TrimRequest): Promise<TrimResult> {
  const { stream } = req;
  const q = ctx.retention;
  const { points, skipped } = await ctx.write('trim', () => movePoints(ctx, req));
  let removed = 0;
  for (const { partition, trimmedTo } of points) {
    // From the lowest event left, not from the old point: an interrupted trim's leftovers go too.
    removed += await chunked(ctx, (rows) =>
      ctx.write('trim', () => {
        const first = ctx.stmt(q.firstEvent).get(stream, partition)?.seq ?? null;
        if (first === null || first > trimmedTo) return -1;
        return ctx.stmt(q.deleteEvents).run(stream, partition, first, Math.min(trimmedTo, first + rows - 1)).changes;
      }),
    );
    for (const group of Object.keys(skipped)) {
      await chunked(ctx, (rows) =>
        ctx.write('trim', () => {
          const first = ctx.stmt(q.firstDelivery).get(stream, group, partition)?.seq ?? null;
          if (first === null || first > trimmedTo) return -1;
          return ctx.stmt(q.deleteDeliveries).run(stream, group, partition, first, Math.min(trimmedTo, first + rows - 1)).changes;
        }),
      );
    }
  }
  return { stream, removed, partitions: points, skipped };
}
