// The SQLite schema as numbered versions. A released version is never edited: a
// change is a new version appended here, so a database of any age has one path
// forward (see sqlite/install.ts, which applies them, and sql/schema-version.ts).
import type { TableNames } from '../sql/names';
import type { SchemaVersion } from '../sql/schema-version';

/**
 * Version 1: the tables as the first release created them, FROZEN (a copy of
 * the DDL `install: 'auto'` ran before schema versions existed, so that a
 * database made then and one made now through version 1 are the same). Times
 * are integer milliseconds from the backend's clock. The small-row tables are
 * WITHOUT ROWID, so a primary-key lookup is one b-tree search instead of an
 * index search plus a table search; events keep a rowid (their payloads make
 * rows large).
 */
const V1: SchemaVersion = {
  version: 1,
  name: 'initial',
  up: (t) => [
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
  ],
};

/**
 * Version 2: flat cost over time (issue 10).
 * - Dead letters leave rheo_deliveries for rheo_dead_letters, so the due scan,
 *   the ordered head and the frontier of a claim read only work in flight (100k
 *   dead letters had an empty claim take 10.6 ms instead of 0.06 ms, inside the
 *   write lock). rheo_deliveries keeps its columns ('available' and 'leased' rows
 *   only now); its reason and dead_at stay unused. A dead letter keeps its
 *   event's id: it outlives the event when a trim removes it.
 * - Retention per stream; per partition the trim point (`trimmed_to`: every
 *   event at or below it is gone); rheo_jobs for the background trim's turns.
 * - `ts_max` per event: the highest timestamp of its partition up to it. It never
 *   decreases along the sequence, so "the first event, in sequence order, stamped
 *   at or after T" (a start `at`, a replay `from`, a trim by age) is a bisection
 *   on the primary key (sqlite/time-lookup.ts), even when timestamps are out of
 *   order, with no index to write on every append.
 * - (stream, sequence, partition, bloom) serves a query's cross-partition order,
 *   and with `bloom` (a Bloom filter of the event's top-level scalar fields,
 *   sqlite/bloom.ts) skips, without reading them, the rows an equality filter
 *   cannot match.
 */
const V2: SchemaVersion = {
  version: 2,
  name: 'dead-letters-retention',
  up: (t) => [
    `ALTER TABLE ${t.streams} ADD COLUMN max_age_ms INTEGER`,
    `ALTER TABLE ${t.streams} ADD COLUMN max_events INTEGER`,
    `ALTER TABLE ${t.streams} ADD COLUMN dead_letter_max_age_ms INTEGER`,
    `ALTER TABLE ${t.partitions} ADD COLUMN trimmed_to INTEGER NOT NULL DEFAULT 0`,
    `ALTER TABLE ${t.events} ADD COLUMN ts_max INTEGER NOT NULL DEFAULT 0`,
    // Rows written before have no filter: every bit set passes every test (sqlite/bloom.ts).
    `ALTER TABLE ${t.events} ADD COLUMN bloom INTEGER NOT NULL DEFAULT -1`,
    // The running maximum of the rows already there, in one pass (window function; UPDATE ... FROM is SQLite 3.33+).
    `UPDATE ${t.events} SET ts_max = w.m
     FROM (SELECT rowid AS rid, max(ts) OVER (PARTITION BY stream, partition ORDER BY sequence) AS m FROM ${t.events}) w
     WHERE ${t.events}.rowid = w.rid`,
    `CREATE INDEX IF NOT EXISTS rheo_events_order ON ${t.events} (stream, sequence, partition, bloom)`,
    `CREATE TABLE IF NOT EXISTS ${t.deadLetters} (
      stream      TEXT    NOT NULL,
      group_name  TEXT    NOT NULL,
      partition   INTEGER NOT NULL,
      sequence    INTEGER NOT NULL,
      attempt     INTEGER NOT NULL,
      reason      TEXT    NOT NULL,
      dead_at     INTEGER NOT NULL,
      event_id    TEXT    NOT NULL,
      PRIMARY KEY (stream, group_name, partition, sequence)
    ) WITHOUT ROWID`,
    `CREATE INDEX IF NOT EXISTS rheo_dead_letters_age ON ${t.deadLetters} (stream, group_name, dead_at)`,
    `INSERT INTO ${t.deadLetters} (stream, group_name, partition, sequence, attempt, reason, dead_at, event_id)
     SELECT d.stream, d.group_name, d.partition, d.sequence, d.attempt, coalesce(d.reason, ''), coalesce(d.dead_at, 0), coalesce(e.id, '')
     FROM ${t.deliveries} d
     LEFT JOIN ${t.events} e ON e.stream = d.stream AND e.partition = d.partition AND e.sequence = d.sequence
     WHERE d.state = 'dead'`,
    `DELETE FROM ${t.deliveries} WHERE state = 'dead'`,
    `CREATE TABLE IF NOT EXISTS ${t.jobs} (
      name      TEXT    NOT NULL PRIMARY KEY,
      holder    TEXT    NOT NULL,
      until_ms  INTEGER NOT NULL
    ) WITHOUT ROWID`,
  ],
  // Back to version 1's shape: dead letters return to rheo_deliveries as 'dead' rows (SQLite 3.35+ drops columns).
  down: (t) => [
    `INSERT OR REPLACE INTO ${t.deliveries} (stream, group_name, partition, sequence, state, attempt, due_at, reason, dead_at)
     SELECT stream, group_name, partition, sequence, 'dead', attempt, 0, reason, dead_at FROM ${t.deadLetters}`,
    `DROP TABLE IF EXISTS ${t.jobs}`,
    `DROP TABLE IF EXISTS ${t.deadLetters}`,
    `DROP INDEX IF EXISTS rheo_events_order`,
    `ALTER TABLE ${t.events} DROP COLUMN bloom`,
    `ALTER TABLE ${t.events} DROP COLUMN ts_max`,
    `ALTER TABLE ${t.partitions} DROP COLUMN trimmed_to`,
    `ALTER TABLE ${t.streams} DROP COLUMN dead_letter_max_age_ms`,
    `ALTER TABLE ${t.streams} DROP COLUMN max_events`,
    `ALTER TABLE ${t.streams} DROP COLUMN max_age_ms`,
  ],
};

