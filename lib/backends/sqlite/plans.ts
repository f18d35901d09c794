// Every SQL statement of the SQLite backend, in one place. The storage model is
// PostgreSQL's (see postgres/plans.ts): per-partition counters, per-group cursors with
// lazy materialisation, one delivery row per offered and not yet acked event, and
// a derived frontier. SQLite has one writer, so the read-modify-write steps run as
// small statements inside one `BEGIN IMMEDIATE` transaction (better-sqlite3 is
// synchronous: the whole transaction runs without yielding the event loop).
import type { TableNames } from '../sql/names';
import type { ColumnQuery } from '../sql/query-filter';
import type { DbCount, DbDeadLetter, DbEvent, DbGroup, DbHighWatermark, DbPartitionState, DbPosition, DbStream } from '../sql/rows';
import { returning, Sql } from '../sql/statement';

// Rows only SQLite's statements return. better-sqlite3 returns INTEGER columns as numbers.

/** The connection's busy timeout (busyTimeout). */
export interface DbBusyTimeout {
  timeout: number;
}
/** The first sequence at or after a time, null when there is none (firstAtOrAfter). */
export interface DbFirstAt {
  seq: number | null;
}
/** A partition's new high watermark (allocate). */
export interface DbAllocated {
  hwm: number;
}
/** A group partition's cursor and the partition's high watermark (position). */
export interface DbCursorAndHwm {
  cursor: number;
  hwm: number;
}
/** A group partition's cursor (cursor). */
export interface DbCursor {
  cursor: number;
}
/** A delivery's sequence (due). */
export interface DbSequence {
  sequence: number;
}
/** The first delivery that is not dead (firstOpen). */
export interface DbFirstOpen {
  sequence: number;
  state: string;
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
/** The lease on a delivery (leasedBy). */
export interface DbLeaseId {
  lease_id: string;
}
/** The live lease on a delivery and its attempt (held). */
export interface DbHeld {
  lease_id: string;
  attempt: number;
}

/**
 * DDL, idempotent. Times are integer milliseconds from the backend's clock. The
 * small-row tables are WITHOUT ROWID, so a primary-key lookup is one b-tree
 * search instead of an index search plus a table search; events keep a rowid
 * (their payloads make rows large).
 */
export function sqliteInstall(t: TableNames): string[] {
  return [
    `CREATE TABLE IF NOT EXISTS ${t.streams} (
      name        TEXT    NOT NULL PRIMARY KEY,
      partitions  INTEGER NOT NULL,
      created_at  INTEGER NOT NULL
    ) WITHOUT ROWID`,
    `CREATE TABLE IF NOT EXISTS ${t.partitions} (
      stream      TEXT    NOT NULL,
      partition   INTEGER NOT NULL,
      hwm         INTEGER NOT NULL DEFAULT 0,
      PRIMARY KEY (stream, partition)
    ) WITHOUT ROWID`,
    `CREATE TABLE IF NOT EXISTS ${t.events} (
      stream      TEXT    NOT NULL,
      partition   INTEGER NOT NULL,
      sequence    INTEGER NOT NULL,
      id          TEXT    NOT NULL,
      ts          INTEGER NOT NULL,
      key         TEXT,
      type        TEXT,
      metadata    TEXT    NOT NULL,
      payload     TEXT    NOT NULL,
      PRIMARY KEY (stream, partition, sequence),
      UNIQUE (stream, id)
    )`,
    `CREATE TABLE IF NOT EXISTS ${t.groups} (
      stream            TEXT    NOT NULL,
      name              TEXT    NOT NULL,
      max_attempts      INTEGER NOT NULL,
      retry_initial_ms  INTEGER NOT NULL,
      retry_factor      REAL    NOT NULL,
      retry_max_ms      INTEGER NOT NULL,
      ordering          TEXT    NOT NULL,
      created_at        INTEGER NOT NULL,
      PRIMARY KEY (stream, name)
    ) WITHOUT ROWID`,
    `CREATE TABLE IF NOT EXISTS ${t.groupPartitions} (
      stream      TEXT    NOT NULL,
      group_name  TEXT    NOT NULL,
      partition   INTEGER NOT NULL,
      cursor      INTEGER NOT NULL,
      PRIMARY KEY (stream, group_name, partition)
    ) WITHOUT ROWID`,
    `CREATE TABLE IF NOT EXISTS ${t.deliveries} (
      stream      TEXT    NOT NULL,
      group_name  TEXT    NOT NULL,
      partition   INTEGER NOT NULL,
      sequence    INTEGER NOT NULL,
      state       TEXT    NOT NULL,
      attempt     INTEGER NOT NULL DEFAULT 0,
      lease_id    TEXT,
      consumer_id TEXT,
      leased_at   INTEGER,
      due_at      INTEGER NOT NULL DEFAULT 0,
      reason      TEXT,
      dead_at     INTEGER,
      PRIMARY KEY (stream, group_name, partition, sequence)
    ) WITHOUT ROWID`,
  ];
}

export function sqliteUninstall(t: TableNames): string[] {
  return [t.deliveries, t.groupPartitions, t.groups, t.events, t.partitions, t.streams].map((x) => `DROP TABLE IF EXISTS ${x}`);
}

const EVENT_COLUMNS = `e.id, e.partition, e.sequence, e.ts, e.key, e.type, e.metadata, e.payload`;

export function sqlitePlans(t: TableNames) {
  return {
    ping: `SELECT 1`,

    /** The connection's busy timeout (SQLite's own synchronous wait for a lock), and setting it; see locks.ts. */
    busyTimeout: returning<DbBusyTimeout>(`PRAGMA busy_timeout`),
    setBusyTimeout: (ms: number) => `PRAGMA busy_timeout = ${Math.trunc(ms)}`,

    insertStream: `INSERT INTO ${t.streams} (name, partitions, created_at) VALUES (?, ?, ?)`,
    insertPartition: `INSERT INTO ${t.partitions} (stream, partition, hwm) VALUES (?, ?, 0)`,
    getStream: returning<DbStream>(`SELECT name, partitions, created_at FROM ${t.streams} WHERE name = ?`),
    listStreams: returning<DbStream>(`SELECT name, partitions, created_at FROM ${t.streams} ORDER BY name`),
    highWatermarks: returning<DbHighWatermark>(`SELECT partition, hwm FROM ${t.partitions} WHERE stream = ? ORDER BY partition`),
    /** First sequence at or after a time in one partition (null when none). */
    firstAtOrAfter: returning<DbFirstAt>(`SELECT min(sequence) AS seq FROM ${t.events} WHERE stream = ? AND partition = ? AND ts >= ?`),

    insertGroup: returning<DbGroup>(`
      INSERT INTO ${t.groups} (stream, name, max_attempts, retry_initial_ms, retry_factor, retry_max_ms, ordering, created_at)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING *`),
    insertGroupPartition: `INSERT INTO ${t.groupPartitions} (stream, group_name, partition, cursor) VALUES (?, ?, ?, ?)`,
    getGroup: returning<DbGroup>(`SELECT * FROM ${t.groups} WHERE stream = ? AND name = ?`),
    listGroups: returning<DbGroup>(`SELECT * FROM ${t.groups} WHERE stream = ? ORDER BY name`),

    // ---------------------------------------------------------------- the log

    eventById: returning<DbEvent>(`SELECT ${EVENT_COLUMNS} FROM ${t.events} e WHERE e.stream = ? AND e.id = ?`),
    /** Reserve n sequences; returns the new high watermark (the range ends there). */
    allocate: returning<DbAllocated>(`UPDATE ${t.partitions} SET hwm = hwm + ? WHERE stream = ? AND partition = ? RETURNING hwm`),
    insertEvent: `
      INSERT INTO ${t.events} (stream, partition, sequence, id, ts, key, type, metadata, payload)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    read: returning<DbEvent>(`
      SELECT ${EVENT_COLUMNS} FROM ${t.events} e
      WHERE e.stream = ? AND e.partition = ? AND e.sequence > ? ORDER BY e.sequence LIMIT ?`),
    eventAt: returning<DbEvent>(`SELECT ${EVENT_COLUMNS} FROM ${t.events} e WHERE e.stream = ? AND e.partition = ? AND e.sequence = ?`),

    // ---------------------------------------------------------------- leases

    /** A group partition's cursor and the partition's high watermark. */
    position: returning<DbCursorAndHwm>(`
      SELECT g.cursor, p.hwm FROM ${t.groupPartitions} g
      JOIN ${t.partitions} p ON p.stream = g.stream AND p.partition = g.partition
      WHERE g.stream = ? AND g.group_name = ? AND g.partition = ?`),
    /** Deliveries whose time has come (nacked past their delay, or expired leases), in sequence order. */
    due: returning<DbSequence>(`
      SELECT sequence FROM ${t.deliveries}
      WHERE stream = ? AND group_name = ? AND partition = ? AND state <> 'dead' AND due_at <= ?
      ORDER BY sequence LIMIT ?`),
    /** The first delivery that is not dead: the event after the frontier, when one was offered. */
    firstOpen: returning<DbFirstOpen>(`
      SELECT sequence, state, due_at FROM ${t.deliveries}
      WHERE stream = ? AND group_name = ? AND partition = ? AND state <> 'dead'
      ORDER BY sequence LIMIT 1`),
    liveLeases: returning<DbLiveLeases>(`
      SELECT count(*) AS n FROM ${t.deliveries}
      WHERE stream = ? AND group_name = ? AND partition = ? AND state = 'leased' AND due_at > ?`),
    claimDue: returning<DbAttempt>(`
      UPDATE ${t.deliveries} SET state = 'leased', attempt = attempt + 1, lease_id = ?, consumer_id = ?, leased_at = ?, due_at = ?
      WHERE stream = ? AND group_name = ? AND partition = ? AND sequence = ?
      RETURNING attempt`),
    /** Lease a run of fresh events from the cursor: one row per lease id of the JSON array, sequence = first + index. */
    claimFresh: `
      INSERT INTO ${t.deliveries} (stream, group_name, partition, sequence, state, attempt, lease_id, consumer_id, leased_at, due_at)
      SELECT ?, ?, ?, ? + j.key, 'leased', 1, j.value, ?, ?, ? FROM json_each(?) j`,
    eventRange: returning<DbEvent>(`
      SELECT ${EVENT_COLUMNS} FROM ${t.events} e
      WHERE e.stream = ? AND e.partition = ? AND e.sequence BETWEEN ? AND ? ORDER BY e.sequence`),
    moveCursor: `UPDATE ${t.groupPartitions} SET cursor = ? WHERE stream = ? AND group_name = ? AND partition = ?`,

    /**
     * Give a lease back unhandled: due now, and the attempt its fetch counted taken
     * back. Fenced by lease id alone, not by expiry: a claim since gave the row a new
     * lease id, a settle cleared it. (PostgreSQL's plan explains the rest.)
     */
    release: `
      UPDATE ${t.deliveries} SET state = 'available', lease_id = NULL, attempt = max(attempt - 1, 0), due_at = ?
      WHERE stream = ? AND group_name = ? AND partition = ? AND sequence = ? AND lease_id = ? AND state = 'leased'`,
    /** The delivery a lease names, while that lease id is on it, expired or not (a release's receipt check). */
    leasedBy: returning<DbLeaseId>(`
      SELECT lease_id FROM ${t.deliveries}
      WHERE stream = ? AND group_name = ? AND partition = ? AND sequence = ? AND lease_id = ? AND state = 'leased'`),

    /** The delivery a lease names, when that lease is still live. */
    held: returning<DbHeld>(`
      SELECT lease_id, attempt FROM ${t.deliveries}
      WHERE stream = ? AND group_name = ? AND partition = ? AND sequence = ?
        AND lease_id = ? AND state = 'leased' AND due_at > ?`),
    renew: `UPDATE ${t.deliveries} SET due_at = ? WHERE stream = ? AND group_name = ? AND partition = ? AND sequence = ?`,
    ack: `DELETE FROM ${t.deliveries} WHERE stream = ? AND group_name = ? AND partition = ? AND sequence = ?`,
    /** Ack in one step when the receipt is the lease id (it always is here): deletes only a live lease. */
    ackHeld: `
      DELETE FROM ${t.deliveries}
      WHERE stream = ? AND group_name = ? AND partition = ? AND sequence = ? AND lease_id = ? AND state = 'leased' AND due_at > ?`,
    retry: `
      UPDATE ${t.deliveries} SET state = 'available', lease_id = NULL, due_at = ?, reason = ?
      WHERE stream = ? AND group_name = ? AND partition = ? AND sequence = ?`,
    dead: `
      UPDATE ${t.deliveries} SET state = 'dead', lease_id = NULL, reason = ?, dead_at = ?
      WHERE stream = ? AND group_name = ? AND partition = ? AND sequence = ?`,

    // ---------------------------------------------------------------- replay, reset, redrive

    rewindDeliveries: `DELETE FROM ${t.deliveries} WHERE stream = ? AND group_name = ? AND partition = ? AND sequence > ?`,
    setCursor: `UPDATE ${t.groupPartitions} SET cursor = ? WHERE stream = ? AND group_name = ? AND partition = ?`,
    cursor: returning<DbCursor>(`SELECT cursor FROM ${t.groupPartitions} WHERE stream = ? AND group_name = ? AND partition = ?`),
    /** Re-open an offered event: a fresh 'available' delivery replacing whatever state it had. */
    reopen: `
      INSERT INTO ${t.deliveries} (stream, group_name, partition, sequence, state, attempt, due_at)
      VALUES (?, ?, ?, ?, 'available', 0, 0)
      ON CONFLICT (stream, group_name, partition, sequence)
      DO UPDATE SET state = 'available', attempt = 0, lease_id = NULL, consumer_id = NULL, leased_at = NULL,
                    due_at = 0, reason = NULL, dead_at = NULL`,
    /** Redrive every dead letter of a group in one statement (what reopen does to each). */
    redriveAll: `
      UPDATE ${t.deliveries} SET state = 'available', attempt = 0, lease_id = NULL, consumer_id = NULL, leased_at = NULL,
                                 due_at = 0, reason = NULL, dead_at = NULL
      WHERE stream = ? AND group_name = ? AND state = 'dead'`,
    deadById: returning<DbPosition>(`
      SELECT d.partition, d.sequence FROM ${t.events} e
      JOIN ${t.deliveries} d ON d.stream = e.stream AND d.group_name = ? AND d.partition = e.partition AND d.sequence = e.sequence
      WHERE e.stream = ? AND e.id = ? AND d.state = 'dead'`),
    resetDeliveries: `DELETE FROM ${t.deliveries} WHERE stream = ? AND group_name = ?`,

    // ---------------------------------------------------------------- inspection

    /** Per partition: high watermark, derived frontier, live leases, timestamp of the first unsettled event. */
    groupState: returning<DbPartitionState>(`
      SELECT g.partition, p.hwm, g.cursor,
             min(g.cursor, coalesce(o.first_open, g.cursor)) - 1 AS frontier,
             coalesce(o.live, 0) AS live,
             (SELECT e.ts FROM ${t.events} e
               WHERE e.stream = g.stream AND e.partition = g.partition
                 AND e.sequence = min(g.cursor, coalesce(o.first_open, g.cursor))) AS oldest_ts
      FROM ${t.groupPartitions} g
      JOIN ${t.partitions} p ON p.stream = g.stream AND p.partition = g.partition
      LEFT JOIN (
        SELECT partition, min(sequence) AS first_open,
               sum(CASE WHEN state = 'leased' AND due_at > ? THEN 1 ELSE 0 END) AS live
        FROM ${t.deliveries}
        WHERE stream = ? AND group_name = ? AND state <> 'dead'
        GROUP BY partition
      ) o ON o.partition = g.partition
      WHERE g.stream = ? AND g.group_name = ?
      ORDER BY g.partition`),
    deadCount: returning<DbCount>(`SELECT count(*) AS n FROM ${t.deliveries} WHERE stream = ? AND group_name = ? AND state = 'dead'`),
    deadLetters: returning<DbDeadLetter>(`
      SELECT d.partition AS d_partition, d.sequence AS d_sequence, d.reason, d.attempt, d.dead_at, ${EVENT_COLUMNS}
      FROM ${t.deliveries} d
      LEFT JOIN ${t.events} e ON e.stream = d.stream AND e.partition = d.partition AND e.sequence = d.sequence
      WHERE d.stream = ? AND d.group_name = ? AND d.state = 'dead'
        AND (d.partition > ? OR (d.partition = ? AND d.sequence > ?))
      ORDER BY d.partition, d.sequence LIMIT ?`),
  };
}

/** A query's column filters compiled to SQL (payload and metadata equality: see sql/query-filter.ts). */
export function sqliteQuery(t: TableNames, q: ColumnQuery): { sql: Sql<DbEvent>; params: unknown[] } {
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
  const dir = asc ? 'ASC' : 'DESC';
  params.push(q.limit);
  return {
    sql: returning<DbEvent>(
      `SELECT ${EVENT_COLUMNS} FROM ${t.events} e WHERE ${where.join(' AND ')} ORDER BY e.sequence ${dir}, e.partition ${dir} LIMIT ?`,
    ),
    params,
  };
}
