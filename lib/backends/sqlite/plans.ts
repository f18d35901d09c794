// Every SQL statement of the SQLite backend's hot path and inspection, in one
// place (retention's are in retention-plans.ts). The storage model is
// PostgreSQL's (see postgres/plans.ts): per-partition counters, per-group cursors
// with lazy materialisation, one delivery row per offered event that is neither
// acked nor dead, dead letters in their own table, and a derived frontier.
// SQLite has one writer, so the read-modify-write steps run as small statements
// inside one `BEGIN IMMEDIATE` transaction (better-sqlite3 is synchronous: the
// whole transaction runs without yielding the event loop).
//
// The trim guard: events at or below a partition's `trimmed_to` are gone (or
// going: a trim deletes them in chunks after moving the point), so nothing here
// leases, settles or counts a delivery at or below it, and a cursor behind it
// counts as `trimmed_to + 1`.
import type { TableNames } from '../sql/names';
import type { ColumnQuery } from '../sql/query-filter';
import type { DbCount, DbDeadLetter, DbEvent, DbGroup, DbPartitionState, DbPosition, DbStream } from '../sql/rows';
import { returning, Sql } from '../sql/statement';
import { BY_KEY } from './flow-plans';
import type { JsonWhere } from './json-where';

// Rows only SQLite's statements return. better-sqlite3 returns INTEGER columns as numbers.

/** The connection's busy timeout (busyTimeout). */
export interface DbBusyTimeout {
  timeout: number;
}
/** A partition's high watermark and trim point (partitionMarks). */
export interface DbPartitionMarks {
  partition: number;
  hwm: number;
  trimmed_to: number;
}
/** A sequence, null when there is none (firstEvent, firstDelivery). */
export interface DbFirstAt {
  seq: number | null;
}
/** A partition's new high watermark (allocate). */
export interface DbAllocated {
  hwm: number;
}
/** The running timestamp maximum of an event (tsMaxAt). */
export interface DbTsMax {
  ts_max: number;
}
/**
 * A group partition's cursor and pause gate, the partition's high watermark, trim point and last delayed
 * event (position).
 */
export interface DbCursorAndHwm {
  cursor: number;
  /** Claims skip the row while this is after now; null when the group is not paused (pause.ts). */
  paused_to: number | null;
  /** 1 when the group has flow limits: the claim is delivery-flow.ts's (schema version 6); else null. */
  flow: number | null;
  hwm: number;
  trimmed_to: number;
  delayed_to: number;
}
/** A delayed event not yet due, and when it is, or one cancelled in every group (delayedIn). */
export interface DbDelayed {
  sequence: number;
  deliver_at: number;
  /** Set by cancelDelayed (docs/adr/048-skip-reschedule-cancel.md): the claim passes the event as done. */
  cancelled_at: number | null;
}
/** A group partition's cursor and the partition's trim point (cursor). */
export interface DbCursor {
  cursor: number;
  trimmed_to: number;
}
/** A due delivery (due): its state tells an expired lease from a retry; its attempt, one expired on the last attempt. */
export interface DbDue {
  sequence: number;
  state: string;
  attempt: number;
}
/** The first delivery in flight (firstOpen). */
export interface DbFirstOpen {
  sequence: number;
  state: string;
  attempt: number;
  due_at: number;
}
/** How many live leases (liveLeases). */
export interface DbLiveLeases {
  n: number;
}
/** A claimed delivery's attempt (claimDue). */
export interface DbAttempt {
  attempt: number;
}
/** The event id a dead letter was filed under (deadByClaim). */
export interface DbEventId {
  event_id: string;
}
/** The lease on a delivery (leasedBy). */
export interface DbLeaseId {
  lease_id: string;
}
/** The live lease on a delivery and its attempt (held). */
export interface DbHeld {
  lease_id: string;
  attempt: number;
}

