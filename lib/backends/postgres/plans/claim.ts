// The claim statement of a fetch (deliveryPlans.fetch, fetchGuarded, fetchOrdered):
// which deliveries and fresh events a claim takes, parks, passes or dead-letters.
import type { TableNames } from '../../sql/names';
import type { DbEvent, DbNulls } from '../../sql/rows';
import { EVENT_BODY_COLUMNS } from './log';

/**
 * A delivery a claim leased (fetch, fetchOrdered): its event, attempt and new
 * lease id; a lease that expired on the last attempt, which it dead-lettered (no
 * lease id, the event's id and position, the attempt it expired on); or a delayed
 * event it parked (no lease id, no id: only the position). `max_attempts`, on a
 * dead-lettered one only, is the group's as stored, which the claim judged it by.
 */
export type DbClaimed = { attempt: number; max_attempts: number | null } & (
  | ({ lease_id: string } & DbEvent)
  | ({ lease_id: null; id: string | null } & Pick<DbEvent, 'partition' | 'sequence'> &
      DbNulls<Omit<DbEvent, 'id' | 'partition' | 'sequence'>>)
);

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
export const ASYNC_COMMIT = `set_config('synchronous_commit', 'off', true) IS NOT NULL`;

/**
 * The event of each leased row `l` of a claim's final SELECT (as `e`): one
 * primary-key probe per row, by LATERAL (and LIMIT: without it the subquery is
 * pulled up into a join). Joined as a table, the planner hashed every event of
 * the stream once its statistics predated the appends (2,000 rows read for a
 * claim of 10: a third of the statement).
 */
export function leasedEvent(t: TableNames): string {
  return `LEFT JOIN LATERAL (
        SELECT x.* FROM ${t.events} x
        WHERE x.stream = $1 AND x.sequence = l.sequence AND x.partition = l.partition AND l.lease_id IS NOT NULL
        LIMIT 1
      ) e ON true`;
}

/** The group's maxAttempts as stored, read once by the claim statement ($1 stream, $2 group). */
export function storedMaxAttempts(t: TableNames): string {
  return `(SELECT max_attempts FROM ${t.groups} WHERE stream = $1 AND name = $2)`;
}

/**
 * A fresh candidate's park time: its deliver_at when it is a delayed event not
 * yet due at $4, else NULL (lease it). The event is read only at or below the
 * partition's `delayed_to` (the last delayed event's sequence), so a claim over
 * events without a delay reads nothing more than before (ADR 028).
 */
export function parkAt(t: TableNames, partition: string, sequence: string, delayedTo: string): string {
  // FOR KEY SHARE: a locking read returns the event row's newest version, so a cancel (which holds the row
  // FOR UPDATE until it commits) committed after this statement's snapshot is seen all the same, and one
  // under way waits for this claim (then finds what it wrote): a claim never leases an event cancelled
  // before it read it. Only delayed events are returned, so only they are locked.
  return `CASE WHEN ${sequence} <= ${delayedTo} THEN (
          SELECT CASE WHEN x.cancelled_at IS NOT NULL THEN ${CANCELLED} WHEN x.deliver_at > $4 THEN x.deliver_at END
          FROM ${t.events} x
          WHERE x.stream = $1 AND x.sequence = ${sequence} AND x.partition = ${partition} AND x.deliver_at IS NOT NULL
          FOR KEY SHARE) END`;
}

/**
 * The park time {@link parkAt} gives a fresh event cancelled in every group
 * (cancelDelayed, docs/adr/048-skip-reschedule-cancel.md): the claim passes it as
 * done (the cursor moves past it, no delivery row is written). No real park time
 * is negative: parkAt gives only times after now.
 */
export const CANCELLED = '-1';

/**
 * Whether due delivery `d` offers an event cancelled in every group: one at attempt
 * 0 (re-opened by a replay or redrive since the cancel) of a delayed event, so at or
 * below the partition's delayed_to.
 * The claim ends it instead of leasing it. Every other delivery reads nothing more.
 */
export function cancelledOffer(t: TableNames, d: string, delayedTo: string): string {
  return `(${d}.attempt = 0 AND ${d}.sequence <= ${delayedTo} AND EXISTS (
            SELECT 1 FROM ${t.events} x
            WHERE x.stream = $1 AND x.sequence = ${d}.sequence AND x.partition = ${d}.partition AND x.cancelled_at IS NOT NULL))`;
}

