// Delivery's statements: the claims of a fetch, and the fenced settle, release,
// renew and transactional ack.
import type { TableNames } from '../../sql/names';
import type { DbEvent, DbInt, DbNulls } from '../../sql/rows';
import { returning } from '../../sql/statement';
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

/** An op of a batch whose lease held (renew; settle and release: {@link DbSettled}): its index `i`, and whether its receipt matched. */
export interface DbFenced {
  i: number;
  receipt_ok: boolean;
  /**
   * The statement changed the row. False with `receipt_ok` when a change of the
   * same row committed while the statement waited for its lock (see heldBy): the
   * lease still holds, and the caller runs the op again.
   */
  applied: boolean;
}

/** A settled or released op: {@link DbFenced}, and how many streams were notified (settle, release). */
export interface DbSettled extends DbFenced {
  woke: DbInt;
}

/**
 * A settled op ({@link DbSettled}) with what the statement wrote, for an op whose
 * receipt matched: `outcome` (`dead` for a reject and for a nack on the last
 * attempt), for a nack the group's stored `max_attempts` that decided it, and
 * for a retry `retry_ms`, the delay it applied. Null otherwise.
 */
export interface DbSettledOp extends DbSettled {
  outcome: 'ack' | 'dead' | 'retry' | null;
  max_attempts: DbInt | null;
  retry_ms: DbInt | null;
}

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
const ASYNC_COMMIT = `set_config('synchronous_commit', 'off', true) IS NOT NULL`;

/**
 * The delivery an op names, locked: one primary-key probe per op (a LATERAL
 * subquery), and its ctid (`row_id`), by which the same statement then changes
 * it. Written so on purpose: joined as tables, a small, freshly vacuumed
 * rheo_deliveries is estimated at one row, and the generic plan a prepared
 * statement keeps would pair every op with every row (100 ops took 10 ms) or scan
 * the table, once it has grown. A probe per op, and a change by ctid per op, cost
 * the same whatever the statistics said when the statement was planned.
 *
 * One race it cannot close by itself: when another transaction changed the row
 * (a renewal of the same lease) and commits while this statement waits for the
 * lock, FOR UPDATE hands back the row's newest version, whose ctid the
 * statement's own snapshot does not see; the change by ctid then finds nothing.
 * So each statement also says which ops it really changed (`applied`), and the
 * backend runs the others again: the next statement's snapshot sees the row.
 */
function heldBy(t: TableNames, op: string, fence: string): string {
  return `CROSS JOIN LATERAL (
          SELECT d.lease_id, d.attempt, d.ctid AS row_id FROM ${t.deliveries} d
          WHERE d.stream = ${op}.stream AND d.group_name = ${op}.group_name AND d.partition = ${op}.partition
            AND d.sequence = ${op}.sequence AND d.lease_id = ${op}.lease_id AND d.state = 'leased' ${fence}
          FOR UPDATE
        ) d`;
}

