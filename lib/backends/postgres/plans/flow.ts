// Flow control's statements (docs/adr/049-flow-control.md): the group's limits as
// stored, the hand-on of key places from release rows, the claim of a group with
// key places, the rate log, and what re-opening and raising a key's places write.
// Only groups with flow limits run any of them (../delivery.ts, flow.ts).
import type { TableNames } from '../../sql/names';
import type { DbGroup, DbInt } from '../../sql/rows';
import { returning } from '../../sql/statement';
import { WAITING_DUE } from '../schema';
import { type DbClaimed } from './claim';
import { flowClaimPlan } from './flow-claim';

/** The group's row as stored (its limits, its rate log) and, under a groupConcurrency, its live leases at $3. */
export type DbFlowState = DbGroup & { rate_log: DbInt[] | null; live: DbInt | null };

/** A claimed row of the keyed claim: {@link DbClaimed}, and whether it is an event the claim set waiting for its key. */
export type DbFlowClaimed = DbClaimed & { waited: boolean };

export function flowPlans(t: TableNames) {
  return {
    /**
     * The group's row as stored, and the hand-on of its key places, in one statement
     * run after the claim locked the group's partition rows (so its snapshot starts
     * after them, and the claim statement after it sees what it did). $1 stream, $2
     * group, $3 now, $4 the claim's partitions, $5 the NOTIFY channel.
     *
     * The row: a claim of a group with a group-wide limit locks all of its partition
     * rows, so the live leases and the rate log it reads are those the previous claim
     * left. Live leases are counted over the group's deliveries (index range of its
     * primary key); a settle that commits meanwhile only makes the count high.
     *
     * The hand-on (groups with key places only: `places`, core/flow.ts keyPlaces):
     * take the release rows of partitions $4 and, for each key released, give its
     * free places (its places minus the deliveries that hold one) to its earliest
     * waiting deliveries, due at once ($3) or at their event's deliver_at. Every
     * writer of a waiting delivery (the claim, a re-open) holds those locks, so this
     * snapshot sees them all; an end that commits after it left a release row this
     * statement does not see, which the next claim takes. A count made high by such
     * an end only gives fewer places now, never too many. A promoted delivery is
     * claimable, so waiting consumers are told on $5.
     */
    state: returning<DbFlowState>(`
      WITH grp AS (
        SELECT g.*, CASE WHEN g.ordering = 'key' THEN 1 ELSE g.key_concurrency END AS places
        FROM ${t.groups} g WHERE g.stream = $1 AND g.name = $2
      ), taken AS (
        DELETE FROM ${t.keyReleases} r USING grp
        WHERE r.stream = $1 AND r.group_name = $2 AND r.partition = ANY($4::int[]) AND grp.places IS NOT NULL
        RETURNING r.partition, r.key
      ), heads AS (
        SELECT w.row_id, w.partition, w.sequence
        FROM (SELECT DISTINCT partition, key FROM taken) k
        CROSS JOIN grp
        CROSS JOIN LATERAL (
          SELECT d.ctid AS row_id, d.partition, d.sequence FROM ${t.deliveries} d
          WHERE d.stream = $1 AND d.group_name = $2 AND d.partition = k.partition AND d.waiting_key = k.key
          ORDER BY d.sequence
          LIMIT GREATEST(0, grp.places - (
            SELECT count(*) FROM ${t.deliveries} o
            WHERE o.stream = $1 AND o.group_name = $2 AND o.partition = k.partition AND o.key = k.key))
        ) w
      ), promoted AS (
        UPDATE ${t.deliveries} d
        SET state = 'available', key = d.waiting_key, waiting_key = NULL,
            due_at = GREATEST($3::bigint, COALESCE((
              SELECT e.deliver_at FROM ${t.events} e
              WHERE e.stream = $1 AND e.sequence = h.sequence AND e.partition = h.partition), 0))
        FROM heads h
        WHERE d.ctid = h.row_id
        RETURNING 1
      ), wake AS (
        SELECT pg_notify($5, $1) WHERE EXISTS (SELECT 1 FROM promoted)
      )
      SELECT grp.*, CASE WHEN grp.group_concurrency IS NOT NULL THEN (
               SELECT count(*) FROM ${t.deliveries} d
               WHERE d.stream = $1 AND d.group_name = $2 AND d.state = 'leased' AND d.due_at > $3) END AS live,
             (SELECT count(*) FROM promoted) AS promoted, (SELECT count(*) FROM wake) AS woke
      FROM grp`),

    /** The claim of a group with key places (see flowClaimPlan). */
    claim: returning<DbFlowClaimed>(flowClaimPlan(t)),

    /** $1 stream, $2 group, $3 the rate log after the claim (core/flow.ts rateLogAfter). */
    saveRateLog: `UPDATE ${t.groups} SET rate_log = $3::bigint[] WHERE stream = $1 AND name = $2`,

    /**
     * After a replay of chosen events or a redrive of a group with key places,
     * under its partition locks: every delivery of a keyed event that holds no
     * place of its key (re-opened: its row is new, or was waiting) waits for one
     * again, in sequence order among its key's, and each such key gets a release
     * row so the next claim counts its places (a key with no open delivery left
     * would otherwise wait forever). One scan of the group's deliveries: re-opens
     * are an operator's, not the hot path. $1 stream, $2 group.
     */
    rekey: `
      WITH re AS (
        UPDATE ${t.deliveries} d
        SET state = 'waiting', due_at = ${WAITING_DUE}, waiting_key = e.key, key = NULL, lease_id = NULL, consumer_id = NULL,
            leased_at = NULL, attempt = 0
        FROM ${t.events} e
        WHERE d.stream = $1 AND d.group_name = $2 AND e.stream = $1 AND e.sequence = d.sequence AND e.partition = d.partition
          AND e.key IS NOT NULL AND d.key IS NULL AND (d.waiting_key IS NULL OR d.state <> 'waiting')
        RETURNING d.partition, d.waiting_key
      )
      INSERT INTO ${t.keyReleases} (stream, group_name, partition, key)
      SELECT DISTINCT $1, $2, partition, waiting_key FROM re`,

    /**
     * More places per key (updateGroup raised keyConcurrency): a release row for
     * every key of the group with a waiting delivery, so the next claim gives the
     * new places at once. $1 stream, $2 group, $3 the NOTIFY channel.
     */
    releaseWaitingKeys: `
      WITH keys AS (
        INSERT INTO ${t.keyReleases} (stream, group_name, partition, key)
        SELECT DISTINCT d.stream, d.group_name, d.partition, d.waiting_key FROM ${t.deliveries} d
        WHERE d.stream = $1 AND d.group_name = $2 AND d.waiting_key IS NOT NULL
        RETURNING 1
      )
      SELECT pg_notify($3, $1) WHERE EXISTS (SELECT 1 FROM keys)`,
  };
}