/**
 * Version 3: delayed events (issue 13; docs/adr/028-delayed-events.md), as on
 * PostgreSQL: `deliver_at` per event (NULL unless delayed) and `delayed_to` per
 * partition (the highest sequence of a delayed event, 0 for none), so a claim
 * reads deliver_at only for fresh events at or below that mark.
 */
const V3: SchemaVersion = {
  version: 3,
  name: 'delayed-events',
  up: (t) => [
    `ALTER TABLE ${t.events} ADD COLUMN deliver_at INTEGER`,
    `ALTER TABLE ${t.partitions} ADD COLUMN delayed_to INTEGER NOT NULL DEFAULT 0`,
  ],
  down: (t) => [`ALTER TABLE ${t.partitions} DROP COLUMN delayed_to`, `ALTER TABLE ${t.events} DROP COLUMN deliver_at`],
};

/**
 * Version 4: pausing a group (docs/adr/046-pausing-a-group.md), as on PostgreSQL:
 * the pause's details on the group's row (`paused_at`, `paused_until`,
 * `pause_reason`, `paused_by`: what groupInfo shows), and the claim's gate as
 * `paused_to` on each of its partition rows (the rows a claim already reads, so
 * the gate costs it no extra read). Nullable columns without a default: nothing
 * is rewritten, and every existing group is unpaused.
 */
const V4: SchemaVersion = {
  version: 4,
  name: 'pause-groups',
  up: (t) => [
    `ALTER TABLE ${t.groups} ADD COLUMN paused_at INTEGER`,
    `ALTER TABLE ${t.groups} ADD COLUMN paused_until INTEGER`,
    `ALTER TABLE ${t.groups} ADD COLUMN pause_reason TEXT`,
    `ALTER TABLE ${t.groups} ADD COLUMN paused_by TEXT`,
    `ALTER TABLE ${t.groupPartitions} ADD COLUMN paused_to INTEGER`,
  ],
  down: (t) => [
    `ALTER TABLE ${t.groupPartitions} DROP COLUMN paused_to`,
    `ALTER TABLE ${t.groups} DROP COLUMN paused_by`,
    `ALTER TABLE ${t.groups} DROP COLUMN pause_reason`,
    `ALTER TABLE ${t.groups} DROP COLUMN paused_until`,
    `ALTER TABLE ${t.groups} DROP COLUMN paused_at`,
  ],
};

/**
 * Version 5: skip, reschedule and cancelDelayed (docs/adr/048-skip-reschedule-cancel.md),
 * as on PostgreSQL. Per event, `cancelled_at`: set by cancelDelayed (NULL otherwise);
 * a claim reads it with deliver_at, only at or below the partition's delayed_to, and
 * passes a cancelled event as done. Per group, `skipped`, `skip_reason` and
 * `skipped_at`: what groupInfo tells of the group's skips. Nullable columns and a
 * constant default: adding them rewrites nothing.
 */
