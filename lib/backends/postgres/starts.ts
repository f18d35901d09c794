// Where a group (re)starts, per partition, as sequences: createGroup's start,
// and the points a replay, reset or trim works from.
import type { ResolvedStart } from '../backend';
import type { TypeormQueryable } from '../sql/external';
import type { PostgresContext } from './context';

/** Per partition, the last sequence a (re)started group skips. */
export async function startAfters(
  ctx: PostgresContext,
  stream: string,
  partitions: number,
  start: ResolvedStart,
  runner?: TypeormQueryable,
): Promise<number[]> {
  if (start.kind === 'beginning') return new Array(partitions).fill(0);
  if (start.kind === 'after') {
    const s = start.sequences;
    return Array.from({ length: partitions }, (_, p) => (typeof s === 'number' ? s : (s[p] ?? 0)));
  }
  const out = new Array(partitions).fill(0);
  if (start.kind === 'end') {
    for (const row of await ctx.q(ctx.plans.registry.highWatermarks, [stream], 'read', 'createGroup', runner))
      out[Number(row.partition)] = Number(row.hwm);
  } else {
    for (const row of await ctx.q(ctx.plans.registry.lastBefore, [stream, start.time.getTime()], 'read', 'createGroup', runner))
      out[Number(row.partition)] = Number(row.after);
  }
  return out;
}

/** Per partition, the high watermark and the trim point. */
export async function partitionMarks(
  ctx: PostgresContext,
  stream: string,
  runner?: TypeormQueryable,
): Promise<Array<{ hwm: number; trimmedTo: number }>> {
  const rows = await ctx.q(ctx.plans.registry.highWatermarks, [stream], 'read', 'marks', runner);
  const out: Array<{ hwm: number; trimmedTo: number }> = [];
  for (const r of rows) out[Number(r.partition)] = { hwm: Number(r.hwm), trimmedTo: Number(r.trimmed_to) };
  return out;
}
