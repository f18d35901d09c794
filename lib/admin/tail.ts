// `tail`: the latest events of a stream, then what comes after them. A query
// cursor is one (sequence, partition) position, which cannot follow a stream of
// several partitions: sequences are per partition, so a new event of a partition
// that is behind sorts before the cursor and would never be shown. The tail
// cursor therefore holds a position per partition (the last sequence seen in
// each), and every page reads each partition after its own position. For the
// same reason a page is ordered by time, not by (sequence, partition): the newest
// `limit` events are the newest appended, whichever partition holds them.
import { RheoError } from '../core/errors';
import { DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT } from '../core/limits';
import type { Rheo } from '../core/rheo';
import type { QueryWhere, RheoEvent, StreamInfo } from '../core/types';
import { checkInt, checkObject } from '../core/validate';
import { checkInput } from './inputs';

/** One page of a tail: events oldest first (see {@link mergeInTime}), and each partition's position after it. */
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
  const o = checkInput('tail', 'options', options ?? {});
  const where = o.where === undefined ? {} : (checkObject('where', o.where) as QueryWhere);
  const limit = o.limit === undefined ? DEFAULT_PAGE_LIMIT : checkInt('limit', o.limit, 1, MAX_PAGE_LIMIT);
  return { where, limit, cursor: o.cursor as string | undefined };
}

/** The partitions a tail reads: the one `where.partition` names, else all (the facade checks the number). */
function partitionsOf(where: QueryWhere, info: StreamInfo): number[] {
  if (where.partition !== undefined) return [where.partition];
  return Array.from({ length: info.partitions }, (_, p) => p);
}

/**
 * Whether `a` was appended before `b`, for events of two partitions: the earlier
 * timestamp; in one millisecond the lower id (generated ids are UUIDv7, which sort
 * in the order they were made), then the lower partition. A sequence says nothing
 * across partitions: a partition that is behind holds low sequences of new events.
 */
function before(a: RheoEvent, b: RheoEvent): boolean {
  const t = a.timestamp.getTime() - b.timestamp.getTime();
  if (t !== 0) return t < 0;
  if (a.id !== b.id) return a.id < b.id;
  return a.partition < b.partition;
}

/**
 * The first `limit` events of per-partition lists, each list in the order it is
 * taken from: at every step the head that `first` puts ahead of every other head.
 * A partition's own events keep their sequence order (its head is its next one),
 * and whatever is taken from a list is a prefix of it.
 */
function mergeInTime(lists: RheoEvent[][], limit: number, first: (a: RheoEvent, b: RheoEvent) => boolean): RheoEvent[] {
  const at = lists.map(() => 0);
  const out: RheoEvent[] = [];
  while (out.length < limit) {
    let pick = -1;
    for (let i = 0; i < lists.length; i++) {
      const head = lists[i][at[i]];
      if (head !== undefined && (pick < 0 || first(head, lists[pick][at[pick]]))) pick = i;
    }
    if (pick < 0) break;
    out.push(lists[pick][at[pick]++]);
  }
  return out;
}

/** The partitions' high watermarks, read when a page needs them. */
export type ReadEnds = () => Promise<number[]>;

/**
 * The newest `limit` matching events, newest last. Each partition's position
 * becomes the highest of its high watermark (read first, so nothing appended
 * during the read is jumped over) and the last event seen: a follow then never
 * rescans events the filter already passed over.
 */
export async function tailLatest(rheo: Rheo, info: StreamInfo, ends: ReadEnds, where: QueryWhere, limit: number): Promise<TailPage> {
  const positions = await ends();
  const found = await Promise.all(
    partitionsOf(where, info).map((partition) => rheo.query({ stream: info.name, where: { ...where, partition }, order: 'desc', limit })),
  );
  for (const events of found) for (const e of events) positions[e.partition] = Math.max(positions[e.partition], e.sequence);
  const newest = mergeInTime(found, limit, (a, b) => before(b, a));
  return { events: newest.reverse(), positions };
}

/**
 * The first `limit` matching events after each partition's position, oldest
 * first. A position moves past the events returned and, under a filter, past
 * those it passed over: a partition whose every match up to its end was returned
 * moves to the high watermark read before the query, so the next poll reads only
 * what was appended since, however long nothing matched.
 */
export async function tailAfter(
  rheo: Rheo,
  info: StreamInfo,
  ends: ReadEnds,
  where: QueryWhere,
  limit: number,
  from: number[],
): Promise<TailPage> {
  const partitions = partitionsOf(where, info);
  const filtered = Object.entries(where).some(([k, v]) => k !== 'partition' && v !== undefined);
  const end = filtered ? await ends() : null;
  const found = await Promise.all(
    partitions.map((partition) =>
      rheo.query({ stream: info.name, where: { ...where, partition }, afterSequence: from[partition], order: 'asc', limit }),
    ),
  );
  // Taken lists are prefixes of each partition's list: no gap is left behind.
  const events = mergeInTime(found, limit, before);
  const positions = [...from];
  const taken = new Map<number, number>();
  for (const e of events) {
    positions[e.partition] = e.sequence;
    taken.set(e.partition, (taken.get(e.partition) ?? 0) + 1);
  }
  if (end !== null) {
    partitions.forEach((partition, i) => {
      // A short list is every match up to the partition's end (at least `end`); all of it shown: nothing below is left.
      const all = found[i].length < limit && (taken.get(partition) ?? 0) === found[i].length;
      if (all) positions[partition] = Math.max(positions[partition], end[partition]);
    });
  }
  return { events, positions };
}
