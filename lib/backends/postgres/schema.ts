// The PostgreSQL schema as numbered versions. A released version is never edited:
// a change is a new version appended here, so a database of any age has one path
// forward (postgres/install.ts applies them under the install lock; rheoMigrations
// makes one TypeORM migration of each). See docs/adr/018-sql-schema-versions.md.
import type { TableNames } from '../sql/names';
import type { SchemaVersion } from '../sql/schema-version';

/**
 * Version 1: the tables as the first release created them, FROZEN (a verbatim
 * copy of the DDL `install: 'auto'` ran before schema versions existed, so that
 * a database made then and one made now through version 1 are the same).
 */
const V1: SchemaVersion = {
  version: 1,
  name: 'initial',
  up: (t, schema) => {
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
  },
  down: (t) => [t.deliveries, t.groupPartitions, t.groups, t.events, t.partitions, t.streams].map((x) => `DROP TABLE IF EXISTS ${x}`),
};

/**
 * Version 2: flat cost over time (issue 10; docs/adr/019-sql-flat-cost.md).
 * - Dead letters leave rheo_deliveries for rheo_dead_letters (with their event's
 *   id, which outlives a trimmed event), so the due scan, an ordered group's head
 *   and the frontier read only work in flight. rheo_deliveries keeps its columns
 *   (reason and dead_at are unused now) and gets a CHECK that refuses a 'dead'
 *   row: a process of an older release still running against the upgraded
 *   tables fails its dead-letter settle loudly instead of writing a row this
 *   release would hand out again.
 * - Retention per stream; per partition the trim point (`trimmed_to`: every
 *   event at or below it is gone) and the highest timestamp appended so far
 *   (`ts_max`); rheo_jobs for the background trim's turns.
 * - Per group partition, `low`: a bound at or below every delivery in flight, so
 *   claims and the frontier read deliveries from there on instead of stepping
 *   over the dead index entries that acks leave until a vacuum (see claimPlan).
 * - rheo_deliveries keeps its file's size through a vacuum (vacuum_truncate off),
 *   and the upgrade gives it about a megabyte to keep. It is a small table of
 *   heavy churn: vacuumed empty and truncated, the planner costs a sequential
 *   scan of it at nothing, and the generic plans the backend's prepared
 *   statements keep would then scan it whole on every claim and settle once acks
 *   had filled it with dead rows again (with autovacuum off, a claim went from 1
 *   to 80 ms over a 1M-event backlog). A file of 100+ pages keeps the key lookups
 *   cheaper in every plan, whatever the table held when it was planned.
 * - Per event, `ts_max`: the highest timestamp of its partition up to it, NULL
 *   when that is its own `ts` (the usual case, and what every row of an upgraded
 *   table is unless its timestamps went backwards, so the upgrade rewrites only
 *   those rows). coalesce(ts_max, ts) never decreases along the sequence, so "the
 *   first event, in sequence order, stamped at or after T" (a start `at`, a
 *   replay `from`, a trim by age) is a binary search over the sequence: about 20
 *   primary-key probes per partition at a million events, and no index to keep.
 * - rheo_events' primary key becomes (stream, sequence, partition) INCLUDE
 *   (bloom): it serves a query's cross-partition order, (sequence, partition),
 *   with no second index for every append to maintain; lookups of one event name
 *   all three columns, and a partition's range reads step over the other
 *   partitions' entries. `bloom` is a Bloom filter of the event's top-level
 *   scalar payload and metadata fields (sqlite/bloom.ts, shared with SQLite): an
 *   index-only walk of the key skips, without reading them, the rows a query's
 *   equality filters cannot match. Rows written before hold -1 (every bit set),
 *   which passes every test.
 */
