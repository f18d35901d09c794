import { appended } from '../../core/appended';
import { checkPartition } from '../../core/requests';
import type { RheoEvent } from '../../core/types';
import type { AppendedEvents, NewEvent, QueryRequest, ReadRequest } from '../backend';
import { eventFilter, mergeByPosition, partitionRange, queryPartitions } from '../query';
import { streamOf, wake, type MemoryContext } from './context';
import { toEvent, type StoredEvent } from './partition-log';

// The log section: append, read and query. Only query walks the log, by sequence ranges.

export async function append(ctx: MemoryContext, stream: string, events: NewEvent[]): Promise<AppendedEvents> {
  const s = streamOf(ctx, stream);
  // Validate the whole batch before writing anything, so a batch is all or nothing.
  for (const e of events) checkPartition('partition', e.partition, s.info.partitions);
  const out: RheoEvent[] = [];
  let written = 0;
  for (const e of events) {
    // Also finds an id written earlier in this batch: each stored event enters the index at once.
    const known = s.byId.get(e.id);
    // An id whose event was trimmed is free again (its memory may not be freed yet).
    if (known && s.log[known.partition].get(known.sequence) === known) {
      out.push(toEvent(stream, known));
      continue;
    }
    const log = s.log[e.partition];
    const stored: StoredEvent = {
      id: e.id,
      partition: e.partition,
      sequence: log.hwm + 1,
      timestamp: e.timestamp.getTime(),
      key: e.key,
      type: e.type,
      metadata: e.metadataJson,
      payload: e.payloadJson,
    };
    if (e.deliverAt !== undefined) stored.deliverAt = e.deliverAt.getTime();
    log.push(stored);
    written++;
    s.byId.set(e.id, stored);
    out.push(toEvent(stream, stored));
  }
  if (written > 0) wake(s);
  return appended(out, events.length - written);
}

export async function read(ctx: MemoryContext, req: ReadRequest): Promise<RheoEvent[]> {
  const s = streamOf(ctx, req.stream);
  const log = s.log[req.partition];
  const out: RheoEvent[] = [];
  for (let seq = Math.max(req.afterSequence, log.trimmedTo) + 1; seq <= log.hwm && out.length < req.limit; seq++) {
    out.push(toEvent(req.stream, log.get(seq)!));
  }
  return out;
}

export async function query(ctx: MemoryContext, req: QueryRequest): Promise<RheoEvent[]> {
  const s = streamOf(ctx, req.stream);
  const asc = req.order === 'asc';
  const matches = eventFilter(req);
  const found: RheoEvent[] = [];
  for (const p of queryPartitions(req, s.log.length)) {
    const log = s.log[p];
    const range = partitionRange(req, p, log.hwm);
    const lo = Math.max(range.lo, log.trimmedTo + 1);
    const hi = range.hi;
    let taken = 0;
    for (let seq = asc ? lo : hi; asc ? seq <= hi : seq >= lo; seq += asc ? 1 : -1) {
      const e = toEvent(req.stream, log.get(seq)!);
      if (matches(e)) {
        found.push(e);
        if (++taken >= req.limit) break;
      }
    }
  }
  return mergeByPosition(found, req);
}
