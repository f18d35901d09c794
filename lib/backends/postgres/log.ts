// The log section of the PostgreSQL backend: append, read and query.
import { appended } from '../../core/appended';
import { RheoError } from '../../core/errors';
import type { AppendOptions, RheoEvent } from '../../core/types';
import type { AppendedEvents, NewEvent, QueryRequest, ReadRequest } from '../backend';
import { eventBloom, queryBloom } from '../sql/bloom';
import { isUniqueViolation } from '../sql/errors';
import type { TypeormQueryable } from '../sql/external';
import { columnFilters, filteredQuery, jsonFieldNeedles } from '../sql/query-filter';
import { toEvent } from '../sql/rows';
import { transactionManager } from '../sql/transaction';
import { intArray } from './arrays';
import type { PostgresContext } from './context';
import { type DbAppended, JSON_SEPARATOR } from './plans/log';
import { pgQuery } from './query-plan';

/**
 * What appendFreshPlan takes besides the columns: per event its rank among the
 * batch's events of its partition (1, 2, ...) and the running maximum of their
 * timestamps; per partition, ascending, their count and maximum timestamp.
 */
function freshBatch(events: NewEvent[]) {
  const seen = new Map<number, { n: number; max: number }>();
  const ranks = new Array<number>(events.length);
  const runningMax = new Array<number>(events.length);
  events.forEach((e, i) => {
    const ts = e.timestamp.getTime();
    let p = seen.get(e.partition);
    if (p) {
      p.n++;
      p.max = Math.max(p.max, ts);
    } else seen.set(e.partition, (p = { n: 1, max: ts }));
    ranks[i] = p.n;
    runningMax[i] = p.max;
  });
  const partitions = [...seen.keys()].sort((a, b) => a - b);
  return { ranks, runningMax, partitions, counts: partitions.map((p) => seen.get(p)!.n), maxima: partitions.map((p) => seen.get(p)!.max) };
}

/**
 * True when the batch's ids, keys and types can travel joined by JSON_SEPARATOR
 * (appendFreshPlan): none holds it, and none is empty (an empty key or type would
 * read back as none). The facade's names never do (no control characters, never
 * empty); anything else takes the array-bound statement.
 */
function joinable(events: NewEvent[]): boolean {
  const ok = (s: string | null) => s === null || (s !== '' && !s.includes(JSON_SEPARATOR));
  return events.every((e) => e.id !== '' && ok(e.id) && ok(e.key) && ok(e.type));
}

/** An event as stored now, from what was appended: its JSON parsed back, so the caller shares nothing with the input. */
function storedEvent(stream: string, e: NewEvent, sequence: number): RheoEvent {
  return toEvent(stream, {
    id: e.id,
    partition: e.partition,
    sequence,
    ts: e.timestamp.getTime(),
    key: e.key,
    type: e.type,
    metadata: e.metadataJson,
    payload: e.payloadJson,
    deliver_at: e.deliverAt?.getTime() ?? null,
  });
}

/**
 * The columns a batch with a delayed event adds to the append statements: each
 * event's deliver_at (null when it has none), and per partition of `partitions`
 * the rank (from 1, in batch order) of its last delayed event, null when it has
 * none: the partition's delayed_to moves to that event's sequence.
 */
function delayColumns(events: NewEvent[], partitions: number[]): { deliverAt: Array<number | null>; lastDelayed: Array<number | null> } {
  const rank = new Map<number, number>();
  const last = new Map<number, number>();
  const deliverAt = events.map((e) => {
    const r = (rank.get(e.partition) ?? 0) + 1;
    rank.set(e.partition, r);
    if (e.deliverAt === undefined) return null;
    last.set(e.partition, r);
    return e.deliverAt.getTime();
  });
  return { deliverAt, lastDelayed: partitions.map((p) => last.get(p) ?? null) };
}

export async function append(ctx: PostgresContext, stream: string, events: NewEvent[], options: AppendOptions): Promise<AppendedEvents> {
  const info = await ctx.mustStream(stream);
  const manager = options.manager === undefined ? undefined : transactionManager(options.manager, ctx.ds);
  const { unique, indexOf } = ctx.dedupe(events, info.partitions);
  let stored: RheoEvent[] | null = null;
  if (!manager && joinable(unique)) {
    try {
      // Most appends carry fresh ids (generated, or new): skip the lookup of each id.
      stored = await appendFresh(ctx, stream, unique);
    } catch (err) {
      // An id was stored already (a retried append), or two appends of the same new id raced: the statement
      // failed whole, writing nothing; the probing statement returns the stored events.
      if (!(err instanceof RheoError && isUniqueViolation(err.cause))) throw err;
    }
  }
  // In the caller's transaction a failed statement would abort it: look the ids up first, so nothing fails.
  stored ??= await appendKnown(ctx, stream, unique, manager);
  // Same-process consumers need not wait for the NOTIFY round trip. (In a caller's transaction
  // nothing is visible before its commit; the NOTIFY is delivered at that commit.)
  if (!manager) ctx.board.wake(stream);
  return ctx.inInputOrder(stored, indexOf);
}

