// The waiting section's statements (waiting.ts): skip, reschedule, cancelDelayed
// (docs/adr/048-skip-reschedule-cancel.md).
import type { TableNames } from '../sql/names';
import type { DbInt } from '../sql/rows';
import { returning } from '../sql/statement';

/**
 * An event of the stream, where one group stands on it: its position, whether it is
 * delayed or cancelled, the group partition's cursor (never behind the trim point)
 * and the group's delivery of it, if there is one (state, due_at: a lease's expiry).
 */
export interface DbWaiting {
  partition: number;
  sequence: number;
  deliver_at: DbInt | null;
  cancelled_at: DbInt | null;
  group_name: string;
  cursor: DbInt;
  /** 'waiting': for its key (docs/adr/049-flow-control.md). */
  state: 'available' | 'leased' | 'waiting' | null;
  due_at: DbInt | null;
}

/** A group's skips as stored (groupInfo). */
export interface DbSkips {
  skipped: DbInt;
  skip_reason: string | null;
  skipped_at: DbInt | null;
}

export function sqliteWaitingPlans(t: TableNames) {
  const at = (groupFilter: string) => `
      SELECT e.partition, e.sequence, e.deliver_at, e.cancelled_at, g.group_name, max(g.cursor, p.trimmed_to + 1) AS cursor,
             d.state, d.due_at
      FROM ${t.events} e
      JOIN ${t.partitions} p ON p.stream = e.stream AND p.partition = e.partition
      JOIN ${t.groupPartitions} g ON g.stream = e.stream AND g.partition = e.partition ${groupFilter}
      LEFT JOIN ${t.deliveries} d ON d.stream = e.stream AND d.group_name = g.group_name AND d.partition = e.partition
                                  AND d.sequence = e.sequence
      WHERE e.stream = ? AND e.id = ? AND e.sequence > p.trimmed_to`;
  return {
    /** Where one group stands on an event (params: group, stream, id); no row when the stream has no such event. */
    waitingIn: returning<DbWaiting>(at('AND g.group_name = ?')),
    /** Where every group of the stream stands on an event (params: stream, id), by group name. */
    waitingInAll: returning<DbWaiting>(`${at('')} ORDER BY g.group_name`),
    /** Whether the stream holds the event at all (above its trim point), for cancelDelayed of a stream without groups. */
    eventOf: returning<Pick<DbWaiting, 'partition' | 'sequence' | 'deliver_at' | 'cancelled_at'>>(`
      SELECT e.partition, e.sequence, e.deliver_at, e.cancelled_at FROM ${t.events} e
      JOIN ${t.partitions} p ON p.stream = e.stream AND p.partition = e.partition
      WHERE e.stream = ? AND e.id = ? AND e.sequence > p.trimmed_to`),
    /** A waiting delivery made due at another time, its attempt kept. */
    reschedule: `
      UPDATE ${t.deliveries} SET state = 'available', lease_id = NULL, due_at = ?
      WHERE stream = ? AND group_name = ? AND partition = ? AND sequence = ?`,
    /** The cancellation a claim honours (delivery-claim.ts: delayedIn). */
    cancel: `UPDATE ${t.events} SET cancelled_at = ? WHERE stream = ? AND partition = ? AND sequence = ?`,
    /** Count skips on the group's row; no row changed when the group is gone. */
    recordSkips: `UPDATE ${t.groups} SET skipped = skipped + ?, skip_reason = ?, skipped_at = ? WHERE stream = ? AND name = ?`,
    /** A row only when the event was cancelled in every group (the claim's check of a due offer at attempt 0). */
    cancelledAt: returning<{ cancelled_at: DbInt }>(`
      SELECT cancelled_at FROM ${t.events} WHERE stream = ? AND partition = ? AND sequence = ? AND cancelled_at IS NOT NULL`),
    skips: returning<DbSkips>(`SELECT skipped, skip_reason, skipped_at FROM ${t.groups} WHERE stream = ? AND name = ?`),
  };
}
