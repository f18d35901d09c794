// The log on SQLite: append (sequences allocated per partition inside the one
// writer's transaction), read by sequence, and query (query.ts).
import { appended } from '../../core/appended';
import { RheoError } from '../../core/errors';
import { checkPartition } from '../../core/requests';
import type { AppendOptions, EventMetadata, JsonValue, RheoEvent } from '../../core/types';
import type { AppendedEvents, NewEvent, QueryRequest, ReadRequest } from '../backend';
import { copyJson } from '../copies';
import { eventBloom } from '../sql/bloom';
import { toEvent } from '../sql/rows';
import { transactionManager } from '../sql/transaction';
import type { SqliteContext } from './context';
import { appendedEvent, EventRowWriter } from './event-rows';
import { sqliteFilteredQuery } from './query';

/** An appended event's metadata and payload, copied as the append began (see append). */
type JsonCopy = { metadata: EventMetadata; payload: JsonValue };

/** An insert refused because the stream already holds an event with that id (UNIQUE (stream, id)). */
function isDuplicateId(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | null;
  return e?.code === 'SQLITE_CONSTRAINT_UNIQUE' && typeof e.message === 'string' && e.message.includes('.id');
}

export async function append(ctx: SqliteContext, stream: string, events: NewEvent[], options: AppendOptions): Promise<AppendedEvents> {
  // Copied before the first await: the facade serialised these objects just before this call, so the
  // copies are what gets stored even if the caller changes them while the append waits (the returned
  // events share nothing with the input, as parsing the stored text back gave, at a third of its cost).
  const copies = events.map((e): JsonCopy => ({
    metadata: copyJson(e.metadata),
    payload: copyJson(e.payload),
  }));
  const info = await ctx.base.mustStream(stream);
  if (options.manager !== undefined) {
    const m = transactionManager(options.manager, ctx.ds);
    // SQLite has one connection: the caller's transaction is the connection's transaction, and
    // ours nests in it as a savepoint. It must be that same connection, i.e. the same DataSource.
    if (m.connection !== ctx.ds) throw RheoError.invalid('options.manager', 'must belong to the DataSource of this backend');
  }
  for (const e of events) checkPartition('partition', e.partition, info.partitions);
  const stored = await ctx.write('append', () => {
    // The usual batch has no stored id and no id twice: insert it as it is, without looking any id
    // up or folding repeats, in a savepoint. An id stored already or repeated fails the UNIQUE (stream,
    // id) index and the savepoint whole (no row, no sequence used); then the batch runs again, its
    // repeats folded (the first occurrence is stored, later ones get the same event) and ids looked up.
    try {
      return ctx
        .conn()
        .transaction(() => insertEvents(ctx, stream, events, copies, false))
        .immediate();
    } catch (err) {
      if (!isDuplicateId(err)) throw err;
      const { unique, indexOf } = ctx.base.dedupe(events, info.partitions);
      const uniqueCopies: JsonCopy[] = [];
      indexOf.forEach((u, i) => (uniqueCopies[u] ??= copies[i]));
      return ctx.base.inInputOrder(insertEvents(ctx, stream, unique, uniqueCopies, true), indexOf);
    }
  });
  // Inside a caller's transaction the events are not committed yet: waking now would only cost one empty fetch.
  ctx.wake(stream);
  return stored;
}

/**
 * Store a batch (inside the caller's transaction): sequences allocated per partition in
 * partition order, each event's running timestamp maximum and query filter bits with it.
 * With `lookup`, ids already stored return the stored event (idempotent append).
 * `copies[i]` is batch[i]'s metadata and payload for the returned event.
 */
function insertEvents(ctx: SqliteContext, stream: string, batch: NewEvent[], copies: JsonCopy[], lookup: boolean): AppendedEvents {
  const p = ctx.plans;
  const out = new Array<RheoEvent>(batch.length);
  const fresh: number[] = [];
  batch.forEach((e, i) => {
    const known = lookup ? ctx.stmt(p.eventById).get(stream, e.id) : undefined;
    if (known) out[i] = toEvent(stream, known);
    else fresh.push(i);
  });
  // Per partition (arrays indexed by partition, not Maps: read and written once per event), its count,
  // its next sequence and its running timestamp maximum (ts_max).
  const counts: number[] = [];
  for (const i of fresh) counts[batch[i].partition] = (counts[batch[i].partition] ?? 0) + 1;
  const next: number[] = [];
  const tsMax: number[] = [];
  const allocate = ctx.stmt(p.allocate);
  // In partition order (an array's index order).
  counts.forEach((n, partition) => {
    const { hwm } = allocate.get(n, stream, partition)!;
    next[partition] = hwm - n + 1;
    // ts_max continues from the partition's last event when that is still there.
    const last = hwm > n ? ctx.stmt(p.tsMaxAt).get(stream, partition, hwm - n)?.ts_max : undefined;
    tsMax[partition] = last ?? -Infinity;
  });
  const rows = new EventRowWriter(stream, fresh.length, (n) => ctx.stmt(p.insertEvents.get(n)!));
  // Per partition, its last delayed event of the batch: the partition's delayed_to mark moves there.
  const lastDelayed = new Map<number, number>();
  for (const i of fresh) {
    const e = batch[i];
    const sequence = next[e.partition]++;
    const ts = e.timestamp.getTime();
    const max = Math.max(tsMax[e.partition], ts);
    tsMax[e.partition] = max;
    const deliverAt = e.deliverAt === undefined ? null : e.deliverAt.getTime();
    if (deliverAt !== null) lastDelayed.set(e.partition, sequence);
    const bloom = eventBloom(e.metadata, e.payload);
    rows.row(e.partition, sequence, e.id, ts, e.key, e.type, e.metadataJson, e.payloadJson, max, bloom, deliverAt);
    out[i] = appendedEvent(stream, e, sequence, ts, copies[i]);
  }
  for (const [partition, sequence] of lastDelayed) ctx.stmt(p.markDelayed).run(sequence, stream, partition);
  return appended(out, batch.length - fresh.length);
}

export async function read(ctx: SqliteContext, req: ReadRequest): Promise<RheoEvent[]> {
  await ctx.base.mustStream(req.stream);
  const rows = await ctx.locked('read', 'read', () =>
    ctx.stmt(ctx.plans.read).all(req.stream, req.partition, req.afterSequence, req.limit),
  );
  return rows.map((r) => toEvent(req.stream, r));
}

export async function query(ctx: SqliteContext, req: QueryRequest): Promise<RheoEvent[]> {
  await ctx.base.mustStream(req.stream);
  return sqliteFilteredQuery(ctx.tables, req, async (sql, params) =>
    (await ctx.locked('read', 'query', () => ctx.stmt(sql).all(...params))).map((r) => toEvent(req.stream, r)),
  );
}