/**
 * Whether delivery `d`, when due, is a lease that expired on the group's last
 * attempt (its maxAttempts as stored now, docs/adr/047-changing-a-group-in-place.md): the claim dead-letters it (reason
 * core/settle.ts leaseExpiredReason) instead of leasing it again, and it takes
 * its place of the limit like a parked event, so the caller claims again for it.
 */
export function expiredOnLast(t: TableNames, d: string): string {
  return `(${d}.state = 'leased' AND ${d}.attempt >= ${storedMaxAttempts(t)})`;
}

/**
 * The claim statement. Parameters: $1 stream, $2 group, $3 partitions (int[]),
 * $4 now, $5 limit, $6 first partition of the round-robin, $7 partition count,
 * $8 consumer id, $9 lease ms, $10 the lease id base: a new random id per call,
 * the lease of the n-th chosen row is `<base>.<n>` (unique as the base is; one
 * random id per claim instead of a gen_random_uuid() per row, which cost about
 * 1.2 µs of server time a row against 0.2 µs for the concatenation).
 *
 * A group partition row whose pause gate (`paused_to`) is after $4 offers nothing,
 * nor, when `gated`, one of a group with flow limits (`flow`, docs/adr/049-flow-control.md:
 * only flow.ts claims those, with `gated` false)
 * (docs/adr/046-pausing-a-group.md).
 *
 * Candidates per partition, in sequence order: deliveries that are due (nacked and
 * past their delay, or whose lease expired), locked with SKIP LOCKED so that two
 * fetchers never wait on, or both take, the same row; then fresh events from the
 * cursor. Both only above the trim point: the cursor in effect is
 * GREATEST(cursor, trimmed_to + 1), and a delivery at or below trimmed_to (a group
 * that started while a trim ran) is never claimed, so no claim leases an event a
 * trim is deleting. (rheo_deliveries holds no dead letters: nothing here reads one.)
 * A fresh delayed event before its deliver_at is chosen like any fresh event (it
 * takes a place of the limit, and the cursor passes it) but parked, not leased:
 * its delivery is 'available' at attempt 0, due at deliver_at, and it comes back
 * without a lease id (the caller claims again for the places parked events took).
 *
 * Deliveries are read from the group partition's `low` on: a bound at or below
 * every delivery in flight there. Acked deliveries leave dead index entries below
 * the live ones until the table is vacuumed; a scan from the bottom would step
 * over every one of them (a claim took 30 ms after 700k acks with autovacuum
 * off), a scan from `low` only over those acked since the last claim. Each claim
 * raises `low` to its first delivery in flight (or the cursor), which its own
 * snapshot shows exactly only when no other transaction changed the row since
 * that snapshot was taken: everything that adds a delivery below the cursor
 * (reopen, redrive, replay, reset) holds the row's lock and lowers `low` in the
 * same transaction, so a claim that waited for that lock sees a newer row (its
 * xmin differs from the snapshot's: `seen` is false) and leaves `low` alone. `ordered` groups offer only the partition's next unsettled event, and
 * only while no live lease is held in that partition (the caller holds the group's
 * partition locks, taken in an earlier statement, so this statement's snapshot
 * already sees every committed claim). Candidates are then taken round-robin
 * across partitions, starting from a rotating partition so none starves.
 *
 * Fresh deliveries: no fresh event has a delivery row (only a claim moves the
 * cursor up, under the group partition row's lock; reopen and redrive insert
 * below the cursor; replay, reset and trim move it only together with deleting
 * the deliveries above it). So `fetch` inserts them without ON CONFLICT: the
 * arbiter's speculative insertion (an extra index probe, and a confirmation
 * record in the WAL, per row) was about a third of the insert. Should a row be
 * there all the same, the insert fails whole (nothing written) and the backend
 * claims again with `fetchGuarded`, whose ON CONFLICT DO NOTHING leaves that
 * event to its existing row (claimed when due), as every claim did before.
 * Ordered claims keep the guard (one event per partition: nothing to save).
 *
 * The update of due deliveries finds them by the ctid the candidate scan locked,
 * not by a join: with a table whose statistics predate a bulk replay or redrive
 * (estimated at one row), the planner once scanned every delivery of the group
 * per chosen row (7 s for a claim of 1,000 out of 40,000). By ctid each chosen row
 * is one tuple fetch, whatever the statistics say.
 */