/** Positional parameters of one row of insertEvents (the stream is bound once per statement, as $stream). */
export const EVENT_ROW_PARAMS = 11;
/**
 * Rows per INSERT of an append, largest first: a batch goes in chunks of the largest that fits
 * (500 events: 3 × 128, then 64 + 32 + 16 + 4), so at most 8 statements are ever prepared, each far
 * below SQLite's 32,766 parameters. Past about 25 rows a chunk gains little: 128 rows cost about
 * 3% less CPU a row than 64 in the statement (paired micro-bench), 256 no less than 128.
 */
export const INSERT_ROWS = [128, 64, 32, 16, 8, 4, 2, 1] as const;

const EVENT_COLUMNS = `e.id, e.partition, e.sequence, e.ts, e.key, e.type, e.metadata, e.payload, e.deliver_at`;
/** The columns of a raw event row (eventRunRaw): a partition's event without its partition. */
const RAW_EVENT_COLUMNS = `e.id, e.sequence, e.ts, e.key, e.type, e.metadata, e.payload, e.deliver_at`;
/** A raw event row (eventRunRaw), in RAW_EVENT_COLUMNS order: id, sequence, ts, key, type, metadata, payload, deliver_at. */
export type RawEventRow = [string, number, number, string | null, string | null, string, string, number | null];

/** The trim point of the row alias `x`'s partition (x has stream and partition columns). */
const trimmedTo = (t: TableNames, x: string) =>
  `(SELECT tp.trimmed_to FROM ${t.partitions} tp WHERE tp.stream = ${x}.stream AND tp.partition = ${x}.partition)`;

