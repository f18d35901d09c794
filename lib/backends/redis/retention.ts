import type { TrimResult } from '../../core/types';
import type { TrimRequest } from '../backend';
import type { RedisContext, ScriptSubject } from './context';
import { META_FIELDS, type StreamKeys } from './keys';
import { Pace } from './pace';
import { configOf, partitionsOf } from './registry';

// The retention section: trim and purgeDeadLetters (a stream's retention as stored is in codec.ts).

/**
 * Events one trim slice may delete (scripts/trim.ts). A slice reads its entries
 * (to find their ids, and timestamps for an age limit), deletes them and their ids,
 * and (forced) the records of groups behind: about 3 µs per entry on the server,
 * most of it reading the entries into Lua. 100 entries take about 0.3 ms, so a
 * claim, settle or append that arrives meanwhile waits for well under a
 * millisecond (docs/redis.md, "Retention and trim", has the figures).
 */
export const TRIM_SLICE = 100;

/**
 * Dead letters one purge step may delete (or index, for data written before layout
 * 2): about 5 µs each on the server (four sorted-set and hash deletions), so a step
 * takes about half a millisecond, like a trim slice.
 */
export const PURGE_SLICE = 100;

/**
 * A trim (backend.ts, TrimRequest), partition by partition, one slice per script
 * call until the script answers that the point is reached ('done') or, unforced,
 * that a group has not finished the next event ('capped'), resting between slices
 * (pace.ts). Every slice is a consistent state: a process that dies between slices
 * leaves a partition trimmed part of the way, which the next trim continues.
 */
export async function trim(ctx: RedisContext, req: TrimRequest): Promise<TrimResult> {
  const partitions = await partitionsOf(ctx, req.stream);
  const k = ctx.keys(req.stream);
  const on = { stream: req.stream };
  let groups = await groupNames(ctx, k);
  const skipped: Record<string, number> = {};
  for (const g of groups) skipped[g] = 0;
  let removed = 0;
  const pace = new Pace();
  const all = Array.from({ length: partitions }, (_, p) => p);
  if (req.maxEvents !== undefined || req.before !== undefined) {
    const hws = await ctx.call('read', (r) => r.hmget(k.meta, ...all.map((p) => META_FIELDS.highWatermark(p))));
    for (const p of all) {
      // Every sequence up to upTo goes; with `before`, the slices also find the time bound as they go.
      let upTo = req.maxEvents === undefined ? 0 : Math.max(0, Number(hws[p] ?? 0) - req.maxEvents);
      let before: number | '' = req.before === undefined ? '' : req.before.getTime();
      for (;;) {
        const keys = [k.meta, k.ids, k.groups, k.log(p), k.wake];
        for (const name of groups) {
          const g = k.group(name);
          keys.push(g.cfg, g.deliveries, g.leased(p), g.available(p), g.keyOpen(p), g.keyWaiting(p));
        }
        const args = [p, upTo, before, req.force ? 1 : 0, TRIM_SLICE, ...groups];
        const out = (await ctx.script('write', 'trim', keys, args, on)) as unknown[];
        if (out[0] === 'regroup') {
          // A group was created since they were listed: it must be seen before anything goes.
          groups = await groupNames(ctx, k);
          for (const g of groups) skipped[g] ??= 0;
          continue;
        }
        removed += Number(out[1]);
        groups.forEach((g, i) => (skipped[g] += Number(out[4 + i])));
        if (out[3] !== '') {
          upTo = Math.max(upTo, Number(out[3]));
          before = '';
        }
        if (out[0] !== 'more') break;
        await pace.rest();
      }
    }
  }
  const points = await ctx.call('read', (r) => r.hmget(k.meta, ...all.map((p) => META_FIELDS.trimmedTo(p))));
  return {
    stream: req.stream,
    removed,
    partitions: all.map((partition) => ({ partition, trimmedTo: Number(points[partition] ?? 0) })),
    skipped,
  };
}

async function groupNames(ctx: RedisContext, k: StreamKeys): Promise<string[]> {
  return (await ctx.call('read', (r) => r.smembers(k.groups))).sort();
}

/**
 * Purge a group's dead letters (scripts/purge.ts). All of them: one call that
 * UNLINKs the three keys (freed in the background). Before a time: steps of at most
 * PURGE_SLICE through the time index, oldest first, each its own short script call,
 * paced like a trim (pace.ts); a group with dead letters from before layout 2 has them indexed first, in HSCAN
 * steps of the same size (once: every write since keeps the index whole).
 */
export async function purgeDeadLetters(ctx: RedisContext, stream: string, group: string, before: Date | null): Promise<number> {
  await partitionsOf(ctx, stream);
  await configOf(ctx, stream, group);
  const k = ctx.keys(stream);
  const g = k.group(group);
  const on = { stream, group };
  const keys = [k.meta, g.cfg, g.dead, g.deadOrder, g.deadTimes];
  if (before === null) return Number(((await ctx.script('write', 'purge', keys, ['all'], on)) as unknown[])[0]);
  let total = 0;
  let indexed = false;
  const pace = new Pace();
  for (;;) {
    const out = (await ctx.script('write', 'purge', keys, ['before', before.getTime(), PURGE_SLICE, indexed ? 1 : 0], on)) as unknown[];
    if (out[0] === 'index') {
      await indexDeadTimes(ctx, keys, on, pace);
      // Indexed once: whatever a concurrent writer of the old layout adds, this purge goes on.
      indexed = true;
      continue;
    }
    total += Number(out[0]);
    if (Number(out[1]) < PURGE_SLICE) return total;
    await pace.rest();
  }
}

/**
 * Add a group's dead letters written before layout 2 to its time index `deadt`, in
 * HSCAN steps of PURGE_SLICE (the purge script's 'index' mode), paced. `keys` are the
 * purge script's: meta, cfg, dead, deadz, deadt. A purge or a count by time (recovery.ts) needs it.
 */
export async function indexDeadTimes(ctx: RedisContext, keys: string[], on: ScriptSubject, pace: Pace = new Pace()): Promise<void> {
  let cursor = '0';
  do {
    cursor = String(((await ctx.script('write', 'purge', keys, ['index', cursor, PURGE_SLICE], on)) as unknown[])[0]);
    await pace.rest();
  } while (cursor !== '0');
}