export function deliveryPlans(t: TableNames) {
  return {
    /**
     * Lock the group's partition rows, in partition order. A fetch holds them to
     * its end: fresh events are handed out by moving the cursor, so two fetchers
     * must not read the same cursor. (Settles never take them.) `paused_to`, the
     * pause gate (pause.ts), tells an ordered claim that came back empty whether
     * the pause was why, at no cost.
     */
    lockGroupPartitions: returning<{ partition: number; paused_to: DbInt | null }>(`
      SELECT partition, paused_to FROM ${t.groupPartitions}
      WHERE stream = $1 AND group_name = $2 AND partition = ANY($3::int[])
      ORDER BY partition FOR UPDATE`),

    fetch: returning<DbClaimed>(claimPlan(t, 'any', false)),
    /** The claim as it was before fetch's fast insert: what the backend runs when that insert meets a row. */
    fetchGuarded: returning<DbClaimed>(claimPlan(t, 'any', true)),
    fetchOrdered: returning<DbClaimed>(claimPlan(t, 'ordered', true)),

    /**
     * Settle a batch in one statement. Fencing: an op applies only when its lease
     * is still live (same lease id, leased, not expired at $1) and its receipt
     * matches; the caller reports the others as stale_lease / receipt_mismatch.
     * 'ack' deletes the delivery (acked events need no row: the cursor says they
     * were offered); 'reject' dead-letters: the delivery moves to rheo_dead_letters,
     * in this statement (a dead letter whose event was trimmed since its claim
     * leaves no row: only a group that lost a race with a trim holds such a lease);
     * 'nack' dead-letters once the STORED attempt reached the group's STORED
     * max_attempts, else makes the event due again after its explicit delay or the
     * group's stored backoff at the stored attempt (backoffAt). $12 the NOTIFY
     * channel, $13 per op whether its group orders by partition.
     */
    settle: returning<DbSettledOp>(`
      WITH op AS (
        SELECT * FROM unnest($2::int[], $3::text[], $4::text[], $5::int[], $6::bigint[], $7::text[], $8::text[],
                             $9::text[], $10::bigint[], $11::text[], $13::bool[])
          AS op(i, stream, group_name, partition, sequence, lease_id, receipt, action, delay_ms, reason, ordered)
        WHERE ${ASYNC_COMMIT}
      ), held AS (
        SELECT op.*, op.receipt = d.lease_id AS receipt_ok, d.attempt AS stored_attempt, d.row_id
        FROM op ${heldBy(t, 'op', 'AND d.due_at > $1')}
      ), decided AS (
        -- The group's settings as stored now decide (docs/adr/047-changing-a-group-in-place.md): its row, one
        -- primary-key probe per op that is not an ack, and never a process's copy of it.
        SELECT h.*, s.max_attempts,
               CASE WHEN h.action = 'ack' THEN 'ack'
                    WHEN h.action = 'reject' OR h.stored_attempt >= s.max_attempts THEN 'dead'
                    ELSE 'retry' END AS outcome,
               COALESCE(h.delay_ms, ${backoffAt('s', 'h.stored_attempt')}, 0) AS retry_ms
        FROM held h
        LEFT JOIN LATERAL (
          SELECT g.max_attempts, g.retry_initial_ms, g.retry_factor, g.retry_max_ms FROM ${t.groups} g
          WHERE h.action = 'nack' AND g.stream = h.stream AND g.name = h.group_name
        ) s ON true
        WHERE h.receipt_ok
      ), finished AS (
        DELETE FROM ${t.deliveries} d USING decided h
        WHERE h.outcome IN ('ack', 'dead') AND d.ctid = h.row_id
        RETURNING h.i, h.outcome, d.stream, d.group_name, d.partition, d.sequence, d.attempt, h.reason
      ), retried AS (
        UPDATE ${t.deliveries} d SET state = 'available', lease_id = NULL, due_at = $1 + h.retry_ms, reason = h.reason
        FROM decided h
        WHERE h.outcome = 'retry' AND d.ctid = h.row_id
        RETURNING h.i, d.stream
      ), buried AS (
        -- The event's id travels with the dead letter: it outlives a trimmed event.
        INSERT INTO ${t.deadLetters} (stream, group_name, partition, sequence, event_id, attempt, reason, dead_at)
        SELECT f.stream, f.group_name, f.partition, f.sequence, e.id, f.attempt, COALESCE(f.reason, ''), $1
        FROM finished f JOIN ${t.events} e ON e.stream = f.stream AND e.partition = f.partition AND e.sequence = f.sequence
        WHERE f.outcome = 'dead'
        ON CONFLICT (stream, group_name, partition, sequence)
        DO UPDATE SET event_id = EXCLUDED.event_id, attempt = EXCLUDED.attempt, reason = EXCLUDED.reason, dead_at = EXCLUDED.dead_at
      ), wake AS (
        -- A retry is due again; in a partition-ordered group any settle frees the next event.
        SELECT pg_notify($12, s.stream) FROM (SELECT stream FROM retried UNION SELECT stream FROM decided WHERE ordered) s
      )
      -- What was written rides back with each op (the store's answer to report by): no statement more.
      SELECT h.i, h.receipt_ok, h.i IN (SELECT i FROM finished UNION ALL SELECT i FROM retried) AS applied,
             (SELECT count(*) FROM wake) AS woke,
             x.outcome, x.max_attempts, CASE WHEN x.outcome = 'retry' THEN x.retry_ms END AS retry_ms
      FROM held h LEFT JOIN decided x ON x.i = h.i`),

    /**
     * Give leases back unhandled, in one statement: each delivery becomes due at $1
     * (claimable at once) and its attempt goes back by the one its fetch counted,
     * so the next delivery carries the same attempt. Fenced by lease id alone, not
     * by expiry: an expired lease that no fetch re-claimed still carries our lease
     * id; a claim since gave it a new one (and a settle cleared it), so those match
     * no row and the caller reports them stale_lease. An ordered group's partition
     * head is then free, since it has no live lease. Wakes waiting consumers like a
     * nack with no delay. Commits asynchronously like a settle: a lost release only
     * leaves the lease to expire (a redelivery, one attempt later).
     */
    release: returning<DbSettled>(`
      WITH op AS (
        SELECT * FROM unnest($2::int[], $3::text[], $4::text[], $5::int[], $6::bigint[], $7::text[], $8::text[])
          AS op(i, stream, group_name, partition, sequence, lease_id, receipt)
        WHERE ${ASYNC_COMMIT}
      ), held AS (
        SELECT op.*, op.receipt = d.lease_id AS receipt_ok, d.row_id
        FROM op ${heldBy(t, 'op', '')}
      ), released AS (
        UPDATE ${t.deliveries} d SET state = 'available', lease_id = NULL, attempt = GREATEST(d.attempt - 1, 0), due_at = $1
        FROM held h
        WHERE h.receipt_ok AND d.ctid = h.row_id
        RETURNING h.i, d.stream
      ), wake AS (
        SELECT pg_notify($9, s.stream) FROM (SELECT DISTINCT stream FROM released) s
      )
      SELECT h.i, h.receipt_ok, h.i IN (SELECT i FROM released) AS applied, (SELECT count(*) FROM wake) AS woke FROM held h`),

    /**
     * The ack of a transactional consumer, run inside the handler's own
     * transaction (ackInTransaction): the delivery is deleted only while the
     * lease is live ($6 the lease id, leased, not expired at $1) and the receipt
     * $7 matches, and the deletion holds its row lock until that transaction
     * ends, so no claim (SKIP LOCKED) or settle can slip in between the fence and
     * the commit. One plain DELETE by primary key, not heldBy's lock-then-ctid:
     * if a renewal of the same lease commits while this waits for its row lock,
     * the DELETE re-checks the renewed row and deletes it, where a ctid taken
     * from the locking subquery names a row version this statement's snapshot
     * cannot see (it would answer "held" and delete nothing). `live` (the
     * statement's snapshot) tells a foreign receipt from a stale lease when
     * nothing was deleted. The NOTIFY ($8, for a partition-ordered group: $9) is
     * delivered at the commit, like the ack. Unlike settle it leaves
     * synchronous_commit alone: the transaction is the caller's, and so is its
     * durability.
     */
    ackInTransaction: returning<{ acked: number; live: boolean; woke: DbInt }>(`
      WITH acked AS (
        DELETE FROM ${t.deliveries} d
        WHERE d.stream = $2 AND d.group_name = $3 AND d.partition = $4 AND d.sequence = $5
          AND d.lease_id = $6 AND d.state = 'leased' AND d.due_at > $1 AND $7::text = $6::text
        RETURNING d.stream
      ), wake AS (
        SELECT pg_notify($8, a.stream) FROM acked a WHERE $9::bool
      )
      SELECT (SELECT count(*) FROM acked)::int AS acked,
             EXISTS (SELECT 1 FROM ${t.deliveries} d
                     WHERE d.stream = $2 AND d.group_name = $3 AND d.partition = $4 AND d.sequence = $5
                       AND d.lease_id = $6 AND d.state = 'leased' AND d.due_at > $1) AS live,
             (SELECT count(*) FROM wake) AS woke`),

    /** Extend live leases to $2; same fencing as settle. */
    renew: returning<DbFenced>(`
      WITH op AS (
        SELECT * FROM unnest($3::int[], $4::text[], $5::text[], $6::int[], $7::bigint[], $8::text[], $9::text[])
          AS op(i, stream, group_name, partition, sequence, lease_id, receipt)
      ), live AS (
        SELECT op.*, op.receipt = d.lease_id AS receipt_ok, d.row_id
        FROM op ${heldBy(t, 'op', 'AND d.due_at > $1')}
      ), renewed AS (
        UPDATE ${t.deliveries} d SET due_at = $2
        FROM live l
        WHERE l.receipt_ok AND d.ctid = l.row_id
        RETURNING l.i
      )
      SELECT i, receipt_ok, i IN (SELECT i FROM renewed) AS applied FROM live`),
  };
}