/** The usual append (appendFreshPlan): sequences follow from each partition's base and each event's rank. */
async function appendFresh(ctx: PostgresContext, stream: string, events: NewEvent[]): Promise<RheoEvent[]> {
  const batch = freshBatch(events);
  const params: unknown[] = [
    stream,
    events.map((e) => e.id).join(JSON_SEPARATOR),
    intArray(events.map((e) => e.partition)),
    intArray(events.map((e) => e.timestamp.getTime())),
    events.map((e) => e.key ?? '').join(JSON_SEPARATOR),
    events.map((e) => e.type ?? '').join(JSON_SEPARATOR),
    events.map((e) => e.metadataJson).join(JSON_SEPARATOR),
    events.map((e) => e.payloadJson).join(JSON_SEPARATOR),
    ctx.channel,
    intArray(batch.ranks),
    intArray(batch.runningMax),
    intArray(batch.partitions),
    intArray(batch.counts),
    intArray(batch.maxima),
    intArray(events.map((e) => eventBloom(e.metadata, e.payload))),
  ];
  // Events without a delay take the statement they always took; a batch with one, its variant ($16, $17).
  const delayed = events.some((e) => e.deliverAt !== undefined);
  if (delayed) {
    const { deliverAt, lastDelayed } = delayColumns(events, batch.partitions);
    params.push(deliverAt, lastDelayed);
  }
  const base = new Map<number, number>();
  const plan = delayed ? ctx.plans.log.appendFreshDelayed : ctx.plans.log.appendFresh;
  for (const r of await ctx.q(plan, params, 'write', 'append')) base.set(r.partition, Number(r.base));
  return events.map((e, i) => storedEvent(stream, e, base.get(e.partition)! + batch.ranks[i]));
}

/**
 * The probing append (appendPlan): ids already stored return their stored
 * event. Once more if it too meets a unique violation (a racing append stored
 * an id between its lookup and its insert), unless in the caller's transaction.
 */
async function appendKnown(ctx: PostgresContext, stream: string, events: NewEvent[], manager?: TypeormQueryable): Promise<RheoEvent[]> {
  const params: unknown[] = [
    stream,
    events.map((e) => e.id),
    events.map((e) => e.partition),
    events.map((e) => e.timestamp.getTime()),
    events.map((e) => e.key),
    events.map((e) => e.type),
    events.map((e) => e.metadataJson),
    events.map((e) => e.payloadJson),
    ctx.channel,
    events.map((e) => eventBloom(e.metadata, e.payload)),
  ];
  const delayed = events.some((e) => e.deliverAt !== undefined);
  if (delayed) params.push(events.map((e) => e.deliverAt?.getTime() ?? null));
  const plan = delayed ? ctx.plans.log.appendDelayed : ctx.plans.log.append;
  let rows: DbAppended[];
  try {
    rows = await ctx.q(plan, params, 'write', 'append', manager);
  } catch (err) {
    if (manager || !(err instanceof RheoError && isUniqueViolation(err.cause))) throw err;
    rows = await ctx.q(plan, params, 'write', 'append');
  }
  const stored = new Array<RheoEvent>(events.length);
  let known = 0;
  for (const row of rows) {
    const i = Number(row.ord) - 1;
    // Stored now: the statement returns only its sequence; stored before: the whole event.
    if (row.id !== null) known++;
    stored[i] = row.id === null ? storedEvent(stream, events[i], Number(row.sequence)) : toEvent(stream, row);
  }
  return appended(stored, known);
}

export async function read(ctx: PostgresContext, req: ReadRequest): Promise<RheoEvent[]> {
  await ctx.mustStream(req.stream);
  const rows = await ctx.q(ctx.plans.log.read, [req.stream, req.partition, req.afterSequence, req.limit], 'read', 'read');
  return rows.map((r) => toEvent(req.stream, r));
}

export async function query(ctx: PostgresContext, req: QueryRequest): Promise<RheoEvent[]> {
  await ctx.mustStream(req.stream);
  const needles = jsonFieldNeedles(req.where);
  const bloom = queryBloom(req.where);
  return filteredQuery(
    req,
    async (after, limit) => {
      const { sql, params } = pgQuery(ctx.tables, { stream: req.stream, ...columnFilters(req), ...needles, after, limit }, bloom);
      return (await ctx.q(sql, params, 'read', 'query')).map((r) => toEvent(req.stream, r));
    },
    true,
  );
}