export function sqlitePlans(t: TableNames) {
  return {
    ping: `SELECT 1`,

    /** The connection's busy timeout (SQLite's own synchronous wait for a lock), and setting it; see locks.ts. */
    busyTimeout: returning<DbBusyTimeout>(`PRAGMA busy_timeout`),
    setBusyTimeout: (ms: number) => `PRAGMA busy_timeout = ${Math.trunc(ms)}`,

    insertStream: `
      INSERT INTO ${t.streams} (name, partitions, created_at, max_age_ms, max_events, dead_letter_max_age_ms) VALUES (?, ?, ?, ?, ?, ?)`,
    insertPartition: `INSERT INTO ${t.partitions} (stream, partition, hwm) VALUES (?, ?, 0)`,
    getStream: returning<DbStream>(`
      SELECT name, partitions, created_at, max_age_ms, max_events, dead_letter_max_age_ms FROM ${t.streams} WHERE name = ?`),
    listStreams: returning<DbStream>(`
      SELECT name, partitions, created_at, max_age_ms, max_events, dead_letter_max_age_ms FROM ${t.streams} ORDER BY name`),
    setRetention: `UPDATE ${t.streams} SET max_age_ms = ?, max_events = ?, dead_letter_max_age_ms = ? WHERE name = ?`,
    partitionMarks: returning<DbPartitionMarks>(
      `SELECT partition, hwm, trimmed_to FROM ${t.partitions} WHERE stream = ? ORDER BY partition`,
    ),

    /** The last four: the flow limits (flowColumns, sql/rows.ts). */
    insertGroup: returning<DbGroup>(`
      INSERT INTO ${t.groups} (stream, name, max_attempts, retry_initial_ms, retry_factor, retry_max_ms, ordering, created_at,
                               key_concurrency, group_concurrency, rate_max, rate_per_ms)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING *`),
    /** The last: the claim's flow gate (1 when the group has any flow limit, else null: flow-plans.ts setFlow). */
    insertGroupPartition: `INSERT INTO ${t.groupPartitions} (stream, group_name, partition, cursor, flow) VALUES (?, ?, ?, ?, ?)`,
    getGroup: returning<DbGroup>(`SELECT * FROM ${t.groups} WHERE stream = ? AND name = ?`),
    listGroups: returning<DbGroup>(`SELECT * FROM ${t.groups} WHERE stream = ? ORDER BY name`),

    // ---------------------------------------------------------------- the log

    eventById: returning<DbEvent>(`SELECT ${EVENT_COLUMNS} FROM ${t.events} e WHERE e.stream = ? AND e.id = ?`),
    /** Reserve n sequences; returns the new high watermark (the range ends there). */
    allocate: returning<DbAllocated>(`UPDATE ${t.partitions} SET hwm = hwm + ? WHERE stream = ? AND partition = ? RETURNING hwm`),
    /** The running timestamp maximum at an event: an append continues it, a time lookup bisects it (time-lookup.ts). */
    tsMaxAt: returning<DbTsMax>(`SELECT ts_max FROM ${t.events} WHERE stream = ? AND partition = ? AND sequence = ?`),
    /**
     * Insert events, `n` rows in one statement (EVENT_ROW_PARAMS parameters a row, in this column
     * order after the stream), one statement per n of INSERT_ROWS: a row costs about 0.8× what a
     * single-row INSERT does in better-sqlite3 (one call into the driver and one statement start per
     * chunk, not per row). The stream, the same for every row, is the named $stream: bound (its text
     * converted and copied) once per statement instead of once per row.
     */
    insertEvents: new Map<number, string>(
      INSERT_ROWS.map((n) => [
        n,
        `INSERT INTO ${t.events} (stream, partition, sequence, id, ts, key, type, metadata, payload, ts_max, bloom, deliver_at)
         VALUES ${Array.from({ length: n }, () => '($stream, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)').join(', ')}`,
      ]),
    ),
    /** A delayed event was appended at this sequence: claims read deliver_at up to it (see postgres/schema.ts, version 3). */
    markDelayed: `UPDATE ${t.partitions} SET delayed_to = max(delayed_to, ?) WHERE stream = ? AND partition = ?`,
    /** A partition's events after a sequence, never at or below the trim point. */
    read: returning<DbEvent>(`
      SELECT ${EVENT_COLUMNS} FROM ${t.events} e
      WHERE e.stream = ? AND e.partition = ? AND e.sequence > max(?, ${trimmedTo(t, 'e')}) ORDER BY e.sequence LIMIT ?`),
    eventAt: returning<DbEvent>(`SELECT ${EVENT_COLUMNS} FROM ${t.events} e WHERE e.stream = ? AND e.partition = ? AND e.sequence = ?`),

    // ---------------------------------------------------------------- leases

    /** A group partition's cursor and pause gate, the partition's high watermark, trim point and last delayed event. */
    position: returning<DbCursorAndHwm>(`
      SELECT g.cursor, g.paused_to, g.flow, p.hwm, p.trimmed_to, p.delayed_to FROM ${t.groupPartitions} g
      JOIN ${t.partitions} p ON p.stream = g.stream AND p.partition = g.partition
      WHERE g.stream = ? AND g.group_name = ? AND g.partition = ?`),
    /** Deliveries whose time has come (nacked past their delay, or expired leases) above the trim point, in sequence order. */
    due: returning<DbDue>(`
      SELECT sequence, state, attempt FROM ${t.deliveries}
      WHERE stream = ? AND group_name = ? AND partition = ? AND sequence > ? AND due_at <= ?
      ORDER BY sequence LIMIT ?`),
    /** The first delivery above the trim point: the event after the frontier, when one was offered. */
    firstOpen: returning<DbFirstOpen>(`
      SELECT sequence, state, attempt, due_at FROM ${t.deliveries}
      WHERE stream = ? AND group_name = ? AND partition = ? AND sequence > ?
      ORDER BY sequence LIMIT 1`),
    liveLeases: returning<DbLiveLeases>(`
      SELECT count(*) AS n FROM ${t.deliveries}
      WHERE stream = ? AND group_name = ? AND partition = ? AND sequence > ? AND state = 'leased' AND due_at > ?`),
    claimDue: returning<DbAttempt>(`
      UPDATE ${t.deliveries} SET state = 'leased', attempt = attempt + 1, lease_id = ?, consumer_id = ?, leased_at = ?, due_at = ?
      WHERE stream = ? AND group_name = ? AND partition = ? AND sequence = ?
      RETURNING attempt`),
    /** Lease a run of fresh events from the cursor: one row per lease id of the JSON array, sequence = first + index. */
    claimFresh: `
      INSERT INTO ${t.deliveries} (stream, group_name, partition, sequence, state, attempt, lease_id, consumer_id, leased_at, due_at)
      SELECT ?, ?, ?, ? + j.key, 'leased', 1, j.value, ?, ?, ? FROM json_each(?) j`,
    /** The delayed events of a run of fresh events that are not due yet: a claim parks them (parkDelayed). */
    delayedIn: returning<DbDelayed>(`
      SELECT sequence, deliver_at, cancelled_at FROM ${t.events}
      WHERE stream = ? AND partition = ? AND sequence BETWEEN ? AND ? AND (deliver_at > ? OR cancelled_at IS NOT NULL) ORDER BY sequence`),
    /** Park a delayed event the cursor passes before its time: available at attempt 0, due at its deliver_at (ADR 028). */
    parkDelayed: `
      INSERT INTO ${t.deliveries} (stream, group_name, partition, sequence, state, attempt, due_at) VALUES (?, ?, ?, ?, 'available', 0, ?)`,
    /**
     * The events of a claimed run, read as arrays (better-sqlite3's raw mode: no object per
     * row, about 40% cheaper a row than named columns) in RAW_EVENT_COLUMNS order; the
     * partition is the caller's. Run it through the backend's rawStmt.
     */
    eventRunRaw: returning<RawEventRow>(`
      SELECT ${RAW_EVENT_COLUMNS} FROM ${t.events} e
      WHERE e.stream = ? AND e.partition = ? AND e.sequence BETWEEN ? AND ? ORDER BY e.sequence`),
    moveCursor: `UPDATE ${t.groupPartitions} SET cursor = ? WHERE stream = ? AND group_name = ? AND partition = ?`,

    /**
     * Give a lease back unhandled: due now, and the attempt its fetch counted taken
     * back. Fenced by lease id alone, not by expiry: a claim since gave the row a new
     * lease id, a settle cleared it. (PostgreSQL's plan explains the rest.)
     */
    release: `
      UPDATE ${t.deliveries} SET state = 'available', lease_id = NULL, attempt = max(attempt - 1, 0), due_at = ?
      WHERE stream = ? AND group_name = ? AND partition = ? AND sequence = ? AND lease_id = ? AND state = 'leased'
        AND sequence > ${trimmedTo(t, t.deliveries)}`,
    /** The delivery a lease names, while that lease id is on it, expired or not (a release's receipt check). */
    leasedBy: returning<DbLeaseId>(`
      SELECT lease_id FROM ${t.deliveries} d
      WHERE stream = ? AND group_name = ? AND partition = ? AND sequence = ? AND lease_id = ? AND state = 'leased'
        AND sequence > ${trimmedTo(t, 'd')}`),

    /** The delivery a lease names, when that lease is still live (and its event not trimmed). */
    held: returning<DbHeld>(`
      SELECT lease_id, attempt FROM ${t.deliveries} d
      WHERE stream = ? AND group_name = ? AND partition = ? AND sequence = ?
        AND lease_id = ? AND state = 'leased' AND due_at > ? AND sequence > ${trimmedTo(t, 'd')}`),
    renew: `UPDATE ${t.deliveries} SET due_at = ? WHERE stream = ? AND group_name = ? AND partition = ? AND sequence = ?`,
    /** Renew in one step when the receipt is the lease id (it always is here): moves only a live lease's expiry. */
    renewHeld: `
      UPDATE ${t.deliveries} SET due_at = ?
      WHERE stream = ? AND group_name = ? AND partition = ? AND sequence = ? AND lease_id = ? AND state = 'leased' AND due_at > ?
        AND sequence > ${trimmedTo(t, t.deliveries)}`,
    ack: `DELETE FROM ${t.deliveries} WHERE stream = ? AND group_name = ? AND partition = ? AND sequence = ?`,
    /**
     * A transactional consumer's first statement in its handler's transaction
     * (ackInTransaction): a write that changes nothing, so it takes the write lock
     * at once (BEGIN IMMEDIATE's effect, waited for off the event loop), and a
     * fence: one row when the lease is still live.
     */
    touchHeld: `
      UPDATE ${t.deliveries} SET due_at = due_at
      WHERE stream = ? AND group_name = ? AND partition = ? AND sequence = ? AND lease_id = ? AND state = 'leased' AND due_at > ?
        AND sequence > ${trimmedTo(t, t.deliveries)}`,
    /** Ack in one step when the receipt is the lease id (it always is here): deletes only a live lease. */
    ackHeld: `
      DELETE FROM ${t.deliveries}
      WHERE stream = ? AND group_name = ? AND partition = ? AND sequence = ? AND lease_id = ? AND state = 'leased' AND due_at > ?
        AND sequence > ${trimmedTo(t, t.deliveries)}`,
    /**
     * The live leases of a run of consecutive sequences of a group partition, as raw rows
     * [sequence, lease_id] (a settle's ackRange checks each against its op, then ackRange deletes them).
     */
    liveInRange: returning<[number, string]>(`
      SELECT sequence, lease_id FROM ${t.deliveries}
      WHERE stream = ? AND group_name = ? AND partition = ? AND sequence BETWEEN ? AND ? AND state = 'leased' AND due_at > ?
        AND sequence > ${trimmedTo(t, t.deliveries)}`),
    /** Delete what liveInRange returned, under the same conditions (same transaction: the same rows). */
    ackRange: `
      DELETE FROM ${t.deliveries}
      WHERE stream = ? AND group_name = ? AND partition = ? AND sequence BETWEEN ? AND ? AND state = 'leased' AND due_at > ?
        AND sequence > ${trimmedTo(t, t.deliveries)}`,
    retry: `
      UPDATE ${t.deliveries} SET state = 'available', lease_id = NULL, due_at = ?, reason = ?
      WHERE stream = ? AND group_name = ? AND partition = ? AND sequence = ?`,
    /** Dead-letter a delivery (after `ack` deleted it): its attempt, reason and time, and its event's id, which may outlive the event. */
    dead: `
      INSERT OR REPLACE INTO ${t.deadLetters} (stream, group_name, partition, sequence, attempt, reason, dead_at, event_id)
      VALUES (?, ?, ?, ?, ?, ?, ?, coalesce((SELECT id FROM ${t.events} WHERE stream = ? AND partition = ? AND sequence = ?), ''))`,
    /** `dead`, telling the event id it filed: a claim reports the dead letters it makes (Backend.fetch, FetchedLeases). */
    deadByClaim: returning<DbEventId>(`
      INSERT OR REPLACE INTO ${t.deadLetters} (stream, group_name, partition, sequence, attempt, reason, dead_at, event_id)
      VALUES (?, ?, ?, ?, ?, ?, ?, coalesce((SELECT id FROM ${t.events} WHERE stream = ? AND partition = ? AND sequence = ?), ''))
      RETURNING event_id`),

    // ---------------------------------------------------------------- replay, reset, redrive

    rewindDeliveries: `DELETE FROM ${t.deliveries} WHERE stream = ? AND group_name = ? AND partition = ? AND sequence > ?`,
    rewindDeadLetters: `DELETE FROM ${t.deadLetters} WHERE stream = ? AND group_name = ? AND partition = ? AND sequence > ?`,
    setCursor: `UPDATE ${t.groupPartitions} SET cursor = ? WHERE stream = ? AND group_name = ? AND partition = ?`,
    cursor: returning<DbCursor>(`
      SELECT g.cursor, p.trimmed_to FROM ${t.groupPartitions} g
      JOIN ${t.partitions} p ON p.stream = g.stream AND p.partition = g.partition
      WHERE g.stream = ? AND g.group_name = ? AND g.partition = ?`),
    /** Re-open an offered event: a fresh 'available' delivery replacing whatever state it had (its dead letter goes: deleteDeadLetter). */
    reopen: `
      INSERT INTO ${t.deliveries} (stream, group_name, partition, sequence, state, attempt, due_at)
      VALUES (?, ?, ?, ?, 'available', 0, 0)
      ON CONFLICT (stream, group_name, partition, sequence)
      DO UPDATE SET state = 'available', attempt = 0, lease_id = NULL, consumer_id = NULL, leased_at = NULL,
                    -- A delayed event never offered yet (parked: available at attempt 0) keeps its time (ADR 028).
                    due_at = CASE WHEN state = 'available' AND attempt = 0 THEN due_at ELSE 0 END, reason = NULL, dead_at = NULL`,
    deleteDeadLetter: `DELETE FROM ${t.deadLetters} WHERE stream = ? AND group_name = ? AND partition = ? AND sequence = ?`,
    /** Redrive every dead letter of a group whose event is still there, in one statement (then redriveAllDelete). */
    redriveAll: `
      INSERT INTO ${t.deliveries} (stream, group_name, partition, sequence, state, attempt, due_at)
      SELECT d.stream, d.group_name, d.partition, d.sequence, 'available', 0, 0 FROM ${t.deadLetters} d
      WHERE d.stream = ? AND d.group_name = ? AND d.sequence > ${trimmedTo(t, 'd')}
      ON CONFLICT (stream, group_name, partition, sequence)
      DO UPDATE SET state = 'available', attempt = 0, lease_id = NULL, consumer_id = NULL, leased_at = NULL, due_at = 0`,
    redriveAllDelete: `
      DELETE FROM ${t.deadLetters} WHERE stream = ? AND group_name = ? AND sequence > ${trimmedTo(t, t.deadLetters)}`,
    /** A dead letter of the group by its event's id, while the event is there. */
    deadById: returning<DbPosition>(`
      SELECT d.partition, d.sequence FROM ${t.events} e
      JOIN ${t.deadLetters} d ON d.stream = e.stream AND d.group_name = ? AND d.partition = e.partition AND d.sequence = e.sequence
      WHERE e.stream = ? AND e.id = ? AND d.sequence > ${trimmedTo(t, 'd')}`),
    /** A dead letter of the group by the event id it kept (its event may be trimmed): a scan, only for paging past such a one. */
    deadByKeptId: returning<DbPosition>(`
      SELECT partition, sequence FROM ${t.deadLetters} WHERE stream = ? AND group_name = ? AND event_id = ? LIMIT 1`),
    resetDeliveries: `DELETE FROM ${t.deliveries} WHERE stream = ? AND group_name = ?`,
    resetDeadLetters: `DELETE FROM ${t.deadLetters} WHERE stream = ? AND group_name = ?`,

    // ---------------------------------------------------------------- inspection

    /**
     * Per partition: high watermark, cursor (never behind the trim point), derived frontier (the
     * sequence before the first delivery in flight, else the cursor minus one), live leases, the
     * deliveries waiting for their key, and the timestamp of the first unsettled event.
     */
    groupState: returning<DbPartitionState>(`
      SELECT s.partition, s.hwm, s.cursor, min(s.cursor, coalesce(s.first_open, s.cursor)) - 1 AS frontier, s.live, s.waiting_key,
             -- A delayed event is unsettled from its deliver_at on.
             (SELECT max(e.ts, coalesce(e.deliver_at, e.ts)) FROM ${t.events} e
               WHERE e.stream = ? AND e.partition = s.partition AND e.sequence = min(s.cursor, coalesce(s.first_open, s.cursor))) AS oldest_ts
      FROM (
        SELECT g.partition, p.hwm, max(g.cursor, p.trimmed_to + 1) AS cursor,
               (SELECT min(d.sequence) FROM ${t.deliveries} d
                 WHERE d.stream = g.stream AND d.group_name = g.group_name AND d.partition = g.partition AND d.sequence > p.trimmed_to) AS first_open,
               (SELECT count(*) FROM ${t.deliveries} d
                 WHERE d.stream = g.stream AND d.group_name = g.group_name AND d.partition = g.partition AND d.sequence > p.trimmed_to
                   AND d.state = 'leased' AND d.due_at > ?) AS live,
               -- Waiting for their key (only rows with a key: the partial index of schema version 6).
               (SELECT count(*) FROM ${t.deliveries} d ${BY_KEY}
                 WHERE d.stream = g.stream AND d.group_name = g.group_name AND d.partition = g.partition AND d.sequence > p.trimmed_to
                   AND d.key IS NOT NULL AND d.state = 'waiting') AS waiting_key
        FROM ${t.groupPartitions} g
        JOIN ${t.partitions} p ON p.stream = g.stream AND p.partition = g.partition
        WHERE g.stream = ? AND g.group_name = ?
      ) s
      ORDER BY s.partition`),
    deadCount: returning<DbCount>(`SELECT count(*) AS n FROM ${t.deadLetters} WHERE stream = ? AND group_name = ?`),
    /** The group's dead letters dead-lettered at or after a time (countDeadLetters): a range of the age index, covering. */
    deadCountSince: returning<DbCount>(`SELECT count(*) AS n FROM ${t.deadLetters} WHERE stream = ? AND group_name = ? AND dead_at >= ?`),
    /** Dead letters from a position on, each with its event while that is there (trimmed: the event columns are null). */
    deadLetters: returning<DbDeadLetter>(`
      SELECT d.partition AS d_partition, d.sequence AS d_sequence, d.event_id AS d_event_id, d.reason, d.attempt, d.dead_at, ${EVENT_COLUMNS}
      FROM ${t.deadLetters} d
      LEFT JOIN ${t.events} e ON e.stream = d.stream AND e.partition = d.partition AND e.sequence = d.sequence
                             AND e.sequence > ${trimmedTo(t, 'd')}
      WHERE d.stream = ? AND d.group_name = ?
        AND (d.partition > ? OR (d.partition = ? AND d.sequence > ?))
      ORDER BY d.partition, d.sequence LIMIT ?`),
  };
}

