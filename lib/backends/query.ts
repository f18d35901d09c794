import type { RheoEvent } from '../core/types';
import type { QueryRequest } from './backend';
import { jsonFieldsFilter } from './json-filter';

// The parts of a query every backend that scans in JavaScript shares: which
// partitions and which sequence range of each it reads (the request's bounds and
// the keyset cursor), the predicate over a decoded event, and the merge of the
// per-partition results into query order (ADR 005).

/** The partitions a query reads: the one its `where.partition` names, else all of the stream's. */
export function queryPartitions(req: QueryRequest, partitionCount: number): number[] {
  return req.where.partition === undefined ? Array.from({ length: partitionCount }, (_, p) => p) : [req.where.partition];
}

/**
 * The inclusive sequence range `[lo, hi]` of partition `p` a query reads, given the
 * partition's high watermark: `afterSequence`/`untilSequence`, cut by the keyset
 * cursor (strictly after `(sequence, partition)` ascending, before it descending).
 * Empty when `lo > hi`.
 */
export function partitionRange(req: QueryRequest, p: number, highWatermark: number): { lo: number; hi: number } {
  let lo = (req.afterSequence ?? 0) + 1;
  let hi = Math.min(highWatermark, req.untilSequence ?? highWatermark);
  if (req.after) {
    const { sequence, partition } = req.after;
    if (req.order === 'asc') lo = Math.max(lo, p > partition ? sequence : sequence + 1);
    else hi = Math.min(hi, p < partition ? sequence : sequence - 1);
  }
  return { lo, hi };
}

/** Per-partition matches (each at most `limit`, in scan order) merged into query order: by (sequence, partition), cut to `limit`. */
export function mergeByPosition<E extends { sequence: number; partition: number }>(found: E[], req: QueryRequest): E[] {
  const dir = req.order === 'asc' ? 1 : -1;
  found.sort((a, b) => dir * (a.sequence - b.sequence || a.partition - b.partition));
  return found.length > req.limit ? found.slice(0, req.limit) : found;
}

/** The whole `where` plus the time bounds of a query as one predicate over a decoded event. */
export function eventFilter(req: QueryRequest): (e: RheoEvent) => boolean {
  const from = req.from?.getTime();
  const to = req.to?.getTime();
  const fields = jsonFieldsFilter(req.where);
  return (e) => {
    if (req.where.type !== undefined && e.type !== req.where.type) return false;
    if (req.where.key !== undefined && e.key !== req.where.key) return false;
    const ts = e.timestamp.getTime();
    if (from !== undefined && ts < from) return false;
    if (to !== undefined && ts > to) return false;
    return fields === null || fields(e.metadata as Record<string, unknown>, e.payload);
  };
}
