// The claim statement of a group with key places (`ordering: 'key'`, keyConcurrency;
// docs/adr/049-flow-control.md): claim.ts's statement, with fresh events judged by
// their key, and the ones whose key has no place passed as waiting deliveries.
import type { TableNames } from '../../sql/names';
import { WAITING_DUE } from '../schema';
import { CANCELLED, cancelledOffer, expiredOnLast, leasedEvent, parkAt, storedMaxAttempts } from './claim';
import { EVENT_BODY_COLUMNS } from './log';

/**
 * Parameters: $1..$10 as claimPlan's (stream, group, partitions, now, limit, first
 * partition of the round-robin, partition count, consumer id, lease ms, lease id
 * base), $11 the key's places (core/flow.ts keyPlaces, from the group's row as
 * stored), $12 the most fresh events per partition this round may set waiting.
 *
 * Run after the partition locks and the hand-on (plans/flow.ts state), each its own
 * statement, in one transaction: this snapshot sees every delivery that holds a
 * place or waits (all are written under those locks, or by ends whose release rows
 * the next claim takes).
 *
 * Due deliveries are claimed as claimPlan claims them: a waiting one is never due
 * (WAITING_DUE). Fresh events are read from the cursor, each with its key: a keyed
 * event waits when its key has waiting deliveries already, or when the key's open
 * deliveries and the key's earlier fresh events of this scan fill its places. A
 * partition's scan ends once its share of the limit was admitted (the limit split
 * over the partitions with fresh events: the round-robin takes no more from each
 * when all of them have enough), or $12 set waiting; at most share + $12 events.
 * A partition with fewer fresh events than its share leaves the claim short of its
 * limit, and the fetch loop claims again at once (it does after any non-empty
 * answer). Reading $5 per partition instead made a claim of 10 over 4 partitions
 * read 104 events for the 10 it took. Admitted events are candidates as in claimPlan; the waiting
 * ones before the last fresh event the round-robin chose are written as waiting
 * deliveries (`waiting_key`, no attempt, due never), and when every candidate of
 * a partition was chosen, the rest of its scan too. The cursor passes both.
 * A leased or parked fresh event of a key holds a place (`key` set on its row).
 *
 * Cost over claimPlan: one primary-key read of each scanned event (its key), and
 * per distinct key two probes of the partial key indexes (schema.ts version 6).
 */