/**
 * The filters of a query (columns, Bloom bits, JSON predicates) as one SELECT in query
 * order, served by rheo_events_order: the Bloom test reads only the index, so rows
 * that fail it are never read.
 */
export function sqliteQuery(
  t: TableNames,
  q: ColumnQuery,
  json: JsonWhere,
  bloom: number | null,
): { sql: Sql<DbEvent>; params: unknown[] } {
  const params: unknown[] = [q.stream];
  const where = [`e.stream = ?`];
  const add = (clause: string, ...values: unknown[]) => {
    where.push(clause);
    params.push(...values);
  };
  if (q.type !== undefined) add(`e.type = ?`, q.type);
  if (q.key !== undefined) add(`e.key = ?`, q.key);
  if (q.partition !== undefined) add(`e.partition = ?`, q.partition);
  if (q.from !== undefined) add(`e.ts >= ?`, q.from);
  if (q.to !== undefined) add(`e.ts <= ?`, q.to);
  if (q.afterSequence !== undefined) add(`e.sequence > ?`, q.afterSequence);
  if (q.untilSequence !== undefined) add(`e.sequence <= ?`, q.untilSequence);
  const asc = q.order === 'asc';
  if (q.after) add(`(e.sequence, e.partition) ${asc ? '>' : '<'} (?, ?)`, q.after.sequence, q.after.partition);
  if (bloom !== null) add(`(e.bloom & ?) = ?`, bloom, bloom);
  for (const clause of json.clauses) where.push(clause);
  params.push(...json.params);
  const dir = asc ? 'ASC' : 'DESC';
  params.push(q.limit);
  return {
    sql: returning<DbEvent>(
      `SELECT ${EVENT_COLUMNS} FROM ${t.events} e WHERE ${where.join(' AND ')} ORDER BY e.sequence ${dir}, e.partition ${dir} LIMIT ?`,
    ),
    params,
  };
}
