// Delivery's statements: the claims of a fetch (their statement in claim.ts), and
// the fenced settle, release, renew and transactional ack.
import type { TableNames } from '../../sql/names';
import type { DbInt } from '../../sql/rows';
import { returning } from '../../sql/statement';
import { ASYNC_COMMIT, claimPlan, type DbClaimed } from './claim';

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
    lockGroupPartitions: returning<{ partition: number; paused_to: DbInt | null; flow: boolean }>(`
      SELECT partition, paused_to, flow FROM ${t.groupPartitions}
      WHERE stream = $1 AND group_name = $2 AND partition = ANY($3::int[])
      ORDER BY partition FOR UPDATE`),

    fetch: returning<DbClaimed>(claimPlan(t, 'any', false)),
    /** The claim as it was before fetch's fast insert: what the backend runs when that insert meets a row. */
    fetchGuarded: returning<DbClaimed>(claimPlan(t, 'any', true)),
    fetchOrdered: returning<DbClaimed>(claimPlan(t, 'ordered', true)),
    /** The claims of a group whose only flow limits are group-wide, with its cap as the limit (flow.ts): past the `flow` gate. */
    fetchCapped: returning<DbClaimed>(claimPlan(t, 'any', true, false)),
    fetchOrderedCapped: returning<DbClaimed>(claimPlan(t, 'ordered', true, false)),

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
