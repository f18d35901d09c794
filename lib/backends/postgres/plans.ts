// Every SQL statement of the PostgreSQL backend, in one place (pg-boss's plans.js
// style). Values are always bound parameters; the only spliced text is the table
// identifiers, built from a validated, quoted schema name (sql/names.ts).
//
// Storage model (shared with SQLite, see docs/sql.md):
// - rheo_partitions.hwm is the last sequence allocated in a partition (its high watermark);
// - rheo_group_partitions.cursor is the first sequence not yet offered to the group:
//   events from the cursor up need no per-group row (lazy materialisation), so an
//   append costs the same whatever the number of groups;
// - rheo_deliveries holds one row per offered, not yet acked event of a group:
//   state 'available' (due_at = when it may be claimed), 'leased' (due_at = lease
//   expiry) or 'dead'. An ack deletes the row, so the table stays as small as the
//   work in flight;
// - the frontier is therefore derived, never stored: the sequence before the first
//   non-dead delivery, or cursor - 1 when there is none. No settle ever has to walk
//   it, and concurrent settles from many processes cannot leave it behind.
import type { TableNames } from '../sql/names';
import type { ColumnQuery } from '../sql/query-filter';
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
import { returning, Sql } from '../sql/statement';

// Rows only PostgreSQL's statements return. int columns arrive as numbers, bigint and count(*) as strings.

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

/** A delivery a claim leased (fetch, fetchOrdered): its event, attempt and new lease id. */
export interface DbClaimed extends DbEvent {
  attempt: number;
  lease_id: string;
}

