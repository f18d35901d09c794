// Every SQL statement of the PostgreSQL backend's hot path and registrations, in
// one place (pg-boss's plans.js style); trim, purge and turns are in
// retention-plans.ts, the query compiler in query-plan.ts, the DDL in schema.ts.
// Values are always bound parameters; the only spliced text is the table
// identifiers, built from a validated, quoted schema name (sql/names.ts).
//
// Storage model (schema version 2, shared with SQLite, see docs/sql.md):
// - rheo_partitions.hwm is the last sequence allocated in a partition (its high
//   watermark); trimmed_to the trim point (every event at or below it is gone, or
//   going: see trim); ts_max the highest timestamp appended so far;
// - rheo_group_partitions.cursor is the first sequence not yet offered to the group:
//   events from the cursor up need no per-group row (lazy materialisation), so an
//   append costs the same whatever the number of groups. The cursor in effect is
//   GREATEST(cursor, trimmed_to + 1): a group never reaches below the trim point;
// - rheo_deliveries holds one row per offered event of a group that is still in
//   flight: state 'available' (due_at = when it may be claimed) or 'leased'
//   (due_at = lease expiry). An ack deletes the row; a dead letter moves it to
//   rheo_dead_letters. So the table stays as small as the work in flight, and the
//   hot path never reads a dead letter;
// - the frontier is therefore derived, never stored: the sequence before the first
//   delivery above the trim point, or the cursor in effect - 1 when there is none.
//   No settle ever has to walk it, and concurrent settles from many processes
//   cannot leave it behind.
import type { TableNames } from '../sql/names';
import type {
  DbCount,
  DbDeadLetter,
  DbEvent,
  DbGroup,
  DbHighWatermark,
  DbInt,
  DbNulls,
  DbPartitionState,
  DbPosition,
  DbStream,
} from '../sql/rows';
import { returning } from '../sql/statement';

// Rows only PostgreSQL's statements return. int columns arrive as numbers, bigint and count(*) as strings.

/** A partition's high watermark and trim point (highWatermarks). */
export interface DbTrimmedWatermark extends DbHighWatermark {
  trimmed_to: DbInt;
}

/** Per partition, the last sequence before a time (lastBefore). */
export interface DbLastBefore {
  partition: number;
  after: DbInt;
}

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

/**
 * A delivery a claim leased (fetch, fetchOrdered): its event, attempt and new
 * lease id; a lease that expired on the last attempt, which it dead-lettered (no
 * lease id, the event's id and position, the attempt it expired on); or a delayed
 * event it parked (no lease id, no id: only the position).
 */
export type DbClaimed = { attempt: number } & (
  | ({ lease_id: string } & DbEvent)
  | ({ lease_id: null; id: string | null } & Pick<DbEvent, 'partition' | 'sequence'> &
      DbNulls<Omit<DbEvent, 'id' | 'partition' | 'sequence'>>)
);

/** An op of a batch whose lease held (renew; settle and release: {@link DbSettled}): its index `i`, and whether its receipt matched. */
export interface DbFenced {
  i: number;
  receipt_ok: boolean;
  /**
   * The statement changed the row. False with `receipt_ok` when a change of the
   * same row committed while the statement waited for its lock (see heldBy): the
   * lease still holds, and the caller runs the op again.
   */
  applied: boolean;
}

/** A settled or released op: {@link DbFenced}, and how many streams were notified (settle, release). */
export interface DbSettled extends DbFenced {
  woke: DbInt;
}

/** How many dead letters a redrive re-opened (redrive). */
export interface DbRedriven {
  n: DbInt;
  woke: DbInt;
}

/** Serialises concurrent installs: every process of every app takes the same transaction-scoped advisory lock. */
export const PG_INSTALL_LOCK = `SELECT pg_advisory_xact_lock(hashtext($1))`;

/**
 * Settles, and claims of groups without partition ordering, commit without waiting
 * for the WAL flush (`synchronous_commit = off` for that transaction only). What a
 * server crash can lose is the last few hundred milliseconds of them, and losing
 * one only means a redelivery: a lost ack, nack or reject leaves the lease to
 * expire; a lost claim leaves the event claimable (its first holder's settle is
 * then stale_lease). That is at-least-once, which is all a claim promises. Appends,
 * renewals and claims of `ordering: 'partition'` groups (whose promise is one
 * holder per partition at a time) always commit synchronously. Set inside the
 * statement, so it costs no extra round trip.
 */
const ASYNC_COMMIT = `set_config('synchronous_commit', 'off', true) IS NOT NULL`;

/** A stream's columns as every statement returns them (DbStream). */
const STREAM_COLUMNS = `name, partitions, created_at, max_age_ms, max_events, dead_letter_max_age_ms`;

/** The per-row columns of an event as every read returns them. */
// JSON leaves as text and is parsed once in JS, the same for both dialects.
/** The event columns after its position (id, partition, sequence): a claim takes those from elsewhere. */
const EVENT_BODY_COLUMNS = `e.ts, e.key, e.type, e.metadata::text AS metadata, e.payload::text AS payload, e.deliver_at`;
export const EVENT_COLUMNS = `e.id, e.partition, e.sequence, ${EVENT_BODY_COLUMNS}`;

