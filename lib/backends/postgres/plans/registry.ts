// The registry's statements: streams, groups, and where a group starts (a
// partition's high watermark, the last sequence before a time).
import type { TableNames } from '../../sql/names';
import type { DbGroup, DbHighWatermark, DbInt, DbStream } from '../../sql/rows';
import { returning } from '../../sql/statement';

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

/** A stream's columns as every statement returns them (DbStream). */
const STREAM_COLUMNS = `name, partitions, created_at, max_age_ms, max_events, dead_letter_max_age_ms`;

/** Whether group row `g` has a flow limit: the group partitions' `flow` gate (plans/claim.ts). */
export function HAS_LIMITS(g: string): string {
  return `(${g}.ordering = 'key' OR ${g}.key_concurrency IS NOT NULL OR ${g}.group_concurrency IS NOT NULL OR ${g}.rate_max IS NOT NULL)`;
}

export function registryPlans(t: TableNames) {
  return {
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

    /** $10..$13: the flow limits (rows.ts flowColumns), null when unset. */
    createGroup: returning<DbGroup>(`
      WITH grp AS (
        INSERT INTO ${t.groups} (stream, name, max_attempts, retry_initial_ms, retry_factor, retry_max_ms, ordering, created_at,
                                 key_concurrency, group_concurrency, rate_max, rate_per_ms)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $10, $11, $12, $13)
        RETURNING *
      ), cursors AS (
        INSERT INTO ${t.groupPartitions} (stream, group_name, partition, cursor, flow)
        SELECT $1, $2, (n - 1)::int, after + 1, ${HAS_LIMITS('grp')} FROM grp, unnest($9::bigint[]) WITH ORDINALITY AS a(after, n)
      )
      SELECT * FROM grp`),

    getGroup: returning<DbGroup>(`SELECT * FROM ${t.groups} WHERE stream = $1 AND name = $2`),
    listGroups: returning<DbGroup>(`SELECT * FROM ${t.groups} WHERE stream = $1 ORDER BY name COLLATE "C"`),
    /** deleteGroup, after its deliveries (whose deletion wrote release rows of their keys): the group's release rows. */
    removeKeyReleases: `DELETE FROM ${t.keyReleases} WHERE stream = $1 AND group_name = $2`,
  };
}
