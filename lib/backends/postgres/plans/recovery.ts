// Recovery's statements: replay, reset and redrive, the wake-up they send, and
// the inspection of a group (its state per partition, its dead letters).
import type { TableNames } from '../../sql/names';
import type { DbCount, DbDeadLetter, DbInt, DbPartitionState, DbPosition } from '../../sql/rows';
import { returning } from '../../sql/statement';
import { EVENT_COLUMNS } from './log';

/** How many dead letters a redrive re-opened (redrive). */
export interface DbRedriven {
  n: DbInt;
  woke: DbInt;
}

export function recoveryPlans(t: TableNames) {
  return {
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
      SELECT g.partition, p.hwm, c.cursor, COALESCE(o.waiting_key, 0) AS waiting_key,
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
               count(*) FILTER (WHERE d.state = 'leased' AND d.due_at > $3) AS live,
               count(*) FILTER (WHERE d.state = 'waiting') AS waiting_key
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
