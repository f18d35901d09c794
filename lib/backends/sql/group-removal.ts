// The statements that remove a group and a turn, for both SQL dialects: plain
// DELETEs by key. What each backend wraps around them (PostgreSQL locks the
// group's partition rows first, SQLite runs them in its one writer's
// transaction) is in the backend.
import type { TableNames } from './names';
import { returning, type Sql } from './statement';

/** A row naming what a statement removed. */
export interface DbRemoved {
  name: string;
}

/**
 * deleteGroup's statements, in the order they run: the group's deliveries, dead
 * letters and partition positions go before its registration, so a statement
 * that finds the group row (a claim's join, a reopen's) never finds it without
 * its positions. On PostgreSQL `group` and `releaseTurn` return a row per key
 * removed (the DELETE inside a WITH: TypeORM hands a bare DELETE's rows back
 * wrapped with its row count); SQLite reads the count of changes instead.
 */
export function groupRemovalPlans(t: TableNames, dialect: 'postgres' | 'sqlite') {
  const ph = dialect === 'postgres' ? (n: number) => `$${n}` : () => '?';
  const byGroup = `stream = ${ph(1)} AND group_name = ${ph(2)}`;
  const counted = (del: string): Sql<DbRemoved> =>
    returning<DbRemoved>(dialect === 'postgres' ? `WITH removed AS (${del} RETURNING name) SELECT name FROM removed` : del);
  return {
    deliveries: `DELETE FROM ${t.deliveries} WHERE ${byGroup}`,
    deadLetters: `DELETE FROM ${t.deadLetters} WHERE ${byGroup}`,
    positions: `DELETE FROM ${t.groupPartitions} WHERE ${byGroup}`,
    /** The group's registration: no row (no change) means there was no such group. */
    group: counted(`DELETE FROM ${t.groups} WHERE stream = ${ph(1)} AND name = ${ph(2)}`),
    /** Forget a turn its holder holds (releaseTurn): a row (a change) when it did. */
    releaseTurn: counted(`DELETE FROM ${t.jobs} WHERE name = ${ph(1)} AND holder = ${ph(2)}`),
  };
}
