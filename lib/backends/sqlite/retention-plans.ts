// The statements of retention on SQLite: trim, dead-letter purge, background
// turns. Deletes are bounded by a range or a LIMIT, never "everything below": each
// runs as its own short transaction (retention.ts), so the one writer is free
// between them.
import type { TableNames } from '../sql/names';
import type { DbCount } from '../sql/rows';
import { returning } from '../sql/statement';
import type { DbFirstAt } from './plans';

/** A group's cursor in one partition (groupCursors). */
export interface DbGroupCursor {
  group_name: string;
  partition: number;
  cursor: number;
}
/** A group's name (groupNames). */
export interface DbGroupName {
  name: string;
}

export function sqliteRetentionPlans(t: TableNames) {
  return {
    groupNames: returning<DbGroupName>(`SELECT name FROM ${t.groups} WHERE stream = ? ORDER BY name`),
    groupCursors: returning<DbGroupCursor>(`SELECT group_name, partition, cursor FROM ${t.groupPartitions} WHERE stream = ?`),
    /** Deliveries of a group in (trim point, new point]: the offered events a forced trim makes it skip. */
    inFlightUpTo: returning<DbCount>(`
      SELECT count(*) AS n FROM ${t.deliveries} WHERE stream = ? AND group_name = ? AND partition = ? AND sequence > ? AND sequence <= ?`),
    /** The trim point only moves forward. */
    setTrimmedTo: `UPDATE ${t.partitions} SET trimmed_to = ? WHERE stream = ? AND partition = ? AND trimmed_to < ?`,
    /** A forced trim moves a group that is behind to just after the point. */
    advanceCursor: `UPDATE ${t.groupPartitions} SET cursor = ? WHERE stream = ? AND group_name = ? AND partition = ? AND cursor < ?`,

    /** The lowest event still stored in a partition (a trim resumes from there, whatever an interrupted one left). */
    firstEvent: returning<DbFirstAt>(`SELECT min(sequence) AS seq FROM ${t.events} WHERE stream = ? AND partition = ?`),
    /** One chunk of a trim: a sequence range, by primary key; the (stream, id) entries go with the rows. */
    deleteEvents: `DELETE FROM ${t.events} WHERE stream = ? AND partition = ? AND sequence BETWEEN ? AND ?`,
    firstDelivery: returning<DbFirstAt>(`
      SELECT min(sequence) AS seq FROM ${t.deliveries} WHERE stream = ? AND group_name = ? AND partition = ?`),
    deleteDeliveries: `DELETE FROM ${t.deliveries} WHERE stream = ? AND group_name = ? AND partition = ? AND sequence BETWEEN ? AND ?`,

    /** One chunk of a purge: at most `limit` dead letters of a group dead-lettered before a time, by the age index. */
    purgeDeadLetters: `
      DELETE FROM ${t.deadLetters} WHERE stream = ? AND group_name = ? AND (partition, sequence) IN (
        SELECT partition, sequence FROM ${t.deadLetters} WHERE stream = ? AND group_name = ? AND dead_at < ? LIMIT ?)`,

    /**
     * Take or extend a named turn: written (changes = 1) when nobody holds it, its turn
     * ran out, or the holder asks again; left alone (changes = 0) otherwise.
     */
    claimTurn: `
      INSERT INTO ${t.jobs} (name, holder, until_ms) VALUES (?, ?, ?)
      ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, until_ms = excluded.until_ms
      WHERE ${t.jobs}.holder = excluded.holder OR ${t.jobs}.until_ms <= ?`,
  };
}
