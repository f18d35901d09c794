import { RheoError } from '../../core/errors';
import type { RheoEvent } from '../../core/types';
import type { QueryRequest } from '../backend';
import { ENTRY_FIELDS, eventFromEntry } from './codec';
import type { RedisCommands, RedisStreamEntry } from './external';
import { META_FIELDS, type StreamKeys } from './keys';
import { eventFilter, mergeByPosition, partitionRange, queryPartitions } from '../query';

/** The sequence of a log entry id `0-<sequence>`. */
export const seqOf = (entryId: string): number => Number(entryId.slice(entryId.indexOf('-') + 1));
/** The log entry id of a sequence. */
export const entryId = (seq: number): string => `0-${seq}`;

/** Entries read per round trip when scanning (one partition, or one window over all of a query's). */
const SCAN_CHUNK = 500;

/** Entries one query call may read before it gives up on filling its page (RedisBackendOptions.queryScanLimit). */
export const DEFAULT_QUERY_SCAN_LIMIT = 1_000_000;

/**
 * First sequence of a partition whose timestamp is at or after `t` (high
 * watermark + 1 when none). Caller-supplied timestamps need not be monotonic, so
 * this scans the partition in chunks, as the memory backend does; a trimmed
 * partition is scanned from its first entry left.
 */
export async function firstAtOrAfter(redis: RedisCommands, log: string, t: number): Promise<number> {
  let from = '-';
  let last = 0;
  for (;;) {
    const entries = (await redis.xrange(log, from, '+', 'COUNT', SCAN_CHUNK)) as RedisStreamEntry[];
    for (const [id, fields] of entries) {
      last = seqOf(id);
      const i = fields.indexOf(ENTRY_FIELDS.timestamp);
      if (i >= 0 && Number(fields[i + 1]) >= t) return last;
    }
    if (entries.length < SCAN_CHUNK) return last + 1;
    from = `(${entries[entries.length - 1][0]}`;
  }
}

/**
 * A query without secondary indexes: the log is read in query order, (sequence,
 * partition), one window of sequences across every partition the query reads per
 * round trip (a pipeline of one XRANGE per partition, about SCAN_CHUNK entries in
 * all), decoded and filtered here, until `limit` matches are known: the matches
 * of every window read so far sort before anything a later window can hold, so the
 * page is exact once it is full. A query costs what it reads: about limit / (share
 * of events matching) entries, never more than `scanLimit`; a query that reads
 * that many and still has an unfilled page and unread events fails with
 * invalid_argument on `where` (a shorter page would end the paging early:
 * docs/redis.md, "Queries"). Nothing below a partition's trim point is read.
 */
export async function scanQuery(
  redis: RedisCommands,
  keys: StreamKeys,
  req: QueryRequest,
  partitions: number,
  scanLimit: number,
): Promise<RheoEvent[]> {
  const asc = req.order === 'asc';
  const matches = eventFilter(req);
  const parts = queryPartitions(req, partitions);
  const marks = await redis.hmget(keys.meta, ...parts.flatMap((p) => [META_FIELDS.highWatermark(p), META_FIELDS.trimmedTo(p)]));
  // Per partition the sequences still to read, [lo, hi]; a trimmed partition starts after its trim point.
  const open = parts
    .map((p, i) => {
      const { lo, hi } = partitionRange(req, p, Number(marks[2 * i] ?? 0));
      return { p, lo: Math.max(lo, Number(marks[2 * i + 1] ?? 0) + 1), hi };
    })
    .filter((r) => r.lo <= r.hi);
  const width = Math.max(50, Math.floor(SCAN_CHUNK / Math.max(1, open.length)));
  const found: RheoEvent[] = [];
  let read = 0;
  let live = open;
  while (live.length > 0 && found.length < req.limit) {
    if (read >= scanLimit) throw tooSparse(req, read, found.length);
    // The next window of sequences: from the lowest (highest, descending) sequence any partition has left.
    const from = asc ? Math.min(...live.map((r) => r.lo)) : Math.max(...live.map((r) => r.hi));
    const to = asc ? from + width - 1 : from - width + 1;
    const pipeline = redis.pipeline();
    const asked = live.filter((r) => (asc ? r.lo <= to : r.hi >= to));
    for (const r of asked) {
      if (asc) pipeline.xrange(keys.log(r.p), entryId(r.lo), entryId(Math.min(r.hi, to)));
      else pipeline.xrevrange(keys.log(r.p), entryId(r.hi), entryId(Math.max(r.lo, to)));
    }
    const replies = (await pipeline.exec()) ?? [];
    asked.forEach((r, i) => {
      const [err, entries] = replies[i] as [Error | null, RedisStreamEntry[]];
      if (err) throw err;
      read += entries.length;
      for (const [id, fields] of entries) {
        const e = eventFromEntry(req.stream, r.p, seqOf(id), fields);
        if (matches(e)) found.push(e);
      }
      if (asc) r.lo = Math.min(r.hi, to) + 1;
      else r.hi = Math.max(r.lo, to) - 1;
    });
    live = live.filter((r) => r.lo <= r.hi);
  }
  return mergeByPosition(found, req);
}

function tooSparse(req: QueryRequest, read: number, found: number): RheoError {
  return RheoError.invalid(
    'where',
    `matches too few events for the Redis backend to fill a page of ${req.limit} within ${read} events read (found ${found}); ` +
      'the Redis backend has no secondary indexes and reads the log in query order: narrow the query with ' +
      'afterSequence/untilSequence or where.partition, ask for a smaller page, or raise the backend option queryScanLimit',
  );
}
