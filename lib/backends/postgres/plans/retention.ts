// Retention's statements: trim and dead-letter purge. The trim runs in two
// phases (see ../retention.ts and docs/adr/019-sql-flat-cost.md): a short transaction that decides the trim
// points, moves lagging groups when forced and records the points; then the
// events below them go in chunks, each its own statement, holding no group lock.
import type { TableNames } from '../../sql/names';
import type { DbCount, DbInt } from '../../sql/rows';
import { returning } from '../../sql/statement';

/** A partition's high watermark and trim point, as the trim's first phase reads them. */
export interface DbTrimPartition {
  partition: number;
  hwm: DbInt;
  trimmed_to: DbInt;
}

/** One group's partition, as the trim's first phase reads it: the cursor in effect and the first delivery in flight. */
export interface DbTrimGroupPartition {
  group_name: string;
  partition: number;
  cursor: DbInt;
  first_open: DbInt | null;
}

/** A delivery a trim dropped: its group, and whether it was work the group had not finished (above the old trim point). */
export interface DbTrimDropped {
  group_name: string;
  unfinished: boolean;
}

// A DELETE or UPDATE run through a TypeORM QueryRunner answers [rows, count], not its rows:
// those whose rows are read wrap the change in a WITH and SELECT from it.

/** The first sequence a trim still has to delete (firstStored). */
export interface DbFirstStored {
  first: DbInt;
}

/**
 * Trims delete without waiting for the WAL flush, as settles commit: a server
 * crash can only forget the last chunks, which then stay below the trim point,
 * where nothing reads (reads and queries start above it) and the next trim
 * deletes them.
 */
const ASYNC_COMMIT = `(SELECT set_config('synchronous_commit', 'off', true)) IS NOT NULL`;

