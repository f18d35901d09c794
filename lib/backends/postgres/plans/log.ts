// The log's statements: the two appends (each with its variant for a batch with
// a delayed event) and a partition's read. Queries compile in ../query-plan.ts.
import type { TableNames } from '../../sql/names';
import type { DbEvent, DbInt, DbNulls } from '../../sql/rows';
import { returning } from '../../sql/statement';

/** The per-row columns of an event as every read returns them. */
// JSON leaves as text and is parsed once in JS, the same for both dialects.
/** The event columns after its position (id, partition, sequence): a claim takes those from elsewhere. */
export const EVENT_BODY_COLUMNS = `e.ts, e.key, e.type, e.metadata::text AS metadata, e.payload::text AS payload, e.deliver_at`;
export const EVENT_COLUMNS = `e.id, e.partition, e.sequence, ${EVENT_BODY_COLUMNS}`;

/**
 * One appended event, by its place in the batch (`ord`, from 1): the event already
 * stored under its id (the whole event), or one stored now (only its sequence).
 */
export type DbAppended = { ord: DbInt; woke: DbInt } & (DbEvent | (DbNulls<Omit<DbEvent, 'sequence'>> & { sequence: DbInt }));

/** A partition's first sequence of an appended batch, minus one (appendFresh). */
export interface DbAllocated {
  partition: number;
  base: DbInt;
  woke: DbInt;
}

export function logPlans(t: TableNames) {
  return {
    /** Append a batch whose ids may already be stored: see {@link appendPlan}. */
    append: returning<DbAppended>(appendPlan(t, false)),
    /** Append a batch assuming none of its ids is stored: see {@link appendFreshPlan}. */
    appendFresh: returning<DbAllocated>(appendFreshPlan(t, false)),
    /** The same two for a batch with a delayed event: each event's deliver_at too, and the partitions' delayed_to mark. */
    appendDelayed: returning<DbAppended>(appendPlan(t, true)),
    appendFreshDelayed: returning<DbAllocated>(appendFreshPlan(t, true)),

    /** Never below the trim point: a trim's chunks may still be deleting there. */
    read: returning<DbEvent>(`
      SELECT ${EVENT_COLUMNS} FROM ${t.events} e
      WHERE e.stream = $1 AND e.partition = $2
        AND e.sequence > GREATEST($3, (SELECT p.trimmed_to FROM ${t.partitions} p WHERE p.stream = $1 AND p.partition = $2))
      ORDER BY e.sequence LIMIT $4`),
  };
}

/**
 * The append statement that looks ids up first: a batch in one statement.
 * Parameters: $1 stream, $2..$8 the columns (ids, partitions, timestamps, keys,
 * types, metadata, payloads), $9 the NOTIFY channel, $10 the Bloom filters of the
 * events' fields (see schema.ts). Ids already in the stream are
 * not written again (the caller gets the stored event). Each partition's counter
 * row is locked in partition order (no deadlock between two batches) and held to
 * commit, so a later sequence range can never become visible before an earlier
 * one: readers never see a gap that later fills. The same row carries the
 * partition's highest timestamp so far, from which each row's ts_max follows
 * (NULL when it is the row's own ts, see schema.ts).
 *
 * Used in a caller's transaction (where a failed statement would abort it) and
 * when {@link appendFreshPlan} met an id already stored.
 */
function appendPlan(t: TableNames, delayed: boolean): string {
  // With delayed events ($11: each event's deliver_at, null when it has none), each partition's delayed_to
  // moves to its last delayed event: base + that event's rank among the partition's fresh events.
  const rank = delayed ? `, row_number() OVER (PARTITION BY partition ORDER BY ord) AS rank` : '';
  return `
      WITH input AS (
        SELECT * FROM unnest($2::text[], $3::int[], $4::bigint[], $5::text[], $6::text[], $7::json[], $8::json[], $10::bigint[]${delayed ? ', $11::bigint[]' : ''})
          WITH ORDINALITY AS i(id, partition, ts, key, type, metadata, payload, bloom, ${delayed ? 'deliver_at, ' : ''}ord)
      ), known AS (
        SELECT i.ord, ${EVENT_COLUMNS}
        FROM input i JOIN ${t.events} e ON e.stream = $1 AND e.id = i.id
      ), fresh AS (
        SELECT *${rank} FROM input WHERE ord NOT IN (SELECT ord FROM known)
      ), locked AS (
        SELECT p.partition, p.ts_max FROM ${t.partitions} p
        WHERE p.stream = $1 AND p.partition IN (SELECT partition FROM fresh)
        ORDER BY p.partition
        FOR UPDATE
      ), allocated AS (
        UPDATE ${t.partitions} p SET hwm = p.hwm + n.count, ts_max = GREATEST(p.ts_max, n.ts_max)${
          delayed
            ? `,
            delayed_to = COALESCE(p.hwm + n.delayed, p.delayed_to)`
            : ''
        }
        FROM (SELECT f.partition, count(*) AS count, max(f.ts) AS ts_max${
          delayed ? ', max(f.rank) FILTER (WHERE f.deliver_at IS NOT NULL) AS delayed' : ''
        } FROM fresh f GROUP BY f.partition) n
        JOIN locked l ON l.partition = n.partition
        WHERE p.stream = $1 AND p.partition = n.partition
        RETURNING p.partition, p.hwm - n.count AS base, l.ts_max AS ts_before
      ), stored AS (
        INSERT INTO ${t.events} (stream, partition, sequence, id, ts, ts_max, key, type, metadata, payload, bloom${delayed ? ', deliver_at' : ''})
        SELECT $1, f.partition, a.base + row_number() OVER w, f.id, f.ts,
               NULLIF(GREATEST(a.ts_before, max(f.ts) OVER w), f.ts), f.key, f.type, f.metadata, f.payload, f.bloom${
                 delayed ? ', f.deliver_at' : ''
               }
        FROM fresh f JOIN allocated a ON a.partition = f.partition
        WINDOW w AS (PARTITION BY f.partition ORDER BY f.ord)
        RETURNING id, sequence
      ), wake AS (
        SELECT pg_notify($9, $1) AS n WHERE EXISTS (SELECT 1 FROM stored)
      )
      SELECT f.ord, s.sequence, NULL::text AS id, NULL::int AS partition, NULL::bigint AS ts, NULL::text AS key,
             NULL::text AS type, NULL::text AS metadata, NULL::text AS payload, NULL::bigint AS deliver_at,
             (SELECT count(*) FROM wake) AS woke
      FROM fresh f JOIN stored s ON s.id = f.id
      UNION ALL
      SELECT k.ord, k.sequence, k.id, k.partition, k.ts, k.key, k.type, k.metadata, k.payload, k.deliver_at, 0
      FROM known k`;
}