/** An op of a batch whose lease held (renew; settle and release: {@link DbSettled}): its index `i`, and whether its receipt matched. */
export interface DbFenced {
  i: number;
  receipt_ok: boolean;
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

/** DDL, idempotent: safe to run at every start, under the install lock. */
export function pgInstall(schema: string, t: TableNames): string[] {
  const s = `"${schema.replace(/"/g, '""')}"`;
  const literal = `'${schema.replace(/'/g, "''")}'`;
  return [
    // Not CREATE SCHEMA IF NOT EXISTS: that checks the CREATE privilege on the database even when
    // the schema exists, and a role that was given an existing schema must still be able to install.
    `DO $$ BEGIN
       IF NOT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = ${literal}) THEN
         EXECUTE 'CREATE SCHEMA ${s.replace(/'/g, "''")}';
       END IF;
     END $$`,
    `CREATE TABLE IF NOT EXISTS ${t.streams} (
      name        text    PRIMARY KEY,
      partitions  integer NOT NULL,
      created_at  bigint  NOT NULL
    )`,
    `CREATE TABLE IF NOT EXISTS ${t.partitions} (
      stream      text    NOT NULL,
      partition   integer NOT NULL,
      hwm         bigint  NOT NULL DEFAULT 0,
      PRIMARY KEY (stream, partition)
    )`,
    // json (not jsonb) keeps payloads byte-for-byte, including key order and \\u0000.
    `CREATE TABLE IF NOT EXISTS ${t.events} (
      stream      text    NOT NULL,
      partition   integer NOT NULL,
      sequence    bigint  NOT NULL,
      id          text    NOT NULL,
      ts          bigint  NOT NULL,
      key         text,
      type        text,
      metadata    json    NOT NULL,
      payload     json    NOT NULL,
      PRIMARY KEY (stream, partition, sequence),
      UNIQUE (stream, id)
    )`,
    `CREATE TABLE IF NOT EXISTS ${t.groups} (
      stream            text    NOT NULL,
      name              text    NOT NULL,
      max_attempts      integer NOT NULL,
      retry_initial_ms  bigint  NOT NULL,
      retry_factor      double precision NOT NULL,
      retry_max_ms      bigint  NOT NULL,
      ordering          text    NOT NULL,
      created_at        bigint  NOT NULL,
      PRIMARY KEY (stream, name)
    )`,
    `CREATE TABLE IF NOT EXISTS ${t.groupPartitions} (
      stream      text    NOT NULL,
      group_name  text    NOT NULL,
      partition   integer NOT NULL,
      cursor      bigint  NOT NULL,
      PRIMARY KEY (stream, group_name, partition)
    )`,
    `CREATE TABLE IF NOT EXISTS ${t.deliveries} (
      stream      text    NOT NULL,
      group_name  text    NOT NULL,
      partition   integer NOT NULL,
      sequence    bigint  NOT NULL,
      state       text    NOT NULL,
      attempt     integer NOT NULL DEFAULT 0,
      lease_id    text,
      consumer_id text,
      leased_at   bigint,
      due_at      bigint  NOT NULL DEFAULT 0,
      reason      text,
      dead_at     bigint,
      PRIMARY KEY (stream, group_name, partition, sequence)
    )`,
  ];
}

/** DDL of the down migration. */
export function pgUninstall(t: TableNames): string[] {
  return [t.deliveries, t.groupPartitions, t.groups, t.events, t.partitions, t.streams].map((x) => `DROP TABLE IF EXISTS ${x}`);
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

/** The per-row columns of an event as every read returns them. */
// JSON leaves as text and is parsed once in JS, the same for both dialects.
const EVENT_COLUMNS = `e.id, e.partition, e.sequence, e.ts, e.key, e.type, e.metadata::text AS metadata, e.payload::text AS payload`;

export function pgPlans(t: TableNames) {
  return {
    ping: `SELECT 1`,

    // ---------------------------------------------------------------- streams and groups

    createStream: returning<DbStream>(`
      WITH stream AS (
        INSERT INTO ${t.streams} (name, partitions, created_at) VALUES ($1, $2, $3)
        RETURNING name, partitions, created_at
      ), counters AS (
        INSERT INTO ${t.partitions} (stream, partition, hwm)
        SELECT $1, p, 0 FROM generate_series(0, $2 - 1) AS p
      )
      SELECT name, partitions, created_at FROM stream`),

    getStream: returning<DbStream>(`SELECT name, partitions, created_at FROM ${t.streams} WHERE name = $1`),
    listStreams: returning<DbStream>(`SELECT name, partitions, created_at FROM ${t.streams} ORDER BY name COLLATE "C"`),

    /** The high watermark of every partition: where a group starting at 'end' begins. */
    highWatermarks: returning<DbHighWatermark>(`SELECT partition, hwm FROM ${t.partitions} WHERE stream = $1 ORDER BY partition`),

    /** Per partition, the last sequence before time $2 (a group or replay starting `at` a time). */
    lastBefore: returning<DbLastBefore>(`
      SELECT p.partition,
             COALESCE((SELECT min(e.sequence) FROM ${t.events} e
                        WHERE e.stream = $1 AND e.partition = p.partition AND e.ts >= $2), p.hwm + 1) - 1 AS after
      FROM ${t.partitions} p WHERE p.stream = $1 ORDER BY p.partition`),

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

    /**
     * Append a batch in one statement. Ids already in the stream are not written
     * again (the caller gets the stored event). Each partition's counter row is
     * locked in partition order (no deadlock between two batches) and held to
     * commit, so a later sequence range can never become visible before an
     * earlier one: readers never see a gap that later fills.
     */
    append: returning<DbAppended>(`
      WITH input AS (
        SELECT * FROM unnest($2::text[], $3::int[], $4::bigint[], $5::text[], $6::text[], $7::json[], $8::json[])
          WITH ORDINALITY AS i(id, partition, ts, key, type, metadata, payload, ord)
      ), known AS (
        SELECT i.ord, ${EVENT_COLUMNS}
        FROM input i JOIN ${t.events} e ON e.stream = $1 AND e.id = i.id
      ), fresh AS (
        SELECT * FROM input WHERE ord NOT IN (SELECT ord FROM known)
      ), locked AS (
        SELECT p.partition FROM ${t.partitions} p
        WHERE p.stream = $1 AND p.partition IN (SELECT partition FROM fresh)
        ORDER BY p.partition
        FOR UPDATE
      ), allocated AS (
        UPDATE ${t.partitions} p SET hwm = p.hwm + n.count
        FROM (SELECT f.partition, count(*) AS count FROM fresh f GROUP BY f.partition) n
        JOIN locked l ON l.partition = n.partition
        WHERE p.stream = $1 AND p.partition = n.partition
        RETURNING p.partition, p.hwm - n.count AS base
      ), stored AS (
        INSERT INTO ${t.events} (stream, partition, sequence, id, ts, key, type, metadata, payload)
        SELECT $1, f.partition, a.base + row_number() OVER (PARTITION BY f.partition ORDER BY f.ord),
               f.id, f.ts, f.key, f.type, f.metadata, f.payload
        FROM fresh f JOIN allocated a ON a.partition = f.partition
        RETURNING id, sequence
      ), wake AS (
        SELECT pg_notify($9, $1) AS n WHERE EXISTS (SELECT 1 FROM stored)
      )
      SELECT f.ord, s.sequence, NULL::text AS id, NULL::int AS partition, NULL::bigint AS ts, NULL::text AS key,
             NULL::text AS type, NULL::text AS metadata, NULL::text AS payload, (SELECT count(*) FROM wake) AS woke
      FROM fresh f JOIN stored s ON s.id = f.id
      UNION ALL
      SELECT k.ord, k.sequence, k.id, k.partition, k.ts, k.key, k.type, k.metadata, k.payload, 0
      FROM known k`),

    read: returning<DbEvent>(`
      SELECT ${EVENT_COLUMNS} FROM ${t.events} e
      WHERE e.stream = $1 AND e.partition = $2 AND e.sequence > $3
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

    fetch: returning<DbClaimed>(claimPlan(t, 'any')),
    fetchOrdered: returning<DbClaimed>(claimPlan(t, 'ordered')),

    /**
     * Settle a batch in one statement. Fencing: an op applies only when its lease
     * is still live (same lease id, leased, not expired at $1) and its receipt
     * matches; the caller reports the others as stale_lease / receipt_mismatch.
     * 'ack' deletes the delivery (acked events need no row: the cursor says they
     * were offered); 'reject' dead-letters; 'nack' dead-letters once the STORED
     * attempt reached max_attempts, else makes the event due again after its
     * explicit delay or core's backoff for the stored attempt (table $13..$15).
     */
    settle: returning<DbSettled>(`
      WITH op AS (
        SELECT * FROM unnest($2::int[], $3::text[], $4::text[], $5::int[], $6::bigint[], $7::text[], $8::text[],
                             $9::text[], $10::bigint[], $11::text[], $12::int[], $13::int[], $18::bool[])
          AS op(i, stream, group_name, partition, sequence, lease_id, receipt, action, delay_ms, reason, max_attempts, gi, ordered)
        WHERE ${ASYNC_COMMIT}
      ), held AS (
        SELECT op.*, op.receipt = d.lease_id AS receipt_ok, d.attempt AS stored_attempt
        FROM op JOIN ${t.deliveries} d
          ON d.stream = op.stream AND d.group_name = op.group_name AND d.partition = op.partition AND d.sequence = op.sequence
        WHERE d.lease_id = op.lease_id AND d.state = 'leased' AND d.due_at > $1
        FOR UPDATE OF d
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
      ), acked AS (
        DELETE FROM ${t.deliveries} d USING decided h
        WHERE h.outcome = 'ack'
          AND d.stream = h.stream AND d.group_name = h.group_name AND d.partition = h.partition AND d.sequence = h.sequence
      ), retried AS (
        UPDATE ${t.deliveries} d SET state = 'available', lease_id = NULL, due_at = h.due_at, reason = h.reason
        FROM decided h
        WHERE h.outcome = 'retry'
          AND d.stream = h.stream AND d.group_name = h.group_name AND d.partition = h.partition AND d.sequence = h.sequence
        RETURNING d.stream
      ), dead AS (
        UPDATE ${t.deliveries} d SET state = 'dead', lease_id = NULL, reason = h.reason, dead_at = $1
        FROM decided h
        WHERE h.outcome = 'dead'
          AND d.stream = h.stream AND d.group_name = h.group_name AND d.partition = h.partition AND d.sequence = h.sequence
      ), wake AS (
        -- A retry is due again; in a partition-ordered group any settle frees the next event.
        SELECT pg_notify($17, s.stream) FROM (SELECT stream FROM retried UNION SELECT stream FROM decided WHERE ordered) s
      )
      SELECT h.i, h.receipt_ok, (SELECT count(*) FROM wake) AS woke FROM held h`),

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
        SELECT op.*, op.receipt = d.lease_id AS receipt_ok
        FROM op JOIN ${t.deliveries} d
          ON d.stream = op.stream AND d.group_name = op.group_name AND d.partition = op.partition AND d.sequence = op.sequence
        WHERE d.lease_id = op.lease_id AND d.state = 'leased'
        FOR UPDATE OF d
      ), released AS (
        UPDATE ${t.deliveries} d SET state = 'available', lease_id = NULL, attempt = GREATEST(d.attempt - 1, 0), due_at = $1
        FROM held h
        WHERE h.receipt_ok
          AND d.stream = h.stream AND d.group_name = h.group_name AND d.partition = h.partition AND d.sequence = h.sequence
        RETURNING d.stream
      ), wake AS (
        SELECT pg_notify($9, s.stream) FROM (SELECT DISTINCT stream FROM released) s
      )
      SELECT h.i, h.receipt_ok, (SELECT count(*) FROM wake) AS woke FROM held h`),

    /** Extend live leases to $2; same fencing as settle. */
    renew: returning<DbFenced>(`
      WITH op AS (
        SELECT * FROM unnest($3::int[], $4::text[], $5::text[], $6::int[], $7::bigint[], $8::text[], $9::text[])
          AS op(i, stream, group_name, partition, sequence, lease_id, receipt)
      ), live AS (
        SELECT op.*, op.receipt = d.lease_id AS receipt_ok
        FROM op JOIN ${t.deliveries} d
          ON d.stream = op.stream AND d.group_name = op.group_name AND d.partition = op.partition AND d.sequence = op.sequence
        WHERE d.lease_id = op.lease_id AND d.state = 'leased' AND d.due_at > $1
        FOR UPDATE OF d
      ), renewed AS (
        UPDATE ${t.deliveries} d SET due_at = $2
        FROM live l
        WHERE l.receipt_ok
          AND d.stream = l.stream AND d.group_name = l.group_name AND d.partition = l.partition AND d.sequence = l.sequence
      )
      SELECT i, receipt_ok FROM live`),

    // ---------------------------------------------------------------- replay, reset, redrive

    /** Replay from a sequence, per partition: forget deliveries after it (dead letters included) and move the cursor back. */
    rewindDeliveries: `
      DELETE FROM ${t.deliveries} d USING unnest($3::int[], $4::bigint[]) AS r(partition, after)
      WHERE d.stream = $1 AND d.group_name = $2 AND d.partition = r.partition AND d.sequence > r.after`,
    rewindCursors: `
      UPDATE ${t.groupPartitions} g SET cursor = r.after + 1
      FROM unnest($3::int[], $4::bigint[]) AS r(partition, after)
      WHERE g.stream = $1 AND g.group_name = $2 AND g.partition = r.partition`,

    /**
     * Re-open chosen events that were already offered (below the cursor): a fresh
     * 'available' delivery, replacing whatever state it had (a live lease becomes
     * stale). Events at or above the cursor are still pending and need nothing.
     * Returns the re-opened events.
     */
    reopen: returning<DbPosition>(`
      INSERT INTO ${t.deliveries} (stream, group_name, partition, sequence, state, attempt, due_at)
      SELECT $1, $2, r.partition, r.sequence, 'available', 0, 0
      FROM unnest($3::int[], $4::bigint[]) AS r(partition, sequence)
      JOIN ${t.groupPartitions} g ON g.stream = $1 AND g.group_name = $2 AND g.partition = r.partition
      WHERE r.sequence < g.cursor
      ON CONFLICT (stream, group_name, partition, sequence)
      DO UPDATE SET state = 'available', attempt = 0, lease_id = NULL, consumer_id = NULL, leased_at = NULL,
                    due_at = 0, reason = NULL, dead_at = NULL
      RETURNING partition, sequence`),

    /**
     * Redrive dead letters in one statement, whatever their number (no positions
     * travel to the client and back): each becomes a fresh 'available' delivery, as
     * reopen makes it. $3: the event ids, or NULL for every dead letter of the group.
     * Returns how many, and wakes consumers when there were any.
     */
    redrive: returning<DbRedriven>(`
      WITH redriven AS (
        UPDATE ${t.deliveries} d
        SET state = 'available', attempt = 0, lease_id = NULL, consumer_id = NULL, leased_at = NULL,
            due_at = 0, reason = NULL, dead_at = NULL
        WHERE d.stream = $1 AND d.group_name = $2 AND d.state = 'dead'
          AND ($3::text[] IS NULL OR (d.partition, d.sequence) IN (
                SELECT e.partition, e.sequence FROM ${t.events} e WHERE e.stream = $1 AND e.id = ANY($3::text[])))
        RETURNING 1
      ), wake AS (
        SELECT pg_notify($4, $1) WHERE EXISTS (SELECT 1 FROM redriven)
      )
      SELECT (SELECT count(*) FROM redriven) AS n, (SELECT count(*) FROM wake) AS woke`),

    resetDeliveries: `DELETE FROM ${t.deliveries} WHERE stream = $1 AND group_name = $2`,

    wake: `SELECT pg_notify($1, $2)`,

    // ---------------------------------------------------------------- inspection

    /**
     * Per partition: the high watermark and the derived frontier (the sequence
     * before the first delivery that is not dead, else cursor - 1), the live
     * leases, and the timestamp of the first unsettled event.
     */
    groupState: returning<DbPartitionState>(`
      SELECT g.partition, p.hwm, g.cursor,
             LEAST(g.cursor - 1, COALESCE(o.first_open - 1, g.cursor - 1)) AS frontier,
             COALESCE(o.live, 0) AS live,
             (SELECT e.ts FROM ${t.events} e
               WHERE e.stream = $1 AND e.partition = g.partition
                 AND e.sequence = LEAST(g.cursor, COALESCE(o.first_open, g.cursor))) AS oldest_ts
      FROM ${t.groupPartitions} g
      JOIN ${t.partitions} p ON p.stream = g.stream AND p.partition = g.partition
      LEFT JOIN LATERAL (
        SELECT min(d.sequence) AS first_open,
               count(*) FILTER (WHERE d.state = 'leased' AND d.due_at > $3) AS live
        FROM ${t.deliveries} d
        WHERE d.stream = $1 AND d.group_name = $2 AND d.partition = g.partition AND d.state <> 'dead'
      ) o ON true
      WHERE g.stream = $1 AND g.group_name = $2
      ORDER BY g.partition`),

    deadCount: returning<DbCount>(`SELECT count(*) AS n FROM ${t.deliveries} WHERE stream = $1 AND group_name = $2 AND state = 'dead'`),

    /** Dead letters in (partition, sequence) order, after position ($3, $4). */
    deadLetters: returning<DbDeadLetter>(`
      SELECT d.partition AS d_partition, d.sequence AS d_sequence, d.reason, d.attempt, d.dead_at, ${EVENT_COLUMNS}
      FROM ${t.deliveries} d
      LEFT JOIN ${t.events} e ON e.stream = d.stream AND e.partition = d.partition AND e.sequence = d.sequence
      WHERE d.stream = $1 AND d.group_name = $2 AND d.state = 'dead' AND (d.partition, d.sequence) > ($3::int, $4::bigint)
      ORDER BY d.partition, d.sequence LIMIT $5`),

    /** Where a dead letter sits, by event id (the `after` of a dead-letter page). */
    deadLetterPosition: returning<DbPosition>(`
      SELECT d.partition, d.sequence FROM ${t.events} e
      JOIN ${t.deliveries} d ON d.stream = e.stream AND d.group_name = $2 AND d.partition = e.partition AND d.sequence = e.sequence
      WHERE e.stream = $1 AND e.id = $3 AND d.state = 'dead'`),
  };
}

/**
 * The claim statement. Parameters: $1 stream, $2 group, $3 partitions (int[]),
 * $4 now, $5 limit, $6 first partition of the round-robin, $7 partition count,
 * $8 consumer id, $9 lease ms.
 *
 * Candidates per partition, in sequence order: deliveries that are due (nacked and
 * past their delay, or whose lease expired), locked with SKIP LOCKED so that two
 * fetchers never wait on, or both take, the same row; then fresh events from the
 * cursor. `ordered` groups offer only the partition's next unsettled event, and
 * only while no live lease is held in that partition (the caller holds the group's
 * partition locks, taken in an earlier statement, so this statement's snapshot
 * already sees every committed claim). Candidates are then taken round-robin
 * across partitions, starting from a rotating partition so none starves.
 *
 * The update of due deliveries joins them on chosen's own stream and group columns,
 * not on $1/$2: with the constants, a table whose statistics predate a bulk replay
 * or redrive is estimated at one row for (stream, group), and the planner scanned
 * every delivery of the group once per chosen row (7 s for a claim of 1,000 out of
 * 40,000). Through chosen's columns each chosen row is one primary-key probe,
 * whatever the statistics say.
 */
function claimPlan(t: TableNames, mode: 'any' | 'ordered'): string {
  const served = `
      served AS (
        SELECT g.partition, g.cursor, p.hwm
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
        SELECT d.partition, d.sequence, 0 AS fresh
        FROM served s CROSS JOIN LATERAL (
          SELECT d.partition, d.sequence FROM ${t.deliveries} d
          WHERE d.stream = $1 AND d.group_name = $2 AND d.partition = s.partition
            AND d.state <> 'dead' AND d.due_at <= $4
          ORDER BY d.sequence LIMIT $5
          FOR UPDATE SKIP LOCKED
        ) d
      ), candidates AS (
        SELECT partition, sequence, fresh FROM due
        UNION ALL
        SELECT s.partition, q.sequence, 1 FROM served s
        CROSS JOIN LATERAL generate_series(s.cursor, LEAST(s.hwm, s.cursor + $5 - 1)) AS q(sequence)
      )`
      : `
      heads AS (
        SELECT s.partition, s.cursor, s.hwm, o.sequence AS open_seq, o.due_at, o.state,
               EXISTS (SELECT 1 FROM ${t.deliveries} l
                        WHERE l.stream = $1 AND l.group_name = $2 AND l.partition = s.partition
                          AND l.state = 'leased' AND l.due_at > $4) AS busy
        FROM served s LEFT JOIN LATERAL (
          SELECT d.sequence, d.due_at, d.state FROM ${t.deliveries} d
          WHERE d.stream = $1 AND d.group_name = $2 AND d.partition = s.partition AND d.state <> 'dead'
          ORDER BY d.sequence LIMIT 1
        ) o ON true
      ), candidates AS (
        SELECT partition, open_seq AS sequence, 0 AS fresh FROM heads
        WHERE NOT busy AND open_seq IS NOT NULL AND due_at <= $4
        UNION ALL
        SELECT partition, cursor, 1 FROM heads
        WHERE NOT busy AND open_seq IS NULL AND cursor <= hwm
      )`;
  return `
      WITH ${served},${candidates},
      chosen AS (
        SELECT $1::text AS stream, $2::text AS group_name, partition, sequence, fresh,
               row_number() OVER (ORDER BY turn, (partition - $6 + $7) % $7) AS pos
        FROM (
          SELECT c.*, row_number() OVER (PARTITION BY c.partition ORDER BY c.fresh, c.sequence) AS turn FROM candidates c
        ) r
        ORDER BY turn, (partition - $6 + $7) % $7
        LIMIT $5
      ), leased AS (
        UPDATE ${t.deliveries} d
        SET state = 'leased', attempt = d.attempt + 1, lease_id = gen_random_uuid()::text, consumer_id = $8,
            leased_at = $4, due_at = $4 + $9
        FROM chosen c
        WHERE c.fresh = 0
          AND d.stream = c.stream AND d.group_name = c.group_name AND d.partition = c.partition AND d.sequence = c.sequence
          AND d.state <> 'dead' AND d.due_at <= $4
        RETURNING d.partition, d.sequence, d.attempt, d.lease_id
      ), opened AS (
        INSERT INTO ${t.deliveries} (stream, group_name, partition, sequence, state, attempt, lease_id, consumer_id, leased_at, due_at)
        SELECT $1, $2, partition, sequence, 'leased', 1, gen_random_uuid()::text, $8, $4, $4 + $9 FROM chosen WHERE fresh = 1
        ON CONFLICT DO NOTHING
        RETURNING partition, sequence, attempt, lease_id
      ), advanced AS (
        UPDATE ${t.groupPartitions} g SET cursor = m.next
        FROM (SELECT partition, max(sequence) + 1 AS next FROM chosen WHERE fresh = 1 GROUP BY partition) m
        WHERE g.stream = $1 AND g.group_name = $2 AND g.partition = m.partition
      )
      SELECT l.attempt, l.lease_id, ${EVENT_COLUMNS}
      FROM (SELECT * FROM leased UNION ALL SELECT * FROM opened) l
      JOIN chosen c ON c.partition = l.partition AND c.sequence = l.sequence
      JOIN ${t.events} e ON e.stream = $1 AND e.partition = l.partition AND e.sequence = l.sequence
      ORDER BY c.pos`;
}

/**
 * A query's column filters compiled to SQL (payload and metadata equality is
 * checked on the parsed rows: see sql/query-filter.ts). Values are bound parameters.
 */
export function pgQuery(t: TableNames, q: ColumnQuery): { sql: Sql<DbEvent>; params: unknown[] } {
  const params: unknown[] = [q.stream];
  const bind = (v: unknown) => {
    params.push(v);
    return `$${params.length}`;
  };
  const where = [`e.stream = $1`];
  if (q.type !== undefined) where.push(`e.type = ${bind(q.type)}`);
  if (q.key !== undefined) where.push(`e.key = ${bind(q.key)}`);
  if (q.partition !== undefined) where.push(`e.partition = ${bind(q.partition)}`);
  if (q.from !== undefined) where.push(`e.ts >= ${bind(q.from)}`);
  if (q.to !== undefined) where.push(`e.ts <= ${bind(q.to)}`);
  if (q.afterSequence !== undefined) where.push(`e.sequence > ${bind(q.afterSequence)}`);
  if (q.untilSequence !== undefined) where.push(`e.sequence <= ${bind(q.untilSequence)}`);
  const asc = q.order === 'asc';
  if (q.after)
    where.push(`(e.sequence, e.partition) ${asc ? '>' : '<'} (${bind(q.after.sequence)}::bigint, ${bind(q.after.partition)}::int)`);
  const dir = asc ? 'ASC' : 'DESC';
  const sql = returning<DbEvent>(`SELECT ${EVENT_COLUMNS} FROM ${t.events} e WHERE ${where.join(' AND ')}
    ORDER BY e.sequence ${dir}, e.partition ${dir} LIMIT ${bind(q.limit)}`);
  return { sql, params };
}