const V2: SchemaVersion = {
  version: 2,
  name: 'flat-cost',
  up: (t) => [
    `ALTER TABLE ${t.streams}
       ADD COLUMN IF NOT EXISTS max_age_ms bigint,
       ADD COLUMN IF NOT EXISTS max_events bigint,
       ADD COLUMN IF NOT EXISTS dead_letter_max_age_ms bigint`,
    `ALTER TABLE ${t.partitions}
       ADD COLUMN IF NOT EXISTS trimmed_to bigint NOT NULL DEFAULT 0,
       ADD COLUMN IF NOT EXISTS ts_max bigint NOT NULL DEFAULT 0`,
    `ALTER TABLE ${t.groupPartitions} ADD COLUMN IF NOT EXISTS low bigint NOT NULL DEFAULT 0`,
    `ALTER TABLE ${t.events} ADD COLUMN IF NOT EXISTS ts_max bigint, ADD COLUMN IF NOT EXISTS bloom bigint NOT NULL DEFAULT -1`,
    // Only rows stamped before an earlier event of their partition need a value.
    `UPDATE ${t.events} e SET ts_max = w.m
     FROM (SELECT stream, partition, sequence, ts,
                  max(ts) OVER (PARTITION BY stream, partition ORDER BY sequence) AS m
           FROM ${t.events}) w
     WHERE w.m > w.ts AND e.stream = w.stream AND e.partition = w.partition AND e.sequence = w.sequence`,
    `UPDATE ${t.partitions} p SET ts_max = COALESCE(
       (SELECT max(e.ts) FROM ${t.events} e WHERE e.stream = p.stream AND e.partition = p.partition), 0)`,
    primaryKey(t, '(stream, sequence, partition) INCLUDE (bloom)'),
    `CREATE TABLE IF NOT EXISTS ${t.deadLetters} (
      stream      text    NOT NULL,
      group_name  text    NOT NULL,
      partition   integer NOT NULL,
      sequence    bigint  NOT NULL,
      event_id    text    NOT NULL,
      attempt     integer NOT NULL,
      reason      text    NOT NULL,
      dead_at     bigint  NOT NULL,
      PRIMARY KEY (stream, group_name, partition, sequence)
    )`,
    `CREATE INDEX IF NOT EXISTS rheo_dead_letters_age ON ${t.deadLetters} (stream, group_name, dead_at)`,
    `INSERT INTO ${t.deadLetters} (stream, group_name, partition, sequence, event_id, attempt, reason, dead_at)
     SELECT d.stream, d.group_name, d.partition, d.sequence, COALESCE(e.id, ''), d.attempt, COALESCE(d.reason, ''), COALESCE(d.dead_at, 0)
     FROM ${t.deliveries} d
     LEFT JOIN ${t.events} e ON e.stream = d.stream AND e.partition = d.partition AND e.sequence = d.sequence
     WHERE d.state = 'dead'
     ON CONFLICT DO NOTHING`,
    `DELETE FROM ${t.deliveries} WHERE state = 'dead'`,
    `ALTER TABLE ${t.deliveries}
       DROP CONSTRAINT IF EXISTS rheo_deliveries_in_flight,
       ADD CONSTRAINT rheo_deliveries_in_flight CHECK (state IN ('available', 'leased'))`,
    // Keep the file's size through a vacuum, and give it about a megabyte to keep (see the comment above):
    // rows of no stream (names are never empty), written and deleted at once.
    `ALTER TABLE ${t.deliveries} SET (vacuum_truncate = false)`,
    `INSERT INTO ${t.deliveries} (stream, group_name, partition, sequence, state)
     SELECT '', '', 0, n, 'available' FROM generate_series(1, 12000) AS n
     ON CONFLICT DO NOTHING`,
    `DELETE FROM ${t.deliveries} WHERE stream = '' AND group_name = ''`,
    `CREATE TABLE IF NOT EXISTS ${t.jobs} (
      name      text    PRIMARY KEY,
      holder    text    NOT NULL,
      until_ms  bigint  NOT NULL
    )`,
  ],
  down: (t) => [
    `ALTER TABLE ${t.deliveries} DROP CONSTRAINT IF EXISTS rheo_deliveries_in_flight`,
    `ALTER TABLE ${t.deliveries} RESET (vacuum_truncate)`,
    `INSERT INTO ${t.deliveries} (stream, group_name, partition, sequence, state, attempt, due_at, reason, dead_at)
     SELECT stream, group_name, partition, sequence, 'dead', attempt, 0, reason, dead_at FROM ${t.deadLetters}
     ON CONFLICT DO NOTHING`,
    `DROP TABLE IF EXISTS ${t.jobs}`,
    `DROP TABLE IF EXISTS ${t.deadLetters}`,
    primaryKey(t, '(stream, partition, sequence)'),
    `ALTER TABLE ${t.events} DROP COLUMN IF EXISTS ts_max, DROP COLUMN IF EXISTS bloom`,
    `ALTER TABLE ${t.groupPartitions} DROP COLUMN IF EXISTS low`,
    `ALTER TABLE ${t.partitions} DROP COLUMN IF EXISTS trimmed_to, DROP COLUMN IF EXISTS ts_max`,
    `ALTER TABLE ${t.streams} DROP COLUMN IF EXISTS max_age_ms, DROP COLUMN IF EXISTS max_events, DROP COLUMN IF EXISTS dead_letter_max_age_ms`,
  ],
};

