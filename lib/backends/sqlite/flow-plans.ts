// The statements of flow control on SQLite (docs/adr/049-flow-control.md; keys.ts,
// delivery-flow.ts): a group's limits and rate log as its claim reads them, the
// live leases of a group, and key places. A key's open deliveries are counted, and
// its earliest waiting one found, through rheo_deliveries_key (schema version 6),
// which holds only rows with a key: only groups with key places write one.
import type { TableNames } from '../sql/names';
import type { DbInt } from '../sql/rows';
import { returning } from '../sql/statement';

/**
 * The due_at of a delivery waiting for its key: never reached by any clock, so no
 * due scan (`due`, nor the partition head's `due_at <= now`) ever returns it, and
 * the statements of groups without key places need no state filter.
 */
export const WAITING_DUE = Number.MAX_SAFE_INTEGER;

/** A group's flow limits and rate log as stored (flowSettings); rate_log is a JSON RateLog or null. */
export interface DbFlowSettings {
  ordering: string;
  max_attempts: DbInt;
  key_concurrency: DbInt | null;
  group_concurrency: DbInt | null;
  rate_max: DbInt | null;
  rate_per_ms: DbInt | null;
  rate_log: string | null;
}
/** A key's open deliveries (not waiting) and its waiting ones, in one group partition (keyCount). */
export interface DbKeyCount {
  open: number;
  waiting: number;
}
/** A fresh event a keyed claim looks at (scan). */
export interface DbScanned {
  sequence: number;
  key: string | null;
  deliver_at: number | null;
  cancelled_at: number | null;
}
/** A due delivery of a keyed group, with its key (dueKeyed). */
export interface DbDueKeyed {
  sequence: number;
  state: string;
  attempt: number;
  key: string | null;
}
/** What a keyed ending deleted: the key whose place it gave up (ackKeyed, ackHeldKeyed). */
export interface DbEndedKey {
  key: string | null;
}

/**
 * The key index (schema version 6), named: without statistics the planner would take the
 * primary key's range over every delivery of the partition instead of the key's rows.
 */
export const BY_KEY = 'INDEXED BY rheo_deliveries_key';

/** The trim point of the deliveries row's partition, for the statements below. */
const trimmedTo = (t: TableNames, x: string) =>
  `(SELECT tp.trimmed_to FROM ${t.partitions} tp WHERE tp.stream = ${x}.stream AND tp.partition = ${x}.partition)`;

