// Where a group (re)starts on SQLite: per partition, the last sequence it skips,
// resolved from a start (beginning, end, after sequences, at a time) when the
// group is created (registry.ts) or reset (recovery.ts).
import type { ResolvedStart } from '../backend';
import type { SqliteContext } from './context';
import { lastBefore } from './time-lookup';

/**
 * Per partition, the last sequence a (re)started group skips: never below the trim
 * point (a start before it starts after it). Runs inside the caller's transaction,
 * so a trim cannot move the point in between.
 */
export function startAfters(ctx: SqliteContext, stream: string, partitions: number, start: ResolvedStart): number[] {
  const out = new Array<number>(partitions).fill(0);
  for (const m of ctx.stmt(ctx.plans.partitionMarks).all(stream)) {
    const p = m.partition;
    let after: number;
    if (start.kind === 'beginning') after = 0;
    else if (start.kind === 'end') after = m.hwm;
    else if (start.kind === 'after') after = typeof start.sequences === 'number' ? start.sequences : (start.sequences[p] ?? 0);
    else after = lastBefore(ctx.stmt(ctx.plans.tsMaxAt), stream, m, start.time);
    out[p] = Math.max(after, m.trimmed_to);
  }
  return out;
}
