import type { TrimResult } from '../../core/types';
import type { TrimRequest } from '../backend';
import { advance, groupOf, streamOf, type GroupPartition, type MemoryContext } from './context';
import { recountKeys } from './keys';

// The retention section: trim the log, purge dead letters.

/** Events a trim frees between two yields to the event loop: a claim waits at most this much work. */
const TRIM_CHUNK = 1000;

export async function trim(ctx: MemoryContext, req: TrimRequest): Promise<TrimResult> {
  const s = streamOf(ctx, req.stream);
  const skipped: Record<string, number> = {};
  for (const name of s.groups.keys()) skipped[name] = 0;
  // Decide and move every trim point at once (nothing awaits in between), then free memory in chunks.
  s.log.forEach((log, p) => {
    let point = log.trimmedTo;
    if (req.maxEvents !== undefined) point = Math.max(point, log.hwm - req.maxEvents);
    if (req.before !== undefined) point = Math.max(point, log.firstAtOrAfter(req.before.getTime()) - 1);
    point = Math.min(point, log.hwm);
    for (const [name, g] of s.groups) {
      const part = g.parts[p];
      if (part.frontier >= point) continue;
      if (!req.force) point = part.frontier;
      else {
        skipped[name] += skipTo(part, point);
        // Records of keys went with the trim: their places are counted again (keys.ts).
        recountKeys(s, g, part, p, ctx.clock.now());
      }
    }
    log.trimmedTo = Math.max(log.trimmedTo, point);
  });
  let removed = 0;
  for (const log of s.log) {
    for (;;) {
      const n = log.dropTrimmed(TRIM_CHUNK, (e) => {
        if (s.byId.get(e.id) === e) s.byId.delete(e.id);
      });
      removed += n;
      if (n < TRIM_CHUNK) break;
      await new Promise((resolve) => setImmediate(resolve));
    }
  }
  return { stream: req.stream, removed, partitions: s.log.map((log, partition) => ({ partition, trimmedTo: log.trimmedTo })), skipped };
}

/**
 * A forced trim moves a lagging group's partition to `point`: its records at or
 * below it go (a live lease there turns stale), and the frontier jumps there.
 * Returns how many events up to `point` it had not finished.
 */
function skipTo(part: GroupPartition, point: number): number {
  // Never offered: everything from the cursor (or just past the frontier) up to the point.
  let unfinished = Math.max(0, point - Math.max(part.cursor - 1, part.frontier));
  for (const [seq, d] of part.deliveries) {
    if (seq > point) continue;
    if (d.state !== 'acked' && d.state !== 'dead') unfinished++;
    part.deliveries.delete(seq);
    part.open.delete(seq);
  }
  part.cursor = Math.max(part.cursor, point + 1);
  part.frontier = point;
  advance(part);
  return unfinished;
}

export async function purgeDeadLetters(ctx: MemoryContext, stream: string, group: string, before: Date | null): Promise<number> {
  const { g } = groupOf(ctx, stream, group);
  let n = 0;
  for (const [id, dl] of g.dead) {
    if (before === null || dl.at < before.getTime()) {
      g.dead.delete(id);
      n++;
    }
  }
  if (n > 0) g.deadOrder = null;
  return n;
}
