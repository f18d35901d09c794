import type { RheoEvent } from '../../core/types';
import type { QueryRequest } from '../backend';
import { ENTRY_FIELDS, eventFromEntry } from './codec';
import type { RedisClient, RedisStreamEntry } from './external';
import { META_FIELDS, type StreamKeys } from './keys';
import { eventFilter, mergeByPosition, partitionRange, queryPartitions } from '../query';

/** The sequence of a log entry id `0-<sequence>`. */
export const seqOf = (entryId: string): number => Number(entryId.slice(entryId.indexOf('-') + 1));
/** The log entry id of a sequence. */
export const entryId = (seq: number): string => `0-${seq}`;

/** Entries read per round trip when scanning a partition. */
const SCAN_CHUNK = 500;

/**
 * First sequence of a partition whose timestamp is at or after `t` (high
 * watermark + 1 when none). Caller-supplied timestamps need not be monotonic, so
 * this scans the partition in chunks, as the memory backend does.
 */
export async function firstAtOrAfter(redis: RedisClient, log: string, t: number): Promise<number> {
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
 * A query without secondary indexes: per partition, scan the sequence range
 * (bounded by the request and the keyset cursor) in chunks, keep the first
 * `limit` matches, then merge by (sequence, partition).
 */
export async function scanQuery(redis: RedisClient, keys: StreamKeys, req: QueryRequest, partitions: number): Promise<RheoEvent[]> {
  const asc = req.order === 'asc';
  const matches = eventFilter(req);
  const parts = queryPartitions(req, partitions);
  const hws = await redis.hmget(keys.meta, ...parts.map((p) => META_FIELDS.highWatermark(p)));
  const found: RheoEvent[] = [];
  for (const [i, p] of parts.entries()) {
    let { lo, hi } = partitionRange(req, p, Number(hws[i] ?? 0));
    let taken = 0;
    while (lo <= hi && taken < req.limit) {
      const entries = (
        asc
          ? await redis.xrange(keys.log(p), entryId(lo), entryId(hi), 'COUNT', SCAN_CHUNK)
          : await redis.xrevrange(keys.log(p), entryId(hi), entryId(lo), 'COUNT', SCAN_CHUNK)
      ) as RedisStreamEntry[];
      if (entries.length === 0) break;
      for (const [id, fields] of entries) {
        const e = eventFromEntry(req.stream, p, seqOf(id), fields);
        if (matches(e)) {
          found.push(e);
          if (++taken >= req.limit) break;
        }
      }
      const edge = seqOf(entries[entries.length - 1][0]);
      if (asc) lo = edge + 1;
      else hi = edge - 1;
    }
  }
  return mergeByPosition(found, req);
}