export function flowClaimPlan(t: TableNames): string {
  return `
      WITH served AS (
        SELECT g.partition, GREATEST(g.cursor, p.trimmed_to + 1) AS cursor, p.hwm, p.delayed_to,
               GREATEST(g.low, p.trimmed_to + 1) AS low,
               g.xmin = (SELECT v.xmin FROM ${t.groupPartitions} v
                          WHERE v.stream = g.stream AND v.group_name = g.group_name AND v.partition = g.partition) AS seen
        FROM ${t.groupPartitions} g
        JOIN ${t.partitions} p ON p.stream = g.stream AND p.partition = g.partition
        WHERE g.stream = $1 AND g.group_name = $2 AND g.partition = ANY($3::int[])
          AND (g.paused_to IS NULL OR g.paused_to <= $4)
        ORDER BY g.partition
        FOR UPDATE OF g
      ), due AS (
        SELECT d.partition, d.sequence, 0 AS fresh, d.row_id, d.dead, d.void
        FROM served s CROSS JOIN LATERAL (
          SELECT d.partition, d.sequence, d.ctid AS row_id, ${expiredOnLast(t, 'd')} AS dead,
                 ${cancelledOffer(t, 'd', 's.delayed_to')} AS void FROM ${t.deliveries} d
          WHERE d.stream = $1 AND d.group_name = $2 AND d.partition = s.partition
            AND d.sequence >= s.low AND d.due_at <= $4
          ORDER BY d.sequence LIMIT $5
          FOR UPDATE SKIP LOCKED
        ) d
      ), shares AS (
        SELECT s.*, ceil($5::numeric / GREATEST(1, count(*) FILTER (WHERE s.hwm >= s.cursor) OVER ()))::int AS share FROM served s
      ), scan AS (
        SELECT s.partition, s.share, q.sequence, e.key AS ekey, ${parkAt(t, 's.partition', 'q.sequence', 's.delayed_to')} AS park_at
        FROM shares s
        CROSS JOIN LATERAL generate_series(s.cursor, LEAST(s.hwm, s.cursor + s.share + $12 - 1)) AS q(sequence)
        -- One primary-key probe per sequence, by LATERAL (and LIMIT: without it the planner makes it a join again): joined as a table, the planner hashed every event of
        -- the partition (10,000 rows for a scan of 114) once its statistics were old.
        CROSS JOIN LATERAL (
          SELECT x.key FROM ${t.events} x WHERE x.stream = $1 AND x.sequence = q.sequence AND x.partition = s.partition
          LIMIT 1 -- keeps the subquery from being pulled up into a join
        ) e
      ), ranked AS (
        -- A cancelled event is passed as done whatever its key: it takes no place.
        SELECT c.*, CASE WHEN c.keyed THEN row_number() OVER (PARTITION BY c.partition, c.keyed, c.ekey ORDER BY c.sequence) END AS rk
        FROM (SELECT sc.*, sc.ekey IS NOT NULL AND sc.park_at IS DISTINCT FROM ${CANCELLED} AS keyed FROM scan sc) c
      ), facts AS (
        -- What the key holds, read once per key (at its first event of the scan): its open deliveries, and
        -- whether any waits. A scalar subquery per row and not a join to a table of keys: estimated at one row,
        -- that join was planned as a loop that ran both probes once per event and key (a second for 456 events).
        SELECT r.*,
               CASE WHEN r.rk = 1 THEN (SELECT count(*) FROM ${t.deliveries} o
                 WHERE o.stream = $1 AND o.group_name = $2 AND o.partition = r.partition AND o.key = r.ekey) END AS open1,
               CASE WHEN r.rk = 1 THEN (SELECT count(*) FROM (SELECT 1 FROM ${t.deliveries} w
                 WHERE w.stream = $1 AND w.group_name = $2 AND w.partition = r.partition AND w.waiting_key = r.ekey LIMIT 1) x) END AS waits1
        FROM ranked r
      ), judged AS (
        SELECT f.partition, f.share, f.sequence, f.ekey, f.park_at,
               COALESCE(f.keyed AND (max(f.waits1) OVER k > 0 OR max(f.open1) OVER k + f.rk > $11), false) AS wait
        FROM facts f
        WINDOW k AS (PARTITION BY f.partition, f.keyed, f.ekey)
      ), counted AS (
        SELECT j.*, count(*) FILTER (WHERE NOT j.wait) OVER w AS admitted, count(*) FILTER (WHERE j.wait) OVER w AS waits
        FROM judged j
        WINDOW w AS (PARTITION BY j.partition ORDER BY j.sequence ROWS UNBOUNDED PRECEDING)
      ), scanned AS (
        -- The events the scan looks at: each one while fewer than its share were admitted and $12 set waiting before it.
        SELECT * FROM counted WHERE admitted - (NOT wait)::int < share AND waits - wait::int < $12
      ), candidates AS (
        SELECT partition, sequence, fresh, row_id, NULL::bigint AS park_at, dead, void, NULL::text AS ekey FROM due
        UNION ALL
        SELECT partition, sequence, 1, NULL::tid, park_at, false, false, ekey FROM scanned WHERE NOT wait
      ), chosen AS (
        SELECT $1::text AS stream, $2::text AS group_name, partition, sequence, fresh, row_id, park_at, dead, void, ekey,
               row_number() OVER (ORDER BY turn, (partition - $6 + $7) % $7) AS pos
        FROM (
          SELECT c.*, row_number() OVER (PARTITION BY c.partition ORDER BY c.fresh, c.sequence) AS turn FROM candidates c
        ) r
        ORDER BY turn, (partition - $6 + $7) % $7
        LIMIT $5
      ), took AS (
        SELECT c.partition, max(c.sequence) FILTER (WHERE c.fresh = 1) AS last, count(*) AS n FROM chosen c GROUP BY c.partition
      ), offered AS (
        SELECT partition, count(*) AS n FROM candidates GROUP BY partition
      ), passing AS (
        -- Waiting events the cursor passes: those before the last fresh event chosen, or all of the scan's
        -- when the partition's every candidate was chosen.
        SELECT sc.partition, sc.sequence, sc.ekey FROM scanned sc
        LEFT JOIN took tk ON tk.partition = sc.partition
        LEFT JOIN offered o ON o.partition = sc.partition
        WHERE sc.wait AND (sc.sequence < tk.last OR COALESCE(tk.n, 0) = COALESCE(o.n, 0))
      ), waited AS (
        INSERT INTO ${t.deliveries} (stream, group_name, partition, sequence, state, attempt, due_at, waiting_key)
        SELECT $1, $2, partition, sequence, 'waiting', 0, ${WAITING_DUE}, ekey FROM passing
        ON CONFLICT DO NOTHING
        RETURNING partition, sequence, 0 AS attempt, NULL::text AS lease_id
      ), leased AS (
        UPDATE ${t.deliveries} d
        SET state = 'leased', attempt = d.attempt + 1, lease_id = $10::text || '.' || c.pos, consumer_id = $8,
            leased_at = $4, due_at = $4 + $9
        FROM chosen c
        WHERE c.fresh = 0 AND NOT c.dead AND NOT c.void AND d.ctid = c.row_id AND d.due_at <= $4
        RETURNING d.partition, d.sequence, d.attempt, d.lease_id
      ), voided AS (
        DELETE FROM ${t.deliveries} d USING chosen c
        WHERE c.fresh = 0 AND c.void AND d.ctid = c.row_id AND d.due_at <= $4
        RETURNING d.partition, d.sequence, 0 AS attempt, NULL::text AS lease_id
      ), passed AS (
        SELECT partition, sequence, 0 AS attempt, NULL::text AS lease_id FROM chosen WHERE fresh = 1 AND park_at = ${CANCELLED}
      ), expired AS (
        DELETE FROM ${t.deliveries} d USING chosen c
        WHERE c.fresh = 0 AND c.dead AND d.ctid = c.row_id AND d.due_at <= $4
        RETURNING d.partition, d.sequence, d.attempt, NULL::text AS lease_id
      ), buried AS (
        INSERT INTO ${t.deadLetters} (stream, group_name, partition, sequence, event_id, attempt, reason, dead_at)
        SELECT $1, $2, x.partition, x.sequence, e.id, x.attempt, 'lease expired on attempt ' || x.attempt || ' of ' || ${storedMaxAttempts(t)}, $4
        FROM expired x JOIN ${t.events} e ON e.stream = $1 AND e.partition = x.partition AND e.sequence = x.sequence
        ON CONFLICT (stream, group_name, partition, sequence)
        DO UPDATE SET event_id = EXCLUDED.event_id, attempt = EXCLUDED.attempt, reason = EXCLUDED.reason, dead_at = EXCLUDED.dead_at
        RETURNING partition, sequence, event_id
      ), opened AS (
        INSERT INTO ${t.deliveries} (stream, group_name, partition, sequence, state, attempt, lease_id, consumer_id, leased_at, due_at, key)
        SELECT $1, $2, partition, sequence, CASE WHEN park_at IS NULL THEN 'leased' ELSE 'available' END,
               CASE WHEN park_at IS NULL THEN 1 ELSE 0 END, CASE WHEN park_at IS NULL THEN $10::text || '.' || pos END,
               CASE WHEN park_at IS NULL THEN $8 END, CASE WHEN park_at IS NULL THEN $4 END, COALESCE(park_at, $4 + $9), ekey
        FROM chosen WHERE fresh = 1 AND park_at IS DISTINCT FROM ${CANCELLED}
        ON CONFLICT DO NOTHING
        RETURNING partition, sequence, attempt, lease_id
      ), lows AS (
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
        LEFT JOIN (
          SELECT partition, max(sequence) + 1 AS next
          FROM (SELECT partition, sequence FROM chosen WHERE fresh = 1 UNION ALL SELECT partition, sequence FROM passing) x
          GROUP BY partition
        ) m ON m.partition = l.partition
        WHERE g.stream = $1 AND g.group_name = $2 AND g.partition = l.partition
          AND (m.next IS NOT NULL OR (l.seen AND l.low > g.low))
      )
      SELECT l.attempt, l.lease_id, COALESCE(e.id, b.event_id) AS id, l.partition, l.sequence, ${EVENT_BODY_COLUMNS},
             CASE WHEN l.lease_id IS NULL AND b.event_id IS NOT NULL THEN ${storedMaxAttempts(t)} END AS max_attempts,
             c.pos IS NULL AS waited
      FROM (SELECT * FROM leased UNION ALL SELECT * FROM opened UNION ALL SELECT * FROM expired
            UNION ALL SELECT * FROM voided UNION ALL SELECT * FROM passed UNION ALL SELECT * FROM waited) l
      LEFT JOIN chosen c ON c.partition = l.partition AND c.sequence = l.sequence
      ${leasedEvent(t)}
      LEFT JOIN buried b ON b.partition = l.partition AND b.sequence = l.sequence AND l.lease_id IS NULL
      ORDER BY c.pos NULLS LAST`;
}
