// "The first event, in sequence order, stamped at or after T" (a start `at`, a
// replay `from`, a trim by age), without an index of its own: every event keeps
// `ts_max`, the highest timestamp of its partition up to it, which never decreases
// along the sequence. So the first event stamped at or after T is the first whose
// ts_max is at or after T, found by bisecting the partition's live range on its
// primary key: about 20 lookups at a million events, and no index to write on
// every append.
import type { SqliteStatement } from '../sql/external';
import type { DbPartitionMarks, DbTsMax } from './plans';

/**
 * The first sequence in [lo, hi] whose ts_max is at least `time`, or null when
 * none is. `tsMaxAt` reads one event's ts_max (undefined when the row is missing,
 * which a live range never has).
 */
export function firstAtOrAfter(tsMaxAt: (sequence: number) => number | undefined, lo: number, hi: number, time: number): number | null {
  if (lo > hi) return null;
  const last = tsMaxAt(hi);
  if (last === undefined || last < time) return null;
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2);
    const v = tsMaxAt(mid);
    if (v !== undefined && v >= time) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/**
 * The sequence before a partition's first live event (above its trim point)
 * stamped at or after `time`; its high watermark when none is. Run inside the
 * caller's transaction, so the range cannot move meanwhile.
 */
export function lastBefore(tsMaxAt: SqliteStatement<DbTsMax>, stream: string, m: DbPartitionMarks, time: Date): number {
  const first = firstAtOrAfter((s) => tsMaxAt.get(stream, m.partition, s)?.ts_max, m.trimmed_to + 1, m.hwm, time.getTime());
  return first === null ? m.hwm : first - 1;
}