/**
 * Version 3: delayed events (issue 13; docs/adr/028-delayed-events.md).
 * - Per event, `deliver_at`: when a delayed event may first be offered (ms by
 *   the backend's clock), NULL for every other event (and every row written
 *   before). A nullable column without a default: adding it rewrites nothing.
 * - Per partition, `delayed_to`: the highest sequence of a delayed event (0: none
 *   yet). A claim reads an event's deliver_at only for fresh events at or below
 *   it, so a stream that never delays an event, or whose cursor has passed its
 *   last delayed one, claims exactly as before. A constant default: no rewrite.
 */
const V3: SchemaVersion = {
  version: 3,
  name: 'delayed-events',
  up: (t) => [
    `ALTER TABLE ${t.events} ADD COLUMN IF NOT EXISTS deliver_at bigint`,
    `ALTER TABLE ${t.partitions} ADD COLUMN IF NOT EXISTS delayed_to bigint NOT NULL DEFAULT 0`,
  ],
  down: (t) => [`ALTER TABLE ${t.partitions} DROP COLUMN IF EXISTS delayed_to`, `ALTER TABLE ${t.events} DROP COLUMN IF EXISTS deliver_at`],
};

/**
 * Version 4: pausing a group (docs/adr/046-pausing-a-group.md).
 * - Per group, the pause's details: `paused_at` (ms by the backend's clock; NULL:
 *   not paused), `paused_until` (NULL: until resumed), `pause_reason`,
 *   `paused_by`. What groupInfo shows; no claim reads them.
 * - Per group partition, `paused_to`: the claim's gate, the time the pause ends
 *   (a sentinel no clock reaches for a pause without an until), NULL when not
 *   paused. It is on the rows the claim already reads and locks FOR UPDATE, so
 *   testing it costs the claim nothing, and a pause that commits while a claim
 *   waits for those locks holds at once: PostgreSQL re-checks a locked row's
 *   conditions on its newest version.
 * Nullable columns without a default: adding them rewrites nothing, and every
 * existing group is unpaused.
 */
const V4: SchemaVersion = {
  version: 4,
  name: 'pause-groups',
  up: (t) => [
    `ALTER TABLE ${t.groups}
       ADD COLUMN IF NOT EXISTS paused_at bigint,
       ADD COLUMN IF NOT EXISTS paused_until bigint,
       ADD COLUMN IF NOT EXISTS pause_reason text,
       ADD COLUMN IF NOT EXISTS paused_by text`,
    `ALTER TABLE ${t.groupPartitions} ADD COLUMN IF NOT EXISTS paused_to bigint`,
  ],
  down: (t) => [
    `ALTER TABLE ${t.groupPartitions} DROP COLUMN IF EXISTS paused_to`,
    `ALTER TABLE ${t.groups}
       DROP COLUMN IF EXISTS paused_at, DROP COLUMN IF EXISTS paused_until,
       DROP COLUMN IF EXISTS pause_reason, DROP COLUMN IF EXISTS paused_by`,
  ],
};

/**
 * Version 5: skip, reschedule and cancelDelayed (docs/adr/048-skip-reschedule-cancel.md).
 * - Per event, `cancelled_at`: set by cancelDelayed (NULL otherwise). The claim
 *   reads it where it reads deliver_at (fresh events at or below the partition's
 *   delayed_to), and passes a cancelled event as done, writing no delivery: so no
 *   fresh event ever has a delivery row, whether a group's cursor reached the
 *   event before or after the cancel.
 * - Per group, `skipped`, `skip_reason`, `skipped_at`: what groupInfo tells of the
 *   group's skips.
 * Nullable columns and a constant default: adding them rewrites nothing.
 */
const V5: SchemaVersion = {
  version: 5,
  name: 'skip-reschedule-cancel',
  up: (t) => [
    `ALTER TABLE ${t.events} ADD COLUMN IF NOT EXISTS cancelled_at bigint`,
    `ALTER TABLE ${t.groups} ADD COLUMN IF NOT EXISTS skipped bigint NOT NULL DEFAULT 0,
       ADD COLUMN IF NOT EXISTS skip_reason text, ADD COLUMN IF NOT EXISTS skipped_at bigint`,
  ],
  down: (t) => [
    `ALTER TABLE ${t.groups} DROP COLUMN IF EXISTS skipped_at, DROP COLUMN IF EXISTS skip_reason, DROP COLUMN IF EXISTS skipped`,
    `ALTER TABLE ${t.events} DROP COLUMN IF EXISTS cancelled_at`,
  ],
};

