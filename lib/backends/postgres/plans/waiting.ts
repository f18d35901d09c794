// The waiting section's statements (../waiting.ts): skip, reschedule, cancelDelayed
// (docs/adr/048-skip-reschedule-cancel.md). Each runs in one transaction: the first
// statement locks the deliveries it judges (FOR UPDATE, one primary-key probe per
// id), the backend decides per id, and the second changes the locked rows by key,
// so a claim (SKIP LOCKED) or a settle never slips in between.
import type { TableNames } from '../../sql/names';
import type { DbInt } from '../../sql/rows';
import { returning } from '../../sql/statement';

/**
 * Where one group stands on one event: `i` the id's position in the call; no
 * `partition` when the stream has no such event (or it was trimmed); the group
 * partition's cursor in effect; the delivery's state and due_at (a lease's expiry),
 * null when the group has none.
 */
export interface DbWaiting {
  i: DbInt;
  group_name: string | null;
  partition: number | null;
  sequence: DbInt | null;
  deliver_at: DbInt | null;
  cancelled_at: DbInt | null;
  cursor: DbInt | null;
  state: 'available' | 'leased' | 'waiting' | null;
  due_at: DbInt | null;
}

/** A group's skips as stored (groupInfo). */
export interface DbSkips {
  skipped: DbInt;
  skip_reason: string | null;
  skipped_at: DbInt | null;
}

export function waitingPlans(t: TableNames) {
  /** The group's delivery of event `e` in group partition `g`, locked. */
  const delivery = `LEFT JOIN LATERAL (
          SELECT d.state, d.due_at FROM ${t.deliveries} d
          WHERE d.stream = e.stream AND d.group_name = g.group_name AND d.partition = e.partition AND d.sequence = e.sequence
          FOR UPDATE
        ) d ON true`;
  return {
    /** $1 stream, $2 group, $3 ids: per id, in order, where the group stands on it. */
    judge: returning<DbWaiting>(`
      SELECT op.i, g.group_name, CASE WHEN e.sequence > p.trimmed_to THEN e.partition END AS partition, e.sequence, e.deliver_at, e.cancelled_at,
             GREATEST(g.cursor, p.trimmed_to + 1) AS cursor, d.state, d.due_at
      FROM unnest($3::text[]) WITH ORDINALITY AS op(id, i)
      LEFT JOIN ${t.events} e ON e.stream = $1 AND e.id = op.id
      LEFT JOIN ${t.partitions} p ON p.stream = e.stream AND p.partition = e.partition
      LEFT JOIN ${t.groupPartitions} g ON g.stream = e.stream AND g.group_name = $2 AND g.partition = e.partition
      ${delivery}
      ORDER BY op.i`),
    /** $1 stream, $2 event id: the event, locked (concurrent cancels of it take turns). */
    eventForCancel: returning<Pick<DbWaiting, 'partition' | 'sequence' | 'deliver_at' | 'cancelled_at'>>(`
      SELECT e.partition, e.sequence, e.deliver_at, e.cancelled_at FROM ${t.events} e
      JOIN ${t.partitions} p ON p.stream = e.stream AND p.partition = e.partition
      WHERE e.stream = $1 AND e.id = $2 AND e.sequence > p.trimmed_to
      FOR UPDATE OF e`),
    /** $1 stream, $2 event id: where every group of the stream stands on it, by group name. */
    judgeAll: returning<DbWaiting>(`
      SELECT 0 AS i, g.group_name, e.partition, e.sequence, e.deliver_at, e.cancelled_at,
             GREATEST(g.cursor, p.trimmed_to + 1) AS cursor, d.state, d.due_at
      FROM ${t.events} e
      JOIN ${t.partitions} p ON p.stream = e.stream AND p.partition = e.partition
      JOIN ${t.groupPartitions} g ON g.stream = e.stream AND g.partition = e.partition
      ${delivery}
      WHERE e.stream = $1 AND e.id = $2
      ORDER BY g.group_name`),
    /**
     * End waiting deliveries as an ack does (their rows deleted: the cursor says they
     * were offered) and count them on the group's row. $1 stream, $2 group, $3
     * partitions, $4 sequences, $5 reason, $6 now, $7 the NOTIFY channel: the next
     * event of an ordered partition is free, so waiting consumers look again.
     */
    skip: returning<{ n: DbInt }>(`
      WITH gone AS (
        DELETE FROM ${t.deliveries} d USING unnest($3::int[], $4::bigint[]) AS x(partition, sequence)
        WHERE d.stream = $1 AND d.group_name = $2 AND d.partition = x.partition AND d.sequence = x.sequence
        RETURNING 1
      ), counted AS (
        UPDATE ${t.groups} SET skipped = skipped + (SELECT count(*) FROM gone), skip_reason = $5, skipped_at = $6
        WHERE stream = $1 AND name = $2 AND EXISTS (SELECT 1 FROM gone)
        RETURNING 1
      ), wake AS (
        SELECT pg_notify($7, $1) WHERE EXISTS (SELECT 1 FROM gone)
      )
      SELECT (SELECT count(*) FROM gone) AS n, (SELECT count(*) FROM counted) AS counted, (SELECT count(*) FROM wake) AS woke`),
    /**
     * Make waiting deliveries due at $5, their attempt kept. $1 stream, $2 group, $3
     * partitions, $4 sequences, $6 now, $7 the NOTIFY channel (when due already).
     */
    reschedule: returning<{ n: DbInt }>(`
      WITH moved AS (
        UPDATE ${t.deliveries} d SET state = 'available', lease_id = NULL, due_at = $5
        FROM unnest($3::int[], $4::bigint[]) AS x(partition, sequence)
        WHERE d.stream = $1 AND d.group_name = $2 AND d.partition = x.partition AND d.sequence = x.sequence
        RETURNING 1
      ), wake AS (
        SELECT pg_notify($7, $1) WHERE $5 <= $6 AND EXISTS (SELECT 1 FROM moved)
      )
      SELECT (SELECT count(*) FROM moved) AS n, (SELECT count(*) FROM wake) AS woke`),
    /**
     * Cancel a delayed event in every group: $1 stream, $3 partition, $4 sequence, $5
     * now; the groups in $2 (names) have their waiting delivery deleted (those with
     * one) and a skip counted, reason $6; $7 the NOTIFY channel.
     */
    cancel: returning<{ n: DbInt }>(`
      WITH marked AS (
        UPDATE ${t.events} SET cancelled_at = $5 WHERE stream = $1 AND partition = $3 AND sequence = $4
        RETURNING 1
      ), gone AS (
        DELETE FROM ${t.deliveries} d
        WHERE d.stream = $1 AND d.group_name = ANY($2::text[]) AND d.partition = $3 AND d.sequence = $4
        RETURNING 1
      ), counted AS (
        UPDATE ${t.groups} SET skipped = skipped + 1, skip_reason = $6, skipped_at = $5
        WHERE stream = $1 AND name = ANY($2::text[])
        RETURNING 1
      ), wake AS (
        SELECT pg_notify($7, $1) WHERE cardinality($2::text[]) > 0
      )
      SELECT (SELECT count(*) FROM marked) AS n, (SELECT count(*) FROM gone) AS gone, (SELECT count(*) FROM counted) AS counted,
             (SELECT count(*) FROM wake) AS woke`),
    skips: returning<DbSkips>(`SELECT skipped, skip_reason, skipped_at FROM ${t.groups} WHERE stream = $1 AND name = $2`),
  };
}