export function claimPlan(t: TableNames, mode: 'any' | 'ordered', guarded: boolean, gated = true): string {
  const served = `
      served AS (
        SELECT g.partition, GREATEST(g.cursor, p.trimmed_to + 1) AS cursor, p.hwm, p.delayed_to,
               GREATEST(g.low, p.trimmed_to + 1) AS low,
               -- Whether the row this statement locked is the one its snapshot saw: see the low bound above.
               g.xmin = (SELECT v.xmin FROM ${t.groupPartitions} v
                          WHERE v.stream = g.stream AND v.group_name = g.group_name AND v.partition = g.partition) AS seen
        FROM ${t.groupPartitions} g
        JOIN ${t.partitions} p ON p.stream = g.stream AND p.partition = g.partition
        WHERE g.stream = $1 AND g.group_name = $2 AND g.partition = ANY($3::int[]) ${mode === 'any' ? `AND ${ASYNC_COMMIT}` : ''}
          -- The pause gate (docs/adr/046-pausing-a-group.md): re-checked on the row's newest version once
          -- FOR UPDATE got its lock, so a pause that committed while this claim waited for it holds at once.
          AND (g.paused_to IS NULL OR g.paused_to <= $4)
          -- A group with flow limits is claimed by flow.ts only: a process whose copy of the group has none (they
          -- were set in place elsewhere) claims nothing here and reads the group again (delivery.ts).
          ${gated ? 'AND NOT g.flow' : ''}
        ORDER BY g.partition
        ${mode === 'any' ? 'FOR UPDATE OF g' : ''}
      )`;
  const candidates =
    mode === 'any'
      ? `
      due AS (
        SELECT d.partition, d.sequence, 0 AS fresh, d.row_id, d.dead, d.void
        FROM served s CROSS JOIN LATERAL (
          SELECT d.partition, d.sequence, d.ctid AS row_id, ${expiredOnLast(t, 'd')} AS dead,
                 ${cancelledOffer(t, 'd', 's.delayed_to')} AS void FROM ${t.deliveries} d
          WHERE d.stream = $1 AND d.group_name = $2 AND d.partition = s.partition
            AND d.sequence >= s.low AND d.due_at <= $4
          ORDER BY d.sequence LIMIT $5
          FOR UPDATE SKIP LOCKED
        ) d
      ), candidates AS (
        SELECT partition, sequence, fresh, row_id, NULL::bigint AS park_at, dead, void FROM due
        UNION ALL
        SELECT s.partition, q.sequence, 1, NULL::tid, ${parkAt(t, 's.partition', 'q.sequence', 's.delayed_to')}, false, false FROM served s
        CROSS JOIN LATERAL generate_series(s.cursor, LEAST(s.hwm, s.cursor + $5 - 1)) AS q(sequence)
      )`
      : `
      heads AS (
        SELECT s.partition, s.cursor, s.hwm, s.delayed_to, o.sequence AS open_seq, o.due_at, o.state, o.row_id, o.dead, o.void,
               EXISTS (SELECT 1 FROM ${t.deliveries} l
                        WHERE l.stream = $1 AND l.group_name = $2 AND l.partition = s.partition
                          AND l.sequence >= s.low AND l.state = 'leased' AND l.due_at > $4) AS busy
        FROM served s LEFT JOIN LATERAL (
          SELECT d.sequence, d.due_at, d.state, d.ctid AS row_id, ${expiredOnLast(t, 'd')} AS dead,
                 ${cancelledOffer(t, 'd', 's.delayed_to')} AS void FROM ${t.deliveries} d
          WHERE d.stream = $1 AND d.group_name = $2 AND d.partition = s.partition AND d.sequence >= s.low
          ORDER BY d.sequence LIMIT 1
        ) o ON true
      ), candidates AS (
        SELECT partition, open_seq AS sequence, 0 AS fresh, row_id, NULL::bigint AS park_at, dead, void FROM heads
        WHERE NOT busy AND open_seq IS NOT NULL AND due_at <= $4
        UNION ALL
        SELECT h.partition, h.cursor, 1, NULL::tid, ${parkAt(t, 'h.partition', 'h.cursor', 'h.delayed_to')}, false, false FROM heads h
        WHERE NOT h.busy AND h.open_seq IS NULL AND h.cursor <= h.hwm
      )`;
  return `
      WITH ${served},${candidates},
      chosen AS (
        SELECT $1::text AS stream, $2::text AS group_name, partition, sequence, fresh, row_id, park_at, dead, void,
               row_number() OVER (ORDER BY turn, (partition - $6 + $7) % $7) AS pos
        FROM (
          SELECT c.*, row_number() OVER (PARTITION BY c.partition ORDER BY c.fresh, c.sequence) AS turn FROM candidates c
        ) r
        ORDER BY turn, (partition - $6 + $7) % $7
        LIMIT $5
      ), leased AS (
        UPDATE ${t.deliveries} d
        SET state = 'leased', attempt = d.attempt + 1, lease_id = $10::text || '.' || c.pos, consumer_id = $8,
            leased_at = $4, due_at = $4 + $9
        FROM chosen c
        WHERE c.fresh = 0 AND NOT c.dead AND NOT c.void AND d.ctid = c.row_id AND d.due_at <= $4
        RETURNING d.partition, d.sequence, d.attempt, d.lease_id
      ), voided AS (
        -- An offer of an event cancelled in every group (cancelDelayed, ADR 048): ended as an ack ends it, never leased.
        DELETE FROM ${t.deliveries} d USING chosen c
        WHERE c.fresh = 0 AND c.void AND d.ctid = c.row_id AND d.due_at <= $4
        RETURNING d.partition, d.sequence, 0 AS attempt, NULL::text AS lease_id
      ), passed AS (
        -- A fresh event cancelled in every group: the cursor passes it as done, and no row is written for it.
        SELECT partition, sequence, 0 AS attempt, NULL::text AS lease_id FROM chosen WHERE fresh = 1 AND park_at = ${CANCELLED}
      ), expired AS (
        -- A lease that expired on the group's last attempt: dead-lettered, not leased again (ADR 035).
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
        -- A fresh event is leased, or, when it is a delayed event before its time, parked: available at
        -- attempt 0, due at its deliver_at (no lease id: the final SELECT returns it without its event).
        INSERT INTO ${t.deliveries} (stream, group_name, partition, sequence, state, attempt, lease_id, consumer_id, leased_at, due_at)
        SELECT $1, $2, partition, sequence, CASE WHEN park_at IS NULL THEN 'leased' ELSE 'available' END,
               CASE WHEN park_at IS NULL THEN 1 ELSE 0 END, CASE WHEN park_at IS NULL THEN $10::text || '.' || pos END,
               CASE WHEN park_at IS NULL THEN $8 END, CASE WHEN park_at IS NULL THEN $4 END, COALESCE(park_at, $4 + $9)
        FROM chosen WHERE fresh = 1 AND park_at IS DISTINCT FROM ${CANCELLED}${
          // See "Fresh deliveries" above: the fast claim inserts without the arbiter; the guarded one keeps it.
          guarded ? '\n        ON CONFLICT DO NOTHING' : ''
        }
        RETURNING partition, sequence, attempt, lease_id
      ), lows AS (
        -- The first delivery in flight from the bound on (as this statement's snapshot has them: the
        -- leases it takes are among them, its fresh ones are at or above the cursor).
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
        LEFT JOIN (SELECT partition, max(sequence) + 1 AS next FROM chosen WHERE fresh = 1 GROUP BY partition) m
          ON m.partition = l.partition
        WHERE g.stream = $1 AND g.group_name = $2 AND g.partition = l.partition
          AND (m.next IS NOT NULL OR (l.seen AND l.low > g.low))
      )
      -- A row's position comes from the delivery; its id from its event, or, for a lease that expired on the
      -- last attempt, from the dead letter this claim filed (the caller reports it: Backend.fetch, FetchedLeases).
      SELECT l.attempt, l.lease_id, COALESCE(e.id, b.event_id) AS id, l.partition, l.sequence, ${EVENT_BODY_COLUMNS},
             CASE WHEN l.lease_id IS NULL AND b.event_id IS NOT NULL THEN ${storedMaxAttempts(t)} END AS max_attempts
      FROM (SELECT * FROM leased UNION ALL SELECT * FROM opened UNION ALL SELECT * FROM expired
            UNION ALL SELECT * FROM voided UNION ALL SELECT * FROM passed) l
      JOIN chosen c ON c.partition = l.partition AND c.sequence = l.sequence
      ${leasedEvent(t)}
      LEFT JOIN buried b ON b.partition = l.partition AND b.sequence = l.sequence AND l.lease_id IS NULL
      ORDER BY c.pos`;
}
