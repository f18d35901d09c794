// `tail`: the latest events of a stream, then what comes after them. A query
// cursor is one (sequence, partition) position, which cannot follow a stream of
// several partitions: sequences are per partition, so a new event of a partition
// that is behind sorts before the cursor and would never be shown. The tail
// cursor therefore holds a position per partition (the last sequence seen in
// each), and every page reads each partition after its own position.
import { RheoError } from '../core/errors';
import { DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT } from '../core/limits';
import type { Rheo } from '../core/rheo';
import type { QueryWhere, RheoEvent, StreamInfo } from '../core/types';
import { checkInt, checkObject } from '../core/validate';
import { readHighWatermarks } from './high-watermarks';

/** One page of a tail: events in (sequence, partition) order, and each partition's position after it. */
export interface TailPage {
  events: RheoEvent[];
  positions: number[];
}

const PREFIX = 't1.';

/** The opaque cursor of a tail: its per-partition positions. */
export function encodeTailCursor(positions: number[]): string {
  return PREFIX + Buffer.from(positions.join(',')).toString('base64url');
}

export function decodeTailCursor(cursor: unknown, partitions: number): number[] {
  const invalid = () => RheoError.invalid('cursor', 'is not a tail cursor of this stream');
  if (typeof cursor !== 'string' || !cursor.startsWith(PREFIX)) throw invalid();
  const text = Buffer.from(cursor.slice(PREFIX.length), 'base64url').toString();
  if (!/^\d{1,15}(,\d{1,15})*$/.test(text)) throw invalid();
  const positions = text.split(',').map(Number);
  if (positions.length !== partitions) throw invalid();
  return positions;
}

/** The options of a tail read, checked. */
export function checkTailOptions(options: unknown): { where: QueryWhere; limit: number; cursor?: string } {
  const o = checkObject('options', options ?? {});
  const where = o.where === undefined ? {} : (checkObject('where', o.where) as QueryWhere);
  const limit = o.limit === undefined ? DEFAULT_PAGE_LIMIT : checkInt('limit', o.limit, 1, MAX_PAGE_LIMIT);
  return { where, limit, cursor: o.cursor as string | undefined };
}

/** The partitions a tail reads: the one `where.partition` names, else all (the facade checks the number). */
function partitionsOf(where: QueryWhere, info: StreamInfo): number[] {
  if (where.partition !== undefined) return [where.partition];
  return Array.from({ length: info.partitions }, (_, p) => p);
}

const byPosition = (a: RheoEvent, b: RheoEvent) => a.sequence - b.sequence || a.partition - b.partition;

/**
 * The latest `limit` matching events. Each partition's position becomes the
 * highest of its high watermark (read first, so nothing appended during the read
 * is jumped over) and the last event seen: a follow then never rescans events the
 * filter already passed over.
 */
export async function tailLatest(
  rheo: Rheo,
  info: StreamInfo,
  group: string | undefined,
  where: QueryWhere,
  limit: number,
): Promise<TailPage> {
  const positions = await readHighWatermarks(rheo, info, group);
  const found = await Promise.all(
    partitionsOf(where, info).map((partition) => rheo.query({ stream: info.name, where: { ...where, partition }, order: 'desc', limit })),
  );
  for (const events of found) for (const e of events) positions[e.partition] = Math.max(positions[e.partition], e.sequence);
  const latest = found
    .flat()
    .sort((a, b) => byPosition(b, a))
    .slice(0, limit);
  return { events: latest.reverse(), positions };
}

/** The first `limit` matching events after each partition's position; positions move past the events returned only. */
export async function tailAfter(rheo: Rheo, info: StreamInfo, where: QueryWhere, limit: number, from: number[]): Promise<TailPage> {
  const found = await Promise.all(
    partitionsOf(where, info).map((partition) =>
      rheo.query({ stream: info.name, where: { ...where, partition }, afterSequence: from[partition], order: 'asc', limit }),
    ),
  );
  // Each partition's list is ascending, so the first `limit` of the merge is a prefix of each: no gap is left behind.
  const events = found.flat().sort(byPosition).slice(0, limit);
  const positions = [...from];
  for (const e of events) positions[e.partition] = e.sequence;
  return { events, positions };
}