/**
 * The delivery an op names, locked: one primary-key probe per op (a LATERAL
 * subquery), and its ctid (`row_id`), by which the same statement then changes
 * it. Written so on purpose: joined as tables, a small, freshly vacuumed
 * rheo_deliveries is estimated at one row, and the generic plan a prepared
 * statement keeps would pair every op with every row (100 ops took 10 ms) or scan
 * the table, once it has grown. A probe per op, and a change by ctid per op, cost
 * the same whatever the statistics said when the statement was planned.
 *
 * One race it cannot close by itself: when another transaction changed the row
 * (a renewal of the same lease) and commits while this statement waits for the
 * lock, FOR UPDATE hands back the row's newest version, whose ctid the
 * statement's own snapshot does not see; the change by ctid then finds nothing.
 * So each statement also says which ops it really changed (`applied`), and the
 * backend runs the others again: the next statement's snapshot sees the row.
 */
function heldBy(t: TableNames, op: string, fence: string): string {
  return `CROSS JOIN LATERAL (
          SELECT d.lease_id, d.attempt, d.ctid AS row_id FROM ${t.deliveries} d
          WHERE d.stream = ${op}.stream AND d.group_name = ${op}.group_name AND d.partition = ${op}.partition
            AND d.sequence = ${op}.sequence AND d.lease_id = ${op}.lease_id AND d.state = 'leased' ${fence}
          FOR UPDATE
        ) d`;
}