/**
 * The due time of a delivery waiting for its key (state 'waiting'): no clock
 * reaches it, so every scan of due deliveries (`due_at <= now`) passes it by.
 */
export const WAITING_DUE = '9223372036854775807';

/**
 * Version 6: flow control (docs/adr/049-flow-control.md).
 * - Per group, the limits: `key_concurrency`, `group_concurrency`, `rate_max` and
 *   `rate_per_ms` (NULL: none), and `rate_log`, the recent starts of a rate limit
 *   (core/flow.ts RateLog: time, count, ...), written by claims of such groups only.
 * - Per delivery of a group with key places, its event's key in one of two
 *   columns: `key` while the delivery holds one of the key's places (leased, or
 *   waiting for a retry, a delay or a re-claim), `waiting_key` while it waits for
 *   one (state 'waiting', due at WAITING_DUE: never claimable). Both NULL in every
 *   other group. Two columns and not a key and a state, so that each partial index
 *   below names only columns no update of a keyless row changes: an index on
 *   `state` (even in its predicate) would make every claim and nack of every group
 *   a non-HOT update. Counting a key's places reads only its open deliveries, not
 *   its waiting ones (a hot key may have thousands).
 * - rheo_key_releases: a row each time a delivery gives up its key's place (its
 *   row deleted, or `key` cleared when it is set waiting again), written by a
 *   trigger (below), taken by the next claim of the group under its partition
 *   locks, which hands the places on (plans/flow.ts).
 * - 'waiting' joins the states the CHECK allows.
 * Nullable columns without a default: adding them rewrites nothing.
 *
 * The release rows are written by a trigger and not by a CTE in each statement
 * that ends a delivery: those are many (settle, the claim's dead letters and
 * voided offers, skip, cancelDelayed, replay, reset, trim, deleteGroup, and any
 * added later), and a trigger cannot be forgotten by one of them. Its WHEN clause
 * is tested per deleted or updated row before anything is queued: for a keyless
 * row (every row of a group without key places) it costs one null test, no call
 * and no statement, so those groups' settles and claims do the work they did.
 */
