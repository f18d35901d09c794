import { appended } from '../../core/appended';
import { RheoError } from '../../core/errors';
import { checkPartition } from '../../core/requests';
import type { RheoEvent } from '../../core/types';
import type { AppendedEvents, NewEvent, QueryRequest, ReadRequest } from '../backend';
import { copyJson } from '../copies';
import { appendArgs, appendOutcomes, eventFromEntry } from './codec';
import type { RedisContext } from './context';
import { confirmReplicas } from './durability';
import type { RedisStreamEntry } from './external';
import { recordDelayedLayout } from './lifecycle';
import { entryId, scanQuery, seqOf } from './log-scan';
import { partitionsOf } from './registry';

// The log section: append, read and query.

export async function append(ctx: RedisContext, stream: string, events: NewEvent[]): Promise<AppendedEvents> {
  // The returned events' metadata and payloads, copied before the first await: what the facade
  // serialised just before this call, whatever the caller changes while the append waits.
  const copies = events.map((e) => ({ metadata: copyJson(e.metadata), payload: copyJson(e.payload) }));
  const P = await partitionsOf(ctx, stream);
  // Validate the whole batch before writing anything, so a batch is all or nothing.
  for (const e of events) checkPartition('partition', e.partition, P);
  if (events.length === 0) return appended([], 0);
  const k = ctx.keys(stream);
  const call = appendArgs(events);
  if (call.delayed) await recordDelayedLayout(ctx);
  const keys = [k.meta, k.ids, k.wake, ...call.partitions.map((p) => k.log(p))];
  // Per event: its new sequence, or for a known id `[ref, fields]` (read in the same step), or just the
  // ref when the stored event's partition was not among this call's keys (read here; see scripts/append.ts).
  for (let attempt = 1; ; attempt++) {
    const reply = (await ctx.script('write', 'append', keys, call.args, { stream })) as unknown[];
    const result = appendOutcomes(reply, events, call.partitions);
    if (ctx.durability) await confirmReplicas(ctx, stream, events[0], result[0], ctx.durability);
    const known = new Map<string, RheoEvent>();
    for (const r of result) {
      if (Array.isArray(r)) {
        const [part, seq] = r[0].split(':').map(Number);
        known.set(r[0], eventFromEntry(stream, part, seq, r[1]));
      }
    }
    const unread = [...new Set(result.filter((r): r is string => typeof r === 'string' && !known.has(r)))];
    if (unread.length && !(await readKnown(ctx, stream, unread, known))) {
      // Trimmed between the append and the read: appending again stores those events anew (their ids
      // left the index with them), and returns the others as stored.
      if (attempt < 3) continue;
      throw new RheoError('failed', `redis: appended events of stream "${stream}" were trimmed while they were read back`);
    }
    // A known id (stored before, or earlier in this batch) is not a new sequence: a repeat.
    const repeats = result.filter((r) => typeof r !== 'number').length;
    const stored = events.map((e, i) => {
      const r = result[i];
      if (typeof r !== 'number') {
        const stored = known.get(Array.isArray(r) ? r[0] : r)!;
        const copy = { ...stored, metadata: copyJson(stored.metadata), payload: copyJson(stored.payload) };
        if (stored.deliverAt) copy.deliverAt = new Date(stored.deliverAt.getTime());
        return copy;
      }
      const event: RheoEvent = {
        id: e.id,
        stream,
        partition: e.partition,
        sequence: Number(r),
        timestamp: new Date(e.timestamp.getTime()),
        key: e.key,
        type: e.type,
        metadata: copies[i].metadata,
        payload: copies[i].payload,
      };
      if (e.deliverAt !== undefined) event.deliverAt = new Date(e.deliverAt.getTime());
      return event;
    });
    return appended(stored, repeats);
  }
}

/** Read stored events by `<p>:<seq>` into `known`; false when one is gone from the log. */
async function readKnown(ctx: RedisContext, stream: string, refs: string[], known: Map<string, RheoEvent>): Promise<boolean> {
  const k = ctx.keys(stream);
  const p = ctx.redis().pipeline();
  for (const ref of refs) {
    const [part, seq] = ref.split(':').map(Number);
    p.xrange(k.log(part), entryId(seq), entryId(seq));
  }
  const rows = await ctx.call('read', async () => (await p.exec()) ?? []);
  for (const [i, ref] of refs.entries()) {
    const [err, entries] = rows[i] as [Error | null, RedisStreamEntry[]];
    if (err) throw ctx.mapError(err, 'read');
    if (!entries?.[0]) return false;
    const [part, seq] = ref.split(':').map(Number);
    known.set(ref, eventFromEntry(stream, part, seq, entries[0][1]));
  }
  return true;
}

export async function read(ctx: RedisContext, req: ReadRequest): Promise<RheoEvent[]> {
  const entries = (await ctx.call('read', (redis) =>
    redis.xrange(ctx.keys(req.stream).log(req.partition), entryId(req.afterSequence + 1), '+', 'COUNT', req.limit),
  )) as RedisStreamEntry[];
  return entries.map(([id, fields]) => eventFromEntry(req.stream, req.partition, seqOf(id), fields));
}

export async function query(ctx: RedisContext, req: QueryRequest): Promise<RheoEvent[]> {
  const P = await partitionsOf(ctx, req.stream);
  return ctx.call('read', (redis) => scanQuery(redis, ctx.keys(req.stream), req, P, ctx.queryScanLimit));
}
