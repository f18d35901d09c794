// Key places on SQLite (docs/adr/049-flow-control.md): in a group with `ordering:
// 'key'` or `keyConcurrency`, at most N deliveries of a key are open per partition;
// a key's later events wait as rows in state 'waiting' (flow-plans.ts). Every path
// that ends an open delivery of a key calls `keyEnded` in its own write transaction,
// which gives the freed place to the key's earliest waiting delivery.
//
// Why no release table, as PostgreSQL needs: every write here is a `BEGIN IMMEDIATE`
// transaction (context.ts `write`; a transactional consumer's first statement is a
// write, delivery.ts), and SQLite admits one writer to the file at a time, across
// connections and processes. In WAL mode a transaction that starts by taking the
// write lock reads the newest commit (a stale snapshot can never be upgraded to
// write), so the ending statement sees every waiting row any claim of any process
// committed before it, and no claim can write one beside it. The two-backend spec
// (test/sql/sqlite-flow.spec.ts) races claims and acks of two connections on one file.
import { keyPlaces } from '../../core/flow';
import type { Ordering } from '../../core/types';
import type { SqliteContext } from './context';
import type { DbFlowSettings } from './flow-plans';

/** A group's key places from its stored settings (null: keys are not limited). */
export function placesOf(row: Pick<DbFlowSettings, 'ordering' | 'key_concurrency'>): number | null {
  const keyConcurrency = row.key_concurrency === null ? null : Number(row.key_concurrency);
  return keyPlaces({ ordering: row.ordering as Ordering, keyConcurrency });
}

/** The group's key places as stored now (another process may have changed keyConcurrency); null for none or no group. */
export function storedPlaces(ctx: SqliteContext, stream: string, group: string): number | null {
  const row = ctx.stmt(ctx.flow.flowSettings).get(stream, group);
  return row ? placesOf(row) : null;
}

/**
 * The key lost an open delivery (or a waiting one) in this transaction: give its free
 * places to its earliest waiting deliveries, counted again from the rows. How many
 * got one. `places` when the caller read them already.
 */
export function keyEnded(
  ctx: SqliteContext,
  stream: string,
  group: string,
  partition: number,
  key: string,
  now: number,
  places: number | null = storedPlaces(ctx, stream, group),
): number {
  if (places === null) return 0;
  const count = ctx.stmt(ctx.flow.keyCount).get(stream, group, partition, key)!;
  const free = places - Number(count.open);
  if (Number(count.waiting) === 0 || free <= 0) return 0;
  return ctx.stmt(ctx.flow.promote).run({ now, stream, group, partition, key, n: free }).changes;
}

/**
 * Count every key of a group partition again and give free places to waiting
 * deliveries, after a path that moved many at once (replay, redrive, a forced trim,
 * more keyConcurrency). A re-opened keyed delivery comes back waiting, so it takes a
 * place only here, in sequence order. How many got one.
 */
export function recountKeys(ctx: SqliteContext, stream: string, group: string, partition: number, now: number): number {
  const places = storedPlaces(ctx, stream, group);
  if (places === null) return 0;
  let promoted = 0;
  for (const { key } of ctx.stmt(ctx.flow.waitingKeys).all(stream, group, partition)) {
    promoted += keyEnded(ctx, stream, group, partition, key, now, places);
  }
  return promoted;
}

/** {@link recountKeys} over the given partitions of a group. */
export function recountGroup(ctx: SqliteContext, stream: string, group: string, partitions: Iterable<number>, now: number): number {
  if (storedPlaces(ctx, stream, group) === null) return 0;
  let promoted = 0;
  for (const p of partitions) promoted += recountKeys(ctx, stream, group, p, now);
  return promoted;
}