const V6: SchemaVersion = {
  version: 6,
  name: 'flow-control',
  up: (t, schema) => {
    const fn = `${quote(schema)}."rheo_key_released"`;
    return [
      `ALTER TABLE ${t.groups}
         ADD COLUMN IF NOT EXISTS key_concurrency integer,
         ADD COLUMN IF NOT EXISTS group_concurrency integer,
         ADD COLUMN IF NOT EXISTS rate_max integer,
         ADD COLUMN IF NOT EXISTS rate_per_ms bigint,
         ADD COLUMN IF NOT EXISTS rate_log bigint[]`,
      `ALTER TABLE ${t.deliveries} ADD COLUMN IF NOT EXISTS key text, ADD COLUMN IF NOT EXISTS waiting_key text`,
      // The gate of the statements of groups without limits (plans/claim.ts): a process that still knows a group
      // without limits after another gave it some claims nothing there, reads the group again, and claims by them.
      `ALTER TABLE ${t.groupPartitions} ADD COLUMN IF NOT EXISTS flow boolean NOT NULL DEFAULT false`,
      `UPDATE ${t.groupPartitions} gp SET flow = true FROM ${t.groups} g
         WHERE g.stream = gp.stream AND g.name = gp.group_name
           AND (g.ordering = 'key' OR g.key_concurrency IS NOT NULL OR g.group_concurrency IS NOT NULL OR g.rate_max IS NOT NULL)`,
      `CREATE INDEX IF NOT EXISTS rheo_deliveries_key ON ${t.deliveries} (stream, group_name, partition, key)
         WHERE key IS NOT NULL`,
      `CREATE INDEX IF NOT EXISTS rheo_deliveries_waiting_key ON ${t.deliveries} (stream, group_name, partition, waiting_key, sequence)
         WHERE waiting_key IS NOT NULL`,
      `ALTER TABLE ${t.deliveries}
         DROP CONSTRAINT IF EXISTS rheo_deliveries_in_flight,
         ADD CONSTRAINT rheo_deliveries_in_flight CHECK (state IN ('available', 'leased', 'waiting'))`,
      // No primary key: two ends of one key each leave a row (a unique row would make the second end
      // wait for the first, or be lost when a claim takes the first in between).
      `CREATE TABLE IF NOT EXISTS ${t.keyReleases} (
        stream      text    NOT NULL,
        group_name  text    NOT NULL,
        partition   integer NOT NULL,
        key         text    NOT NULL
      )`,
      `CREATE INDEX IF NOT EXISTS rheo_key_releases_group ON ${t.keyReleases} (stream, group_name, partition)`,
      `CREATE OR REPLACE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         INSERT INTO ${t.keyReleases} (stream, group_name, partition, key) VALUES (OLD.stream, OLD.group_name, OLD.partition, OLD.key);
         RETURN NULL;
       END $$`,
      `DROP TRIGGER IF EXISTS rheo_key_ended ON ${t.deliveries}`,
      `CREATE TRIGGER rheo_key_ended AFTER DELETE ON ${t.deliveries}
         FOR EACH ROW WHEN (OLD.key IS NOT NULL) EXECUTE FUNCTION ${fn}()`,
      `DROP TRIGGER IF EXISTS rheo_key_given_up ON ${t.deliveries}`,
      `CREATE TRIGGER rheo_key_given_up AFTER UPDATE OF key ON ${t.deliveries}
         FOR EACH ROW WHEN (OLD.key IS NOT NULL AND NEW.key IS NULL) EXECUTE FUNCTION ${fn}()`,
    ];
  },
  down: (t, schema) => [
    `DROP TRIGGER IF EXISTS rheo_key_given_up ON ${t.deliveries}`,
    `DROP TRIGGER IF EXISTS rheo_key_ended ON ${t.deliveries}`,
    `DROP FUNCTION IF EXISTS ${quote(schema)}."rheo_key_released"()`,
    `DROP TABLE IF EXISTS ${t.keyReleases}`,
    // A waiting delivery has no place in version 5: it becomes due at once (what version 5 would have made it).
    `UPDATE ${t.deliveries} SET state = 'available', due_at = 0 WHERE state = 'waiting'`,
    `ALTER TABLE ${t.deliveries}
       DROP CONSTRAINT IF EXISTS rheo_deliveries_in_flight,
       ADD CONSTRAINT rheo_deliveries_in_flight CHECK (state IN ('available', 'leased'))`,
    `ALTER TABLE ${t.groupPartitions} DROP COLUMN IF EXISTS flow`,
    `DROP INDEX IF EXISTS ${quote(schema)}.rheo_deliveries_waiting_key`,
    `DROP INDEX IF EXISTS ${quote(schema)}.rheo_deliveries_key`,
    `ALTER TABLE ${t.deliveries} DROP COLUMN IF EXISTS waiting_key, DROP COLUMN IF EXISTS key`,
    `ALTER TABLE ${t.groups}
       DROP COLUMN IF EXISTS rate_log, DROP COLUMN IF EXISTS rate_per_ms, DROP COLUMN IF EXISTS rate_max,
       DROP COLUMN IF EXISTS group_concurrency, DROP COLUMN IF EXISTS key_concurrency`,
  ],
};

/** A schema name as an identifier. */
function quote(schema: string): string {
  return `"${schema.replace(/"/g, '""')}"`;
}

/**
 * Give rheo_events the primary key `key` (as pg_get_constraintdef writes it after
 * PRIMARY KEY) unless it has it already, so that running a version twice, as a
 * host switching from install 'auto' to migrations does, rebuilds nothing.
 */
function primaryKey(t: TableNames, key: string): string {
  return `DO $$ BEGIN
       IF (SELECT pg_get_constraintdef(c.oid) FROM pg_constraint c
            WHERE c.conrelid = '${t.events}'::regclass AND c.contype = 'p') <> 'PRIMARY KEY ${key}' THEN
         ALTER TABLE ${t.events} DROP CONSTRAINT rheo_events_pkey, ADD CONSTRAINT rheo_events_pkey PRIMARY KEY ${key};
       END IF;
     END $$`;
}

/** Every version, in order. The last one is what this release reads and writes. */
export const PG_SCHEMA: readonly SchemaVersion[] = [V1, V2, V3, V4, V5, V6];

/** The version this release needs. */
export const PG_SCHEMA_VERSION = PG_SCHEMA[PG_SCHEMA.length - 1].version;

/** Where the applied versions are recorded; created (in the schema version 1 made) before the first record. */
export function pgSchemaVersionTable(t: TableNames): string {
  return `CREATE TABLE IF NOT EXISTS ${t.schemaVersion} (
    version     integer PRIMARY KEY,
    name        text    NOT NULL,
    applied_at  bigint  NOT NULL
  )`;
}