/**
 * The separator of the metadata and payload texts of {@link appendFreshPlan}: the
 * record separator (chr(30)), which JSON.stringify never writes raw (it escapes
 * every control character in a string, and writes none outside one).
 */
export const JSON_SEPARATOR = '\u001e';

/**
 * The append statement for fresh ids, the usual case (generated ids, or new
 * ones). Everything a batch needs per row is worked out by the caller
 * (planFreshAppend): each event's rank among the batch's events of its partition
 * and the running maximum of their timestamps, and per partition the count and
 * the maximum. So the statement neither sorts nor numbers rows, nor looks an id
 * up (a unique-index probe per event, a quarter of an append of fresh events): it
 * locks the counter rows (in partition order, held to commit, as appendPlan),
 * moves them, inserts, and returns only each partition's base sequence. An id
 * that is stored after all fails it whole (unique violation: nothing written, no
 * sequence used), and the caller runs appendPlan. The text columns travel as
 * texts joined by JSON_SEPARATOR, not as arrays: neither the driver nor the
 * server has to escape or unescape the quotes of every document. (Ids, keys and
 * types hold no control character, and are never empty: a missing key or type
 * travels as ''. The caller checks, and takes appendPlan for a batch that
 * breaks this.)
 *
 * Parameters: $1 stream, $2 ids, $3 partitions, $4 timestamps, $5 keys, $6 types,
 * $7 metadata, $8 payloads (the texts joined), $9 the NOTIFY channel, $10 ranks,
 * $11 running timestamp maxima, $12..$14 per partition (ascending): partition,
 * count, maximum timestamp; $15 the Bloom filters of the events' fields.
 */
function appendFreshPlan(t: TableNames, delayed: boolean): string {
  // With delayed events: $16 each event's deliver_at (null when it has none), $17 per partition (as $12) the
  // rank of its last delayed event in the batch (null when none): delayed_to moves to base + that rank.
  return `
      WITH counts AS (
        SELECT * FROM unnest($12::int[], $13::int[], $14::bigint[]${delayed ? ', $17::int[]' : ''}) AS c(partition, n, ts_max${
          delayed ? ', delayed' : ''
        })
      ), locked AS (
        SELECT p.partition, p.ts_max FROM ${t.partitions} p
        WHERE p.stream = $1 AND p.partition = ANY($12::int[])
        ORDER BY p.partition
        FOR UPDATE
      ), allocated AS (
        UPDATE ${t.partitions} p SET hwm = p.hwm + c.n, ts_max = GREATEST(p.ts_max, c.ts_max)${
          delayed ? ', delayed_to = COALESCE(p.hwm + c.delayed, p.delayed_to)' : ''
        }
        FROM counts c JOIN locked l ON l.partition = c.partition
        WHERE p.stream = $1 AND p.partition = c.partition
        RETURNING p.partition, p.hwm - c.n AS base, l.ts_max AS ts_before
      ), stored AS (
        INSERT INTO ${t.events} (stream, partition, sequence, id, ts, ts_max, key, type, metadata, payload, bloom${delayed ? ', deliver_at' : ''})
        SELECT $1, i.partition, a.base + i.rank, i.id, i.ts, NULLIF(GREATEST(a.ts_before, i.ts_run), i.ts),
               NULLIF(i.key, ''), NULLIF(i.type, ''), i.metadata::json, i.payload::json, i.bloom${delayed ? ', i.deliver_at' : ''}
        FROM ROWS FROM (string_to_table($2::text, chr(30)), unnest($3::int[]), unnest($4::bigint[]),
                        string_to_table($5::text, chr(30)), string_to_table($6::text, chr(30)),
                        string_to_table($7::text, chr(30)), string_to_table($8::text, chr(30)),
                        unnest($10::int[]), unnest($11::bigint[]), unnest($15::bigint[])${delayed ? ', unnest($16::bigint[])' : ''})
          AS i(id, partition, ts, key, type, metadata, payload, rank, ts_run, bloom${delayed ? ', deliver_at' : ''})
        JOIN allocated a ON a.partition = i.partition
        RETURNING 1
      ), wake AS (
        SELECT pg_notify($9, $1) AS n WHERE EXISTS (SELECT 1 FROM stored)
      )
      SELECT a.partition, a.base, (SELECT count(*) FROM wake) AS woke FROM allocated a`;
}