/**
 * Core's backoff (core/backoff.ts `backoffDelay`: `initialMs * factor^(step - 1)`,
 * rounded half up, capped at `maxMs`) over a group row `g`'s stored retry columns,
 * at `step`: a settle reads the settings as stored when it decides, so it cannot
 * take them from the process. The exponent is capped where `factor^step` would
 * leave double precision (an error in SQL, Infinity in JavaScript); below it the
 * value is far above any `maxMs`, so the cap answers alike.
 */
function backoffAt(g: string, step: string): string {
  const exponent = `LEAST(GREATEST(${step}, 1) - 1, floor(290 / log(GREATEST(${g}.retry_factor, 1.000001))))`;
  return `LEAST(${g}.retry_max_ms, floor(${g}.retry_initial_ms * power(${g}.retry_factor, ${exponent}) + 0.5))::bigint`;
}

/** The group's maxAttempts as stored, read once by the claim statement ($1 stream, $2 group). */
function storedMaxAttempts(t: TableNames): string {
  return `(SELECT max_attempts FROM ${t.groups} WHERE stream = $1 AND name = $2)`;
}

/**
 * A fresh candidate's park time: its deliver_at when it is a delayed event not
 * yet due at $4, else NULL (lease it). The event is read only at or below the
 * partition's `delayed_to` (the last delayed event's sequence), so a claim over
 * events without a delay reads nothing more than before (ADR 028).
 */
function parkAt(t: TableNames, partition: string, sequence: string, delayedTo: string): string {
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
const CANCELLED = '-1';

/**
 * Whether due delivery `d` offers an event cancelled in every group: one at attempt
 * 0 (re-opened by a replay or redrive since the cancel) of a delayed event, so at or
 * below the partition's delayed_to.
 * The claim ends it instead of leasing it. Every other delivery reads nothing more.
 */
function cancelledOffer(t: TableNames, d: string, delayedTo: string): string {
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
function expiredOnLast(t: TableNames, d: string): string {
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
 * A group partition row whose pause gate (`paused_to`) is after $4 offers nothing
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
function claimPlan(t: TableNames, mode: 'any' | 'ordered', guarded: boolean): string {
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
      LEFT JOIN ${t.events} e ON e.stream = $1 AND e.partition = l.partition AND e.sequence = l.sequence AND l.lease_id IS NOT NULL
      LEFT JOIN buried b ON b.partition = l.partition AND b.sequence = l.sequence AND l.lease_id IS NULL
      ORDER BY c.pos`;
}