export function retentionPlans(t: TableNames) {
  return {
    /**
     * Phase 1, first statement: lock every group's partition rows of the stream,
     * in one fixed order (group, partition) so two trims never deadlock. FOR SHARE
     * when not forced (the trim only reads the groups: claims, replays and resets
     * of the stream wait these milliseconds, so none moves a cursor the trim is
     * deciding on); FOR UPDATE when forced (it moves them).
     */
    lockGroupsShared: returning<{ group_name: string }>(`
      SELECT group_name FROM ${t.groupPartitions} WHERE stream = $1 ORDER BY group_name, partition FOR SHARE`),
    lockGroupsExclusive: returning<{ group_name: string }>(`
      SELECT group_name FROM ${t.groupPartitions} WHERE stream = $1 ORDER BY group_name, partition FOR UPDATE`),

    /** Phase 1: every partition's high watermark and current trim point. */
    partitions: returning<DbTrimPartition>(`
      SELECT partition, hwm, trimmed_to FROM ${t.partitions} WHERE stream = $1 ORDER BY partition`),

    /**
     * Phase 1: per group and partition, the cursor in effect and the first
     * delivery in flight above the trim point; the frontier is the lower of
     * cursor - 1 and first_open - 1.
     */
    groupPartitions: returning<DbTrimGroupPartition>(`
      SELECT g.group_name, g.partition, GREATEST(g.cursor, p.trimmed_to + 1) AS cursor, o.first_open
      FROM ${t.groupPartitions} g
      JOIN ${t.partitions} p ON p.stream = g.stream AND p.partition = g.partition
      LEFT JOIN LATERAL (
        SELECT min(d.sequence) AS first_open FROM ${t.deliveries} d
        WHERE d.stream = $1 AND d.group_name = g.group_name AND d.partition = g.partition
          AND d.sequence >= GREATEST(g.low, p.trimmed_to + 1)
      ) o ON true
      WHERE g.stream = $1
      ORDER BY g.group_name, g.partition`),

    /**
     * Phase 1: drop every delivery at or below its partition's new point ($2..$5:
     * group, partition, point, old trim point). Forced, those above the old point
     * are the lagging groups' unfinished work (their leases go stale); otherwise
     * the point is at or below every frontier, so only leftovers below the old
     * point can be there.
     */
    dropDeliveries: returning<DbTrimDropped>(`
      WITH dropped AS (
        DELETE FROM ${t.deliveries} d
        USING unnest($2::text[], $3::int[], $4::bigint[], $5::bigint[]) AS x(group_name, partition, point, floor)
        WHERE d.stream = $1 AND d.group_name = x.group_name AND d.partition = x.partition AND d.sequence <= x.point
        RETURNING x.group_name, d.sequence > x.floor AS unfinished
      )
      SELECT group_name, unfinished FROM dropped`),

    /** Phase 1, forced: lagging groups' cursors move past the point ($2..$4: group, partition, point). */
    moveCursors: `
      UPDATE ${t.groupPartitions} g SET cursor = x.point + 1
      FROM unnest($2::text[], $3::int[], $4::bigint[]) AS x(group_name, partition, point)
      WHERE g.stream = $1 AND g.group_name = x.group_name AND g.partition = x.partition AND g.cursor <= x.point`,

    /**
     * Phase 1, last: record the points (they only move forward). From its commit
     * on, every read, query, claim and start is above them, before any event
     * below them is deleted.
     */
    markTrimmed: `
      UPDATE ${t.partitions} p SET trimmed_to = x.point
      FROM unnest($2::int[], $3::bigint[]) AS x(partition, point)
      WHERE p.stream = $1 AND p.partition = x.partition AND p.trimmed_to < x.point`,

    /**
     * Phase 2: the lowest sequence the stream still stores at or below its
     * partition's point ($2, by partition), leftovers of an interrupted trim
     * included; none when there is nothing to delete.
     */
    firstStored: returning<DbFirstStored>(`
      SELECT e.sequence AS first FROM ${t.events} e
      WHERE e.stream = $1 AND e.sequence <= ($2::bigint[])[e.partition + 1]
      ORDER BY e.sequence LIMIT 1`),

    /**
     * Phase 2: one chunk, the stream's events in the sequence window ($2, $3] of
     * every partition, up to each partition's point ($4, by partition), with their
     * entries in the id index. One range of the key (stream, sequence, partition)
     * covers every partition; a window, not a LIMIT, so the next chunk seeks
     * straight to its start instead of stepping over the index entries of the rows
     * just deleted (dead until vacuumed).
     */
    deleteChunk: returning<DbCount>(`
      WITH gone AS (
        DELETE FROM ${t.events} e
        WHERE e.stream = $1 AND e.sequence > $2 AND e.sequence <= $3 AND e.sequence <= ($4::bigint[])[e.partition + 1]
          AND ${ASYNC_COMMIT}
        RETURNING 1
      )
      SELECT count(*) AS n FROM gone`),

    /** Purge: one chunk of a group's dead letters dead-lettered before $3 ($4: the chunk size). */
    purgeBefore: returning<DbCount>(purgeChunk(t, `AND dead_at < $3`, '$4')),
    /** Purge: one chunk of all a group's dead letters ($3: the chunk size). */
    purgeAll: returning<DbCount>(purgeChunk(t, '', '$3')),
  };
}

/** One chunk of a purge: up to `limit` dead letters of group ($1, $2) matching `bound`, deleted. */
function purgeChunk(t: TableNames, bound: string, limit: string): string {
  return `
      WITH doomed AS (
        SELECT partition, sequence FROM ${t.deadLetters}
        WHERE stream = $1 AND group_name = $2 ${bound}
        LIMIT ${limit} FOR UPDATE SKIP LOCKED
      ), gone AS (
        DELETE FROM ${t.deadLetters} d USING doomed x
        WHERE d.stream = $1 AND d.group_name = $2 AND d.partition = x.partition AND d.sequence = x.sequence
        RETURNING 1
      )
      SELECT count(*) AS n FROM gone`;
}
