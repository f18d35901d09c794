import type { TrimResult } from '../../core/types';
import type { TrimRequest } from '../backend';
import { META_FIELDS, type StreamKeys } from './keys';
import type { RedisOps } from './ops';
import { Pace } from './pace';

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
 * A trim (backend.ts, TrimRequest), partition by partition, one slice per script
 * call until the script answers that the point is reached ('done') or, unforced,
 * that a group has not finished the next event ('capped'), resting between slices
 * (pace.ts). Every slice is a consistent state: a process that dies between slices
 * leaves a partition trimmed part of the way, which the next trim continues.
 */
export async function runTrim(ops: RedisOps, k: StreamKeys, req: TrimRequest, partitions: number): Promise<TrimResult> {
  const on = { stream: req.stream };
  let groups = await groupNames(ops, k);
  const skipped: Record<string, number> = {};
  for (const g of groups) skipped[g] = 0;
  let removed = 0;
  const pace = new Pace();
  const all = Array.from({ length: partitions }, (_, p) => p);
  if (req.maxEvents !== undefined || req.before !== undefined) {
    const hws = await ops.call('read', (r) => r.hmget(k.meta, ...all.map((p) => META_FIELDS.highWatermark(p))));
    for (const p of all) {
      // Every sequence up to upTo goes; with `before`, the slices also find the time bound as they go.
      let upTo = req.maxEvents === undefined ? 0 : Math.max(0, Number(hws[p] ?? 0) - req.maxEvents);
      let before: number | '' = req.before === undefined ? '' : req.before.getTime();
      for (;;) {
        const keys = [k.meta, k.ids, k.groups, k.log(p), k.wake];
        for (const name of groups) {
          const g = k.group(name);
          keys.push(g.cfg, g.deliveries, g.leased(p), g.available(p));
        }
        const args = [p, upTo, before, req.force ? 1 : 0, TRIM_SLICE, ...groups];
        const out = (await ops.script('write', 'trim', keys, args, on)) as unknown[];
        if (out[0] === 'regroup') {
          // A group was created since they were listed: it must be seen before anything goes.
          groups = await groupNames(ops, k);
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
  const points = await ops.call('read', (r) => r.hmget(k.meta, ...all.map((p) => META_FIELDS.trimmedTo(p))));
  return {
    stream: req.stream,
    removed,
    partitions: all.map((partition) => ({ partition, trimmedTo: Number(points[partition] ?? 0) })),
    skipped,
  };
}

async function groupNames(ops: RedisOps, k: StreamKeys): Promise<string[]> {
  return (await ops.call('read', (r) => r.smembers(k.groups))).sort();
}