const V5: SchemaVersion = {
  version: 5,
  name: 'skip-reschedule-cancel',
  up: (t) => [
    `ALTER TABLE ${t.events} ADD COLUMN cancelled_at INTEGER`,
    `ALTER TABLE ${t.groups} ADD COLUMN skipped INTEGER NOT NULL DEFAULT 0`,
    `ALTER TABLE ${t.groups} ADD COLUMN skip_reason TEXT`,
    `ALTER TABLE ${t.groups} ADD COLUMN skipped_at INTEGER`,
  ],
  down: (t) => [
    `ALTER TABLE ${t.groups} DROP COLUMN skipped_at`,
    `ALTER TABLE ${t.groups} DROP COLUMN skip_reason`,
    `ALTER TABLE ${t.groups} DROP COLUMN skipped`,
    `ALTER TABLE ${t.events} DROP COLUMN cancelled_at`,
  ],
};

/**
 * Version 6: flow control (docs/adr/049-flow-control.md). Per group, its limits
 * (`key_concurrency`, `group_concurrency`, `rate_max` with `rate_per_ms`) and
 * `rate_log`, the rate limit's recent starts (a JSON RateLog, core/flow.ts), written
 * only by claims of a group with a rate limit. Per group partition, `flow`: 1 when
 * the group has any limit, so a claim learns it from the row it reads first (as the
 * pause gate of version 4) and a group without limits runs the claim it always ran.
 * Per delivery, `key`: the event's key, set only in groups with key places, and a
 * partial index over those rows alone (a group without key places writes none of
 * its rows into it) for counting a key's open deliveries and finding its earliest
 * waiting one. A delivery waiting for its key is state 'waiting', due at the
 * largest safe integer: open (it holds the frontier) and never in a due scan.
 * Nullable columns without a default, and an index that holds no existing row:
 * nothing is rewritten.
 */
const V6: SchemaVersion = {
  version: 6,
  name: 'flow-control',
  up: (t) => [
    `ALTER TABLE ${t.groups} ADD COLUMN key_concurrency INTEGER`,
    `ALTER TABLE ${t.groups} ADD COLUMN group_concurrency INTEGER`,
    `ALTER TABLE ${t.groups} ADD COLUMN rate_max INTEGER`,
    `ALTER TABLE ${t.groups} ADD COLUMN rate_per_ms INTEGER`,
    `ALTER TABLE ${t.groups} ADD COLUMN rate_log TEXT`,
    `ALTER TABLE ${t.groupPartitions} ADD COLUMN flow INTEGER`,
    `ALTER TABLE ${t.deliveries} ADD COLUMN key TEXT`,
    `CREATE INDEX IF NOT EXISTS rheo_deliveries_key ON ${t.deliveries} (stream, group_name, partition, key, sequence) WHERE key IS NOT NULL`,
  ],
  down: (t) => [
    `DROP INDEX IF EXISTS rheo_deliveries_key`,
    // Waiting deliveries have no meaning to a version-5 release: they become due offers, as a claim would have made them.
    `UPDATE ${t.deliveries} SET state = 'available', due_at = 0 WHERE state = 'waiting'`,
    `ALTER TABLE ${t.deliveries} DROP COLUMN key`,
    `ALTER TABLE ${t.groupPartitions} DROP COLUMN flow`,
    `ALTER TABLE ${t.groups} DROP COLUMN rate_log`,
    `ALTER TABLE ${t.groups} DROP COLUMN rate_per_ms`,
    `ALTER TABLE ${t.groups} DROP COLUMN rate_max`,
    `ALTER TABLE ${t.groups} DROP COLUMN group_concurrency`,
    `ALTER TABLE ${t.groups} DROP COLUMN key_concurrency`,
  ],
};

/** Every version, in order. The last one is what this release reads and writes. */
export const SQLITE_SCHEMA: readonly SchemaVersion[] = [V1, V2, V3, V4, V5, V6];

/** Where the applied versions are recorded (created before the first version is recorded). */
export function sqliteSchemaVersionTable(t: TableNames): string {
  return `CREATE TABLE IF NOT EXISTS ${t.schemaVersion} (
    version     INTEGER NOT NULL PRIMARY KEY,
    name        TEXT    NOT NULL,
    applied_at  INTEGER NOT NULL
  )`;
}

/** Drop every table of every version (the `down` of the migrations). */
export function sqliteDropAll(t: TableNames): string[] {
  return [t.jobs, t.deadLetters, t.deliveries, t.groupPartitions, t.groups, t.events, t.partitions, t.streams, t.schemaVersion].map(
    (x) => `DROP TABLE IF EXISTS ${x}`,
  );
}