export function pgPlans(t: TableNames) {
  return {
    ping: `SELECT 1`,

    // ---------------------------------------------------------------- streams and groups

    /** $4..$6: the retention columns (max_age_ms, max_events, dead_letter_max_age_ms), null when unset. */
    createStream: returning<DbStream>(`
      WITH stream AS (
        INSERT INTO ${t.streams} (name, partitions, created_at, max_age_ms, max_events, dead_letter_max_age_ms)
        VALUES ($1, $2, $3, $4, $5, $6)
        RETURNING ${STREAM_COLUMNS}
      ), counters AS (
        INSERT INTO ${t.partitions} (stream, partition, hwm)
        SELECT $1, p, 0 FROM generate_series(0, $2 - 1) AS p
      )
      SELECT ${STREAM_COLUMNS} FROM stream`),

    getStream: returning<DbStream>(`SELECT ${STREAM_COLUMNS} FROM ${t.streams} WHERE name = $1`),
    listStreams: returning<DbStream>(`SELECT ${STREAM_COLUMNS} FROM ${t.streams} ORDER BY name COLLATE "C"`),
    setRetention: returning<DbStream>(`
      UPDATE ${t.streams} SET max_age_ms = $2, max_events = $3, dead_letter_max_age_ms = $4 WHERE name = $1
      RETURNING ${STREAM_COLUMNS}`),

    /** Every partition's high watermark and trim point: where a group starting at 'end' begins, what a replay re-opens. */
    highWatermarks: returning<DbTrimmedWatermark>(`
      SELECT partition, hwm, trimmed_to FROM ${t.partitions} WHERE stream = $1 ORDER BY partition`),

    /**
     * Per partition, the last sequence before time $2 (a group, replay or trim
     * `at` a time), never below the trim point: the sequence before the first
     * event whose coalesce(ts_max, ts) reaches $2, which is the first event, in
     * sequence order, stamped at or after $2 (see schema.ts). That key never
     * decreases along the sequence, and every sequence in (trimmed_to, hwm] is
     * stored, so a binary search finds it: per partition, about log2(events)
     * primary-key probes, one recursion step each. Invariant: `lo` is the trim
     * point or an event stamped (in effect) before $2; `hi` is hwm + 1 or an event
     * at or after it.
     */
    lastBefore: returning<DbLastBefore>(`
      WITH RECURSIVE search AS (
        SELECT p.partition, p.trimmed_to AS lo, p.hwm + 1 AS hi FROM ${t.partitions} p WHERE p.stream = $1
        UNION ALL
        SELECT s.partition,
               CASE WHEN e.key >= $2 THEN s.lo ELSE (s.lo + s.hi) / 2 END,
               CASE WHEN e.key >= $2 THEN (s.lo + s.hi) / 2 ELSE s.hi END
        FROM search s
        CROSS JOIN LATERAL (
          SELECT COALESCE(x.ts_max, x.ts) AS key FROM ${t.events} x
          WHERE x.stream = $1 AND x.sequence = (s.lo + s.hi) / 2 AND x.partition = s.partition
        ) e
        WHERE s.hi - s.lo > 1
      )
      SELECT partition, min(hi) - 1 AS after FROM search GROUP BY partition ORDER BY partition`),

    createGroup: returning<DbGroup>(`
      WITH grp AS (
        INSERT INTO ${t.groups} (stream, name, max_attempts, retry_initial_ms, retry_factor, retry_max_ms, ordering, created_at)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
        RETURNING *
      ), cursors AS (
        INSERT INTO ${t.groupPartitions} (stream, group_name, partition, cursor)
        SELECT $1, $2, (n - 1)::int, after + 1 FROM unnest($9::bigint[]) WITH ORDINALITY AS a(after, n)
      )
      SELECT * FROM grp`),

    getGroup: returning<DbGroup>(`SELECT * FROM ${t.groups} WHERE stream = $1 AND name = $2`),
    listGroups: returning<DbGroup>(`SELECT * FROM ${t.groups} WHERE stream = $1 ORDER BY name COLLATE "C"`),

    // ---------------------------------------------------------------- the log

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

    // ---------------------------------------------------------------- leases

    /**
     * Lock the group's partition rows, in partition order. A fetch holds them to
     * its end: fresh events are handed out by moving the cursor, so two fetchers
     * must not read the same cursor. (Settles never take them.)
     */
    lockGroupPartitions: returning<{ partition: number }>(`
      SELECT partition FROM ${t.groupPartitions}
      WHERE stream = $1 AND group_name = $2 AND partition = ANY($3::int[])
      ORDER BY partition FOR UPDATE`),

    fetch: returning<DbClaimed>(claimPlan(t, 'any', false)),
    /** The claim as it was before fetch's fast insert: what the backend runs when that insert meets a row. */
    fetchGuarded: returning<DbClaimed>(claimPlan(t, 'any', true)),
    fetchOrdered: returning<DbClaimed>(claimPlan(t, 'ordered', true)),

    /**
     * Settle a batch in one statement. Fencing: an op applies only when its lease
     * is still live (same lease id, leased, not expired at $1) and its receipt
     * matches; the caller reports the others as stale_lease / receipt_mismatch.
     * 'ack' deletes the delivery (acked events need no row: the cursor says they
     * were offered); 'reject' dead-letters: the delivery moves to rheo_dead_letters,
     * in this statement (a dead letter whose event was trimmed since its claim
     * leaves no row: only a group that lost a race with a trim holds such a lease);
     * 'nack' dead-letters once the STORED attempt reached max_attempts, else makes
     * the event due again after its explicit delay or core's backoff for the
     * stored attempt (table $14..$16).
     */
    settle: returning<DbSettled>(`
      WITH op AS (
        SELECT * FROM unnest($2::int[], $3::text[], $4::text[], $5::int[], $6::bigint[], $7::text[], $8::text[],
                             $9::text[], $10::bigint[], $11::text[], $12::int[], $13::int[], $18::bool[])
          AS op(i, stream, group_name, partition, sequence, lease_id, receipt, action, delay_ms, reason, max_attempts, gi, ordered)
        WHERE ${ASYNC_COMMIT}
      ), held AS (
        SELECT op.*, op.receipt = d.lease_id AS receipt_ok, d.attempt AS stored_attempt, d.row_id
        FROM op ${heldBy(t, 'op', 'AND d.due_at > $1')}
      ), decided AS (
        SELECT h.*,
               CASE WHEN h.action = 'ack' THEN 'ack'
                    WHEN h.action = 'reject' OR h.stored_attempt >= h.max_attempts THEN 'dead'
                    ELSE 'retry' END AS outcome,
               $1 + COALESCE(h.delay_ms, b.delay, 0) AS due_at
        FROM held h
        LEFT JOIN unnest($14::int[], $15::int[], $16::bigint[]) AS b(gi, attempt, delay)
          ON b.gi = h.gi AND b.attempt = h.stored_attempt
        WHERE h.receipt_ok
      ), finished AS (
        DELETE FROM ${t.deliveries} d USING decided h
        WHERE h.outcome IN ('ack', 'dead') AND d.ctid = h.row_id
        RETURNING h.i, h.outcome, d.stream, d.group_name, d.partition, d.sequence, d.attempt, h.reason
      ), retried AS (
        UPDATE ${t.deliveries} d SET state = 'available', lease_id = NULL, due_at = h.due_at, reason = h.reason
        FROM decided h
        WHERE h.outcome = 'retry' AND d.ctid = h.row_id
        RETURNING h.i, d.stream
      ), buried AS (
        -- The event's id travels with the dead letter: it outlives a trimmed event.
        INSERT INTO ${t.deadLetters} (stream, group_name, partition, sequence, event_id, attempt, reason, dead_at)
        SELECT f.stream, f.group_name, f.partition, f.sequence, e.id, f.attempt, COALESCE(f.reason, ''), $1
        FROM finished f JOIN ${t.events} e ON e.stream = f.stream AND e.partition = f.partition AND e.sequence = f.sequence
        WHERE f.outcome = 'dead'
        ON CONFLICT (stream, group_name, partition, sequence)
        DO UPDATE SET event_id = EXCLUDED.event_id, attempt = EXCLUDED.attempt, reason = EXCLUDED.reason, dead_at = EXCLUDED.dead_at
      ), wake AS (
        -- A retry is due again; in a partition-ordered group any settle frees the next event.
        SELECT pg_notify($17, s.stream) FROM (SELECT stream FROM retried UNION SELECT stream FROM decided WHERE ordered) s
      )
      SELECT h.i, h.receipt_ok, h.i IN (SELECT i FROM finished UNION ALL SELECT i FROM retried) AS applied,
             (SELECT count(*) FROM wake) AS woke
      FROM held h`),

    /**
     * Give leases back unhandled, in one statement: each delivery becomes due at $1
     * (claimable at once) and its attempt goes back by the one its fetch counted,
     * so the next delivery carries the same attempt. Fenced by lease id alone, not
     * by expiry: an expired lease that no fetch re-claimed still carries our lease
     * id; a claim since gave it a new one (and a settle cleared it), so those match
     * no row and the caller reports them stale_lease. An ordered group's partition
     * head is then free, since it has no live lease. Wakes waiting consumers like a
     * nack with no delay. Commits asynchronously like a settle: a lost release only
     * leaves the lease to expire (a redelivery, one attempt later).
     */
    release: returning<DbSettled>(`
      WITH op AS (
        SELECT * FROM unnest($2::int[], $3::text[], $4::text[], $5::int[], $6::bigint[], $7::text[], $8::text[])
          AS op(i, stream, group_name, partition, sequence, lease_id, receipt)
        WHERE ${ASYNC_COMMIT}
      ), held AS (
        SELECT op.*, op.receipt = d.lease_id AS receipt_ok, d.row_id
        FROM op ${heldBy(t, 'op', '')}
      ), released AS (
        UPDATE ${t.deliveries} d SET state = 'available', lease_id = NULL, attempt = GREATEST(d.attempt - 1, 0), due_at = $1
        FROM held h
        WHERE h.receipt_ok AND d.ctid = h.row_id
        RETURNING h.i, d.stream
      ), wake AS (
        SELECT pg_notify($9, s.stream) FROM (SELECT DISTINCT stream FROM released) s
      )
      SELECT h.i, h.receipt_ok, h.i IN (SELECT i FROM released) AS applied, (SELECT count(*) FROM wake) AS woke FROM held h`),

    /**
     * The ack of a transactional consumer, run inside the handler's own
     * transaction (ackInTransaction): the delivery is deleted only while the
     * lease is live ($6 the lease id, leased, not expired at $1) and the receipt
     * $7 matches, and the deletion holds its row lock until that transaction
     * ends, so no claim (SKIP LOCKED) or settle can slip in between the fence and
     * the commit. One plain DELETE by primary key, not heldBy's lock-then-ctid:
     * if a renewal of the same lease commits while this waits for its row lock,
     * the DELETE re-checks the renewed row and deletes it, where a ctid taken
     * from the locking subquery names a row version this statement's snapshot
     * cannot see (it would answer "held" and delete nothing). `live` (the
     * statement's snapshot) tells a foreign receipt from a stale lease when
     * nothing was deleted. The NOTIFY ($8, for a partition-ordered group: $9) is
     * delivered at the commit, like the ack. Unlike settle it leaves
     * synchronous_commit alone: the transaction is the caller's, and so is its
     * durability.
     */
    ackInTransaction: returning<{ acked: number; live: boolean; woke: DbInt }>(`
      WITH acked AS (
        DELETE FROM ${t.deliveries} d
        WHERE d.stream = $2 AND d.group_name = $3 AND d.partition = $4 AND d.sequence = $5
          AND d.lease_id = $6 AND d.state = 'leased' AND d.due_at > $1 AND $7::text = $6::text
        RETURNING d.stream
      ), wake AS (
        SELECT pg_notify($8, a.stream) FROM acked a WHERE $9::bool
      )
      SELECT (SELECT count(*) FROM acked)::int AS acked,
             EXISTS (SELECT 1 FROM ${t.deliveries} d
                     WHERE d.stream = $2 AND d.group_name = $3 AND d.partition = $4 AND d.sequence = $5
                       AND d.lease_id = $6 AND d.state = 'leased' AND d.due_at > $1) AS live,
             (SELECT count(*) FROM wake) AS woke`),

    /** Extend live leases to $2; same fencing as settle. */
    renew: returning<DbFenced>(`
      WITH op AS (
        SELECT * FROM unnest($3::int[], $4::text[], $5::text[], $6::int[], $7::bigint[], $8::text[], $9::text[])
          AS op(i, stream, group_name, partition, sequence, lease_id, receipt)
      ), live AS (
        SELECT op.*, op.receipt = d.lease_id AS receipt_ok, d.row_id
        FROM op ${heldBy(t, 'op', 'AND d.due_at > $1')}
      ), renewed AS (
        UPDATE ${t.deliveries} d SET due_at = $2
        FROM live l
        WHERE l.receipt_ok AND d.ctid = l.row_id
        RETURNING l.i
      )
      SELECT i, receipt_ok, i IN (SELECT i FROM renewed) AS applied FROM live`),

    // ---------------------------------------------------------------- replay, reset, redrive

    /**
     * Replay from a sequence, per partition: forget deliveries after it and the
     * dead letters there (re-opened events start over), and move the cursor back.
     * The caller clamps each `after` at the trim point.
     */
    rewindDeliveries: `
      DELETE FROM ${t.deliveries} d USING unnest($3::int[], $4::bigint[]) AS r(partition, after)
      WHERE d.stream = $1 AND d.group_name = $2 AND d.partition = r.partition AND d.sequence > r.after`,
    rewindDeadLetters: `
      DELETE FROM ${t.deadLetters} d USING unnest($3::int[], $4::bigint[]) AS r(partition, after)
      WHERE d.stream = $1 AND d.group_name = $2 AND d.partition = r.partition AND d.sequence > r.after`,
    rewindCursors: `
      UPDATE ${t.groupPartitions} g SET cursor = r.after + 1, low = LEAST(g.low, r.after + 1)
      FROM unnest($3::int[], $4::bigint[]) AS r(partition, after)
      WHERE g.stream = $1 AND g.group_name = $2 AND g.partition = r.partition`,

    /**
     * Re-open chosen events that were already offered (below the cursor) and not
     * trimmed: a fresh 'available' delivery, replacing whatever state it had (a
     * live lease becomes stale, a dead letter leaves rheo_dead_letters). Events at
     * or above the cursor are still pending and need nothing. Returns the
     * re-opened events.
     */
    reopen: returning<DbPosition>(`
      WITH chosen AS (
        SELECT r.partition, r.sequence
        FROM unnest($3::int[], $4::bigint[]) AS r(partition, sequence)
        JOIN ${t.groupPartitions} g ON g.stream = $1 AND g.group_name = $2 AND g.partition = r.partition
        JOIN ${t.partitions} p ON p.stream = $1 AND p.partition = r.partition
        WHERE r.sequence < g.cursor AND r.sequence > p.trimmed_to
      ), undead AS (
        DELETE FROM ${t.deadLetters} d USING chosen c
        WHERE d.stream = $1 AND d.group_name = $2 AND d.partition = c.partition AND d.sequence = c.sequence
      ), lowered AS (
        UPDATE ${t.groupPartitions} g SET low = LEAST(g.low, c.first)
        FROM (SELECT partition, min(sequence) AS first FROM chosen GROUP BY partition) c
        WHERE g.stream = $1 AND g.group_name = $2 AND g.partition = c.partition
      )
      INSERT INTO ${t.deliveries} AS d (stream, group_name, partition, sequence, state, attempt, due_at)
      SELECT $1, $2, c.partition, c.sequence, 'available', 0, 0 FROM chosen c
      ON CONFLICT (stream, group_name, partition, sequence)
      -- A delayed event never offered yet (parked: available at attempt 0) keeps its time (ADR 028).
      DO UPDATE SET state = 'available', attempt = 0, lease_id = NULL, consumer_id = NULL, leased_at = NULL,
                    due_at = CASE WHEN d.state = 'available' AND d.attempt = 0 THEN d.due_at ELSE 0 END, reason = NULL
      RETURNING partition, sequence`),

    /**
     * Redrive dead letters in one statement, whatever their number (no positions
     * travel to the client and back): each leaves rheo_dead_letters and becomes a
     * fresh 'available' delivery, as reopen makes it. A dead letter whose event
     * was trimmed (at or below the trim point) is skipped and stays listed.
     * Returns how many were redriven, and wakes consumers when there were any.
     */
    redriveAll: returning<DbRedriven>(redrivePlan(t, 'all')),
    /** The same for the dead letters of the events whose ids are $3 (found through the stream's id index). */
    redriveIds: returning<DbRedriven>(redrivePlan(t, 'ids')),

    /** A reset forgets every delivery and dead letter of the group (then moves the cursors). */
    resetDeliveries: `DELETE FROM ${t.deliveries} WHERE stream = $1 AND group_name = $2`,
    resetDeadLetters: `DELETE FROM ${t.deadLetters} WHERE stream = $1 AND group_name = $2`,

    wake: `SELECT pg_notify($1, $2)`,

    // ---------------------------------------------------------------- inspection

    /**
     * Per partition: the high watermark, the cursor in effect, the derived
     * frontier (the sequence before the first delivery above the trim point, else
     * the cursor in effect - 1), the live leases, and the timestamp of the first
     * unsettled event. Deliveries hold only work in flight: dead letters are never
     * read here.
     */
    groupState: returning<DbPartitionState>(`
      SELECT g.partition, p.hwm, c.cursor,
             LEAST(c.cursor - 1, COALESCE(o.first_open - 1, c.cursor - 1)) AS frontier,
             COALESCE(o.live, 0) AS live,
             -- A delayed event is unsettled from its deliver_at on.
             (SELECT GREATEST(e.ts, e.deliver_at) FROM ${t.events} e
               WHERE e.stream = $1 AND e.partition = g.partition
                 AND e.sequence = LEAST(c.cursor, COALESCE(o.first_open, c.cursor))) AS oldest_ts
      FROM ${t.groupPartitions} g
      JOIN ${t.partitions} p ON p.stream = g.stream AND p.partition = g.partition
      CROSS JOIN LATERAL (SELECT GREATEST(g.cursor, p.trimmed_to + 1) AS cursor, GREATEST(g.low, p.trimmed_to + 1) AS low) c
      LEFT JOIN LATERAL (
        SELECT min(d.sequence) AS first_open,
               count(*) FILTER (WHERE d.state = 'leased' AND d.due_at > $3) AS live
        FROM ${t.deliveries} d
        WHERE d.stream = $1 AND d.group_name = $2 AND d.partition = g.partition AND d.sequence >= c.low
      ) o ON true
      WHERE g.stream = $1 AND g.group_name = $2
      ORDER BY g.partition`),

    /** A count over the group's range of rheo_dead_letters' primary key (groupInfo; never the hot path). */
    deadCount: returning<DbCount>(`SELECT count(*) AS n FROM ${t.deadLetters} WHERE stream = $1 AND group_name = $2`),
    /**
     * A count of the group's dead letters dead-lettered at or after $3 (countDeadLetters): one
     * range of the age index (stream, group_name, dead_at), read index-only.
     */
    deadCountSince: returning<DbCount>(
      `SELECT count(*) AS n FROM ${t.deadLetters} WHERE stream = $1 AND group_name = $2 AND dead_at >= $3`,
    ),

    /**
     * Dead letters in (partition, sequence) order, after position ($3, $4), each
     * with its event, or none when the event is at or below the trim point.
     */
    deadLetters: returning<DbDeadLetter>(`
      SELECT d.partition AS d_partition, d.sequence AS d_sequence, d.event_id AS d_event_id, d.reason, d.attempt, d.dead_at,
             ${EVENT_COLUMNS}
      FROM ${t.deadLetters} d
      JOIN ${t.partitions} p ON p.stream = d.stream AND p.partition = d.partition
      LEFT JOIN ${t.events} e ON e.stream = d.stream AND e.partition = d.partition AND e.sequence = d.sequence
                              AND e.sequence > p.trimmed_to
      WHERE d.stream = $1 AND d.group_name = $2 AND (d.partition, d.sequence) > ($3::int, $4::bigint)
      ORDER BY d.partition, d.sequence LIMIT $5`),

    /**
     * Where a dead letter sits, by event id (the `after` of a dead-letter page):
     * through the stream's id index while the event is there; a trimmed event's
     * dead letter is found by its stored id (a scan of the group's dead letters,
     * which the first branch's row spares the usual case).
     */
    deadLetterPosition: returning<DbPosition>(`
      (SELECT d.partition, d.sequence FROM ${t.events} e
       JOIN ${t.deadLetters} d ON d.stream = e.stream AND d.group_name = $2 AND d.partition = e.partition AND d.sequence = e.sequence
       WHERE e.stream = $1 AND e.id = $3)
      UNION ALL
      (SELECT d.partition, d.sequence FROM ${t.deadLetters} d WHERE d.stream = $1 AND d.group_name = $2 AND d.event_id = $3)
      LIMIT 1`),
  };
}