export function sqliteFlowPlans(t: TableNames) {
  const d = t.deliveries;
  return {
    /** Read inside the claim's (or ending's) write transaction: a change by any process decides from its commit on. */
    flowSettings: returning<DbFlowSettings>(`
      SELECT ordering, max_attempts, key_concurrency, group_concurrency, rate_max, rate_per_ms, rate_log FROM ${t.groups}
      WHERE stream = ? AND name = ?`),
    setRateLog: `UPDATE ${t.groups} SET rate_log = ? WHERE stream = ? AND name = ?`,
    /** The claim's gate (position reads it): 1 on every partition row of a group with any flow limit, else null. */
    setFlow: `UPDATE ${t.groupPartitions} SET flow = ? WHERE stream = ? AND group_name = ?`,
    /** The group's partitions (a recount over all of them). */
    partitionsOf: returning<{ partition: number }>(`
      SELECT partition FROM ${t.groupPartitions} WHERE stream = ? AND group_name = ? ORDER BY partition`),
    /** The group's live leases, across its partitions (groupConcurrency). */
    groupLive: returning<{ n: number }>(`
      SELECT count(*) AS n FROM ${d} x
      WHERE x.stream = ? AND x.group_name = ? AND x.state = 'leased' AND x.due_at > ? AND x.sequence > ${trimmedTo(t, 'x')}`),
    /** `due` (plans.ts) with each row's key: an ending by the claim hands the key's place on. */
    dueKeyed: returning<DbDueKeyed>(`
      SELECT sequence, state, attempt, key FROM ${d}
      WHERE stream = ? AND group_name = ? AND partition = ? AND sequence > ? AND due_at <= ?
      ORDER BY sequence LIMIT ?`),
    /** Fresh events of a partition from the cursor, with what a keyed claim judges them by. */
    scan: returning<DbScanned>(`
      SELECT sequence, key, deliver_at, cancelled_at FROM ${t.events}
      WHERE stream = ? AND partition = ? AND sequence BETWEEN ? AND ? ORDER BY sequence LIMIT ?`),
    /** A key's open and waiting deliveries in one group partition, above the trim point. */
    keyCount: returning<DbKeyCount>(`
      SELECT coalesce(sum(x.state <> 'waiting'), 0) AS open, coalesce(sum(x.state = 'waiting'), 0) AS waiting FROM ${d} x ${BY_KEY}
      WHERE x.stream = ? AND x.group_name = ? AND x.partition = ? AND x.key = ? AND x.sequence > ${trimmedTo(t, 'x')}`),
    /**
     * Give places to a key's earliest waiting deliveries (at most the given number): each is
     * due at once, or at its event's deliverAt. Named parameters: $now, $stream, $group, $partition, $key, $n.
     */
    promote: `
      UPDATE ${d} SET state = 'available',
        due_at = max($now, coalesce((SELECT e.deliver_at FROM ${t.events} e
                                   WHERE e.stream = ${d}.stream AND e.partition = ${d}.partition AND e.sequence = ${d}.sequence), 0))
      WHERE stream = $stream AND group_name = $group AND partition = $partition AND sequence IN (
        SELECT x.sequence FROM ${d} x ${BY_KEY}
        WHERE x.stream = $stream AND x.group_name = $group AND x.partition = $partition AND x.key = $key AND x.state = 'waiting'
          AND x.sequence > ${trimmedTo(t, 'x')}
        ORDER BY x.sequence LIMIT $n)`,
    /** The keys of a group partition that have waiting deliveries (a recount after a path that moved many). */
    waitingKeys: returning<{ key: string }>(`
      SELECT DISTINCT x.key FROM ${d} x ${BY_KEY}
      WHERE x.stream = ? AND x.group_name = ? AND x.partition = ? AND x.key IS NOT NULL AND x.state = 'waiting'
        AND x.sequence > ${trimmedTo(t, 'x')}`),
    /** A fresh event leased by a keyed claim, its key on the row. */
    insertLeased: `
      INSERT INTO ${d} (stream, group_name, partition, sequence, state, attempt, lease_id, consumer_id, leased_at, due_at, key)
      VALUES (?, ?, ?, ?, 'leased', 1, ?, ?, ?, ?, ?)`,
    /** A fresh delayed event parked by a keyed claim (parkDelayed with its key): it holds its key's place. */
    insertParked: `
      INSERT INTO ${d} (stream, group_name, partition, sequence, state, attempt, due_at, key) VALUES (?, ?, ?, ?, 'available', 0, ?, ?)`,
    /** A fresh event set waiting for its key. */
    insertWaiting: `
      INSERT INTO ${d} (stream, group_name, partition, sequence, state, attempt, due_at, key) VALUES (?, ?, ?, ?, 'waiting', 0, ${WAITING_DUE}, ?)`,
    /** `ack` (plans.ts), telling the key of the row it deleted. */
    ackKeyed: returning<DbEndedKey>(`
      DELETE FROM ${d} WHERE stream = ? AND group_name = ? AND partition = ? AND sequence = ? RETURNING key`),
    /** `ackHeld` (plans.ts), telling the key of the row it deleted. */
    ackHeldKeyed: returning<DbEndedKey>(`
      DELETE FROM ${d}
      WHERE stream = ? AND group_name = ? AND partition = ? AND sequence = ? AND lease_id = ? AND state = 'leased' AND due_at > ?
        AND sequence > ${trimmedTo(t, d)}
      RETURNING key`),
    /**
     * Re-open an offered event of a group with key places: a keyed event comes back
     * waiting (its place is given in sequence order by the recount after), a keyless
     * one as `reopen` (plans.ts) makes it. Params: group, stream, partition, sequence.
     */
    reopenKeyed: `
      INSERT INTO ${d} (stream, group_name, partition, sequence, state, attempt, due_at, key)
      SELECT e.stream, ?, e.partition, e.sequence, CASE WHEN e.key IS NULL THEN 'available' ELSE 'waiting' END, 0,
             CASE WHEN e.key IS NULL THEN 0 ELSE ${WAITING_DUE} END, e.key
      FROM ${t.events} e WHERE e.stream = ? AND e.partition = ? AND e.sequence = ?
      ON CONFLICT (stream, group_name, partition, sequence)
      DO UPDATE SET state = excluded.state, attempt = 0, lease_id = NULL, consumer_id = NULL, leased_at = NULL,
                    due_at = CASE WHEN excluded.state = 'waiting' THEN excluded.due_at
                                  WHEN state = 'available' AND attempt = 0 THEN due_at ELSE 0 END,
                    reason = NULL, dead_at = NULL, key = excluded.key`,
    /** `redriveAll` (plans.ts) for a group with key places: keyed events come back waiting. */
    redriveAllKeyed: `
      INSERT INTO ${d} (stream, group_name, partition, sequence, state, attempt, due_at, key)
      SELECT x.stream, x.group_name, x.partition, x.sequence, CASE WHEN e.key IS NULL THEN 'available' ELSE 'waiting' END, 0,
             CASE WHEN e.key IS NULL THEN 0 ELSE ${WAITING_DUE} END, e.key
      FROM ${t.deadLetters} x
      JOIN ${t.events} e ON e.stream = x.stream AND e.partition = x.partition AND e.sequence = x.sequence
      WHERE x.stream = ? AND x.group_name = ? AND x.sequence > ${trimmedTo(t, 'x')}
      ON CONFLICT (stream, group_name, partition, sequence)
      DO UPDATE SET state = excluded.state, attempt = 0, lease_id = NULL, consumer_id = NULL, leased_at = NULL,
                    due_at = excluded.due_at, key = excluded.key`,
  };
}