/** Redrive: every dead letter of the group, or those of the events whose ids are $3. $4: the NOTIFY channel. */
function redrivePlan(t: TableNames, which: 'all' | 'ids'): string {
  const chosen =
    which === 'all'
      ? ''
      : `AND (d.partition, d.sequence) IN (SELECT e.partition, e.sequence FROM ${t.events} e WHERE e.stream = $1 AND e.id = ANY($3::text[]))`;
  return `
      WITH moved AS (
        DELETE FROM ${t.deadLetters} d USING ${t.partitions} p
        WHERE d.stream = $1 AND d.group_name = $2 AND p.stream = $1 AND p.partition = d.partition AND d.sequence > p.trimmed_to
          ${chosen}
        RETURNING d.partition, d.sequence
      ), redriven AS (
        INSERT INTO ${t.deliveries} (stream, group_name, partition, sequence, state, attempt, due_at)
        SELECT $1, $2, partition, sequence, 'available', 0, 0 FROM moved
        ON CONFLICT (stream, group_name, partition, sequence)
        DO UPDATE SET state = 'available', attempt = 0, lease_id = NULL, consumer_id = NULL, leased_at = NULL, due_at = 0, reason = NULL
        RETURNING 1
      ), lowered AS (
        UPDATE ${t.groupPartitions} g SET low = LEAST(g.low, m.first)
        FROM (SELECT partition, min(sequence) AS first FROM moved GROUP BY partition) m
        WHERE g.stream = $1 AND g.group_name = $2 AND g.partition = m.partition
      ), wake AS (
        SELECT pg_notify($${which === 'all' ? 3 : 4}, $1) WHERE EXISTS (SELECT 1 FROM redriven)
      )
      SELECT (SELECT count(*) FROM redriven) AS n, (SELECT count(*) FROM wake) AS woke`;
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

/**
 * The claim statement. Parameters: $1 stream, $2 group, $3 partitions (int[]),
 * $4 now, $5 limit, $6 first partition of the round-robin, $7 partition count,
 * $8 consumer id, $9 lease ms, $11 the group's maxAttempts, $10 the lease id base: a new random id per call,
 * the lease of the n-th chosen row is `<base>.<n>` (unique as the base is; one
 * random id per claim instead of a gen_random_uuid() per row, which cost about
 * 1.2 µs of server time a row against 0.2 µs for the concatenation).
 *
 * Candidates per partition, in sequence order: deliveries that are due (nacked and
 * past their delay, or whose lease expired), locked with SKIP LOCKED so that two
 * fetchers never wait on, or both take, the same row; then fresh events from the
 * cursor. Both only above the trim point: the cursor in effect is
 * GREATEST(cursor, trimmed_to + 1), and a delivery at or below trimmed_to (a group
 * that started while a trim ran) is never claimed, so no claim leases an event a
 * trim is deleting. (rheo_deliveries holds no dead letters: nothing here reads one.)
 * A fresh delayed event before its deliver_at is chosen like any fresh event (it
 * takes a place of the limit, and the cursor passes it) but parked, not leased:
 * its delivery is 'available' at attempt 0, due at deliver_at, and it comes back
 * without a lease id (the caller claims again for the places parked events took).
 *
 * Deliveries are read from the group partition's `low` on: a bound at or below
 * every delivery in flight there. Acked deliveries leave dead index entries below
 * the live ones until the table is vacuumed; a scan from the bottom would step
 * over every one of them (a claim took 30 ms after 700k acks with autovacuum
 * off), a scan from `low` only over those acked since the last claim. Each claim
 * raises `low` to its first delivery in flight (or the cursor), which its own
 * snapshot shows exactly only when no other transaction changed the row since
 * that snapshot was taken: everything that adds a delivery below the cursor
 * (reopen, redrive, replay, reset) holds the row's lock and lowers `low` in the
 * same transaction, so a claim that waited for that lock sees a newer row (its
 * xmin differs from the snapshot's: `seen` is false) and leaves `low` alone. `ordered` groups offer only the partition's next unsettled event, and
 * only while no live lease is held in that partition (the caller holds the group's
 * partition locks, taken in an earlier statement, so this statement's snapshot
 * already sees every committed claim). Candidates are then taken round-robin
 * across partitions, starting from a rotating partition so none starves.
 *
 * Fresh deliveries: no fresh event has a delivery row (only a claim moves the
 * cursor up, under the group partition row's lock; reopen and redrive insert
 * below the cursor; replay, reset and trim move it only together with deleting
 * the deliveries above it). So `fetch` inserts them without ON CONFLICT: the
 * arbiter's speculative insertion (an extra index probe, and a confirmation
 * record in the WAL, per row) was about a third of the insert. Should a row be
 * there all the same, the insert fails whole (nothing written) and the backend
 * claims again with `fetchGuarded`, whose ON CONFLICT DO NOTHING leaves that
 * event to its existing row (claimed when due), as every claim did before.
 * Ordered claims keep the guard (one event per partition: nothing to save).
 *
 * The update of due deliveries finds them by the ctid the candidate scan locked,
 * not by a join: with a table whose statistics predate a bulk replay or redrive
 * (estimated at one row), the planner once scanned every delivery of the group
 * per chosen row (7 s for a claim of 1,000 out of 40,000). By ctid each chosen row
 * is one tuple fetch, whatever the statistics say.
 */
/**
 * A fresh candidate's park time: its deliver_at when it is a delayed event not
 * yet due at $4, else NULL (lease it). The event is read only at or below the
 * partition's `delayed_to` (the last delayed event's sequence), so a claim over
 * events without a delay reads nothing more than before (ADR 028).
 */
function parkAt(t: TableNames, partition: string, sequence: string, delayedTo: string): string {
  return `CASE WHEN ${sequence} <= ${delayedTo} THEN (
          SELECT x.deliver_at FROM ${t.events} x
          WHERE x.stream = $1 AND x.sequence = ${sequence} AND x.partition = ${partition} AND x.deliver_at > $4) END`;
}

/**
 * Whether delivery `d`, when due, is a lease that expired on the group's last
 * attempt ($11 its maxAttempts): the claim dead-letters it (reason
 * core/settle.ts leaseExpiredReason) instead of leasing it again, and it takes
 * its place of the limit like a parked event, so the caller claims again for it.
 */
function expiredOnLast(d: string): string {
  return `(${d}.state = 'leased' AND ${d}.attempt >= $11::int)`;
}

function claimPlan(t: TableNames, mode: 'any' | 'ordered', guarded: boolean): string {
  const served = `
      served AS (
        SELECT g.partition, GREATEST(g.cursor, p.trimmed_to + 1) AS cursor, p.hwm, p.delayed_to,
               GREATEST(g.low, p.trimmed_to + 1) AS low,
               -- Whether the row this statement locked is the one its snapshot saw: see the low bound above.
               g.xmin = (SELECT v.xmin FROM ${t.groupPartitions} v
                          WHERE v.stream = g.stream AND v.group_name = g.group_name AND v.partition = g.partition) AS seen
        FROM ${t.groupPartitions} g
        JOIN ${t.partitions} p ON p.stream = g.stream AND p.partition = g.partition
        WHERE g.stream = $1 AND g.group_name = $2 AND g.partition = ANY($3::int[]) ${mode === 'any' ? `AND ${ASYNC_COMMIT}` : ''}
        ORDER BY g.partition
        ${mode === 'any' ? 'FOR UPDATE OF g' : ''}
      )`;
  const candidates =
    mode === 'any'
      ? `
      due AS (
        SELECT d.partition, d.sequence, 0 AS fresh, d.row_id, d.dead
        FROM served s CROSS JOIN LATERAL (
          SELECT d.partition, d.sequence, d.ctid AS row_id, ${expiredOnLast('d')} AS dead FROM ${t.deliveries} d
          WHERE d.stream = $1 AND d.group_name = $2 AND d.partition = s.partition
            AND d.sequence >= s.low AND d.due_at <= $4
          ORDER BY d.sequence LIMIT $5
          FOR UPDATE SKIP LOCKED
        ) d
      ), candidates AS (
        SELECT partition, sequence, fresh, row_id, NULL::bigint AS park_at, dead FROM due
        UNION ALL
        SELECT s.partition, q.sequence, 1, NULL::tid, ${parkAt(t, 's.partition', 'q.sequence', 's.delayed_to')}, false FROM served s
        CROSS JOIN LATERAL generate_series(s.cursor, LEAST(s.hwm, s.cursor + $5 - 1)) AS q(sequence)
      )`
      : `
      heads AS (
        SELECT s.partition, s.cursor, s.hwm, s.delayed_to, o.sequence AS open_seq, o.due_at, o.state, o.row_id, o.dead,
               EXISTS (SELECT 1 FROM ${t.deliveries} l
                        WHERE l.stream = $1 AND l.group_name = $2 AND l.partition = s.partition
                          AND l.sequence >= s.low AND l.state = 'leased' AND l.due_at > $4) AS busy
        FROM served s LEFT JOIN LATERAL (
          SELECT d.sequence, d.due_at, d.state, d.ctid AS row_id, ${expiredOnLast('d')} AS dead FROM ${t.deliveries} d
          WHERE d.stream = $1 AND d.group_name = $2 AND d.partition = s.partition AND d.sequence >= s.low
          ORDER BY d.sequence LIMIT 1
        ) o ON true
      ), candidates AS (
        SELECT partition, open_seq AS sequence, 0 AS fresh, row_id, NULL::bigint AS park_at, dead FROM heads
        WHERE NOT busy AND open_seq IS NOT NULL AND due_at <= $4
        UNION ALL
        SELECT h.partition, h.cursor, 1, NULL::tid, ${parkAt(t, 'h.partition', 'h.cursor', 'h.delayed_to')}, false FROM heads h
        WHERE NOT h.busy AND h.open_seq IS NULL AND h.cursor <= h.hwm
      )`;
  return `
      WITH ${served},${candidates},
      chosen AS (
        SELECT $1::text AS stream, $2::text AS group_name, partition, sequence, fresh, row_id, park_at, dead,
               row_number() OVER (ORDER BY turn, (partition - $6 + $7) % $7) AS pos
        FROM (
          SELECT c.*, row_number() OVER (PARTITION BY c.partition ORDER BY c.fresh, c.sequence) AS turn FROM candidates c
        ) r
        ORDER BY turn, (partition - $6 + $7) % $7
        LIMIT $5
      ), leased AS (
        UPDATE ${t.deliveries} d
        SET state = 'leased', attempt = d.attempt + 1, lease_id = $10::text || '.' || c.pos, consumer_id = $8,
            leased_at = $4, due_at = $4 + $9
        FROM chosen c
        WHERE c.fresh = 0 AND NOT c.dead AND d.ctid = c.row_id AND d.due_at <= $4
        RETURNING d.partition, d.sequence, d.attempt, d.lease_id
      ), expired AS (
        -- A lease that expired on the group's last attempt: dead-lettered, not leased again (ADR 035).
        DELETE FROM ${t.deliveries} d USING chosen c
        WHERE c.fresh = 0 AND c.dead AND d.ctid = c.row_id AND d.due_at <= $4
        RETURNING d.partition, d.sequence, d.attempt, NULL::text AS lease_id
      ), buried AS (
        INSERT INTO ${t.deadLetters} (stream, group_name, partition, sequence, event_id, attempt, reason, dead_at)
        SELECT $1, $2, x.partition, x.sequence, e.id, x.attempt, 'lease expired on attempt ' || x.attempt || ' of ' || $11::int, $4
        FROM expired x JOIN ${t.events} e ON e.stream = $1 AND e.partition = x.partition AND e.sequence = x.sequence
        ON CONFLICT (stream, group_name, partition, sequence)
        DO UPDATE SET event_id = EXCLUDED.event_id, attempt = EXCLUDED.attempt, reason = EXCLUDED.reason, dead_at = EXCLUDED.dead_at
        RETURNING partition, sequence, event_id
      ), opened AS (
        -- A fresh event is leased, or, when it is a delayed event before its time, parked: available at
        -- attempt 0, due at its deliver_at (no lease id: the final SELECT returns it without its event).
        INSERT INTO ${t.deliveries} (stream, group_name, partition, sequence, state, attempt, lease_id, consumer_id, leased_at, due_at)
        SELECT $1, $2, partition, sequence, CASE WHEN park_at IS NULL THEN 'leased' ELSE 'available' END,
               CASE WHEN park_at IS NULL THEN 1 ELSE 0 END, CASE WHEN park_at IS NULL THEN $10::text || '.' || pos END,
               CASE WHEN park_at IS NULL THEN $8 END, CASE WHEN park_at IS NULL THEN $4 END, COALESCE(park_at, $4 + $9)
        FROM chosen WHERE fresh = 1${
          // See "Fresh deliveries" above: the fast claim inserts without the arbiter; the guarded one keeps it.
          guarded ? '\n        ON CONFLICT DO NOTHING' : ''
        }
        RETURNING partition, sequence, attempt, lease_id
      ), lows AS (
        -- The first delivery in flight from the bound on (as this statement's snapshot has them: the
        -- leases it takes are among them, its fresh ones are at or above the cursor).
        SELECT s.partition, s.seen, LEAST(COALESCE(f.sequence, s.cursor), s.cursor) AS low
        FROM served s LEFT JOIN LATERAL (
          SELECT d.sequence FROM ${t.deliveries} d
          WHERE d.stream = $1 AND d.group_name = $2 AND d.partition = s.partition AND d.sequence >= s.low
          ORDER BY d.sequence LIMIT 1
        ) f ON true
      ), advanced AS (
        UPDATE ${t.groupPartitions} g
        SET cursor = COALESCE(m.next, g.cursor), low = CASE WHEN l.seen AND l.low > g.low THEN l.low ELSE g.low END
        FROM lows l
        LEFT JOIN (SELECT partition, max(sequence) + 1 AS next FROM chosen WHERE fresh = 1 GROUP BY partition) m
          ON m.partition = l.partition
        WHERE g.stream = $1 AND g.group_name = $2 AND g.partition = l.partition
          AND (m.next IS NOT NULL OR (l.seen AND l.low > g.low))
      )
      -- A row's position comes from the delivery; its id from its event, or, for a lease that expired on the
      -- last attempt, from the dead letter this claim filed (the caller reports it: Backend.fetch, FetchedLeases).
      SELECT l.attempt, l.lease_id, COALESCE(e.id, b.event_id) AS id, l.partition, l.sequence, ${EVENT_BODY_COLUMNS}
      FROM (SELECT * FROM leased UNION ALL SELECT * FROM opened UNION ALL SELECT * FROM expired) l
      JOIN chosen c ON c.partition = l.partition AND c.sequence = l.sequence
      LEFT JOIN ${t.events} e ON e.stream = $1 AND e.partition = l.partition AND e.sequence = l.sequence AND l.lease_id IS NOT NULL
      LEFT JOIN buried b ON b.partition = l.partition AND b.sequence = l.sequence AND l.lease_id IS NULL
      ORDER BY c.pos`;
}
