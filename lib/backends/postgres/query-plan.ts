// A query compiled to one PostgreSQL statement: its column filters, its keyset
// position, the trim point, and for payload and metadata equality a Bloom test on
// the key and a text pre-filter on the row (see sql/query-filter.ts and
// docs/adr/019-sql-flat-cost.md).
import type { TableNames } from '../sql/names';
import type { ColumnQuery } from '../sql/query-filter';
import type { DbEvent } from '../sql/rows';
import { returning, Sql } from '../sql/statement';
import { EVENT_COLUMNS } from './plans/log';

/**
 * The statement of one page. Values are bound parameters. Pages in
 * (sequence, partition) order come from rheo_events' primary key (stream,
 * sequence, partition) INCLUDE (bloom), and stop at `limit` rows: what a page
 * costs is the entries the key walks to fill it, not the history. Never below the
 * trim point: the walk seeks past the lowest point of the stream's partitions, and
 * each entry is checked against its own partition's.
 *
 * `bloom` (the bits a query's scalar equality filters need, sqlite/bloom.ts):
 * the walk is an index-only scan that tests each entry's filter, and only the
 * entries that pass are read from the table (a filter matching 1 event in 1000
 * reads a few percent of the rows it walks past, not all of them). Then, on the
 * row, payload and metadata equality is pre-filtered on the stored JSON text:
 * each needle (`"key":<value as JSON>` as JSON.stringify writes it, see
 * jsonFieldNeedles) must occur in the column's text, which never rules out a
 * matching row and needs no JSON parsing (json's operators de-escape the whole
 * document and fail on \u0000). The caller checks each returned row exactly
 * (filteredQuery).
 */
export function pgQuery(t: TableNames, q: ColumnQuery, bloom: number | null = null): { sql: Sql<DbEvent>; params: unknown[] } {
  const params: unknown[] = [q.stream];
  const bind = (v: unknown) => {
    params.push(v);
    return `$${params.length}`;
  };
  const asc = q.order === 'asc';
  const dir = asc ? 'ASC' : 'DESC';
  // On the key's columns: the walk.
  const walk = (k: string) => {
    const w = [
      `${k}.stream = $1`,
      `${k}.sequence > (SELECT min(p.trimmed_to) FROM ${t.partitions} p WHERE p.stream = $1)`,
      `${k}.sequence > (SELECT array_agg(p.trimmed_to ORDER BY p.partition) FROM ${t.partitions} p WHERE p.stream = $1)[${k}.partition + 1]`,
    ];
    if (q.partition !== undefined) w.push(`${k}.partition = ${bind(q.partition)}`);
    if (q.afterSequence !== undefined) w.push(`${k}.sequence > ${bind(q.afterSequence)}`);
    if (q.untilSequence !== undefined) w.push(`${k}.sequence <= ${bind(q.untilSequence)}`);
    if (q.after) {
      w.push(`(${k}.sequence, ${k}.partition) ${asc ? '>' : '<'} (${bind(q.after.sequence)}::bigint, ${bind(q.after.partition)}::int)`);
    }
    return w;
  };
  // On the row's columns.
  const row = (e: string) => {
    const w: string[] = [];
    if (q.type !== undefined) w.push(`${e}.type = ${bind(q.type)}`);
    if (q.key !== undefined) w.push(`${e}.key = ${bind(q.key)}`);
    if (q.from !== undefined) w.push(`${e}.ts >= ${bind(q.from)}`);
    if (q.to !== undefined) w.push(`${e}.ts <= ${bind(q.to)}`);
    for (const needle of q.payloadNeedles ?? []) w.push(`strpos(${e}.payload::text, ${bind(needle)}) > 0`);
    for (const needle of q.metadataNeedles ?? []) w.push(`strpos(${e}.metadata::text, ${bind(needle)}) > 0`);
    return w;
  };
  if (bloom === null) {
    const where = [...walk('e'), ...row('e')];
    const sql = returning<DbEvent>(`SELECT ${EVENT_COLUMNS} FROM ${t.events} e WHERE ${where.join(' AND ')}
    ORDER BY e.sequence ${dir}, e.partition ${dir} LIMIT ${bind(q.limit)}`);
    return { sql, params };
  }
  const keys = [...walk('k'), `(k.bloom & ${bind(bloom)}::bigint) = $${params.length}::bigint`];
  const rowWhere = [`e.stream = $1`, `e.sequence = c.sequence`, `e.partition = c.partition`, ...row('e')];
  // OFFSET 0 keeps each subquery planned as written: the walk in key order, then one key lookup per entry that passed.
  const sql = returning<DbEvent>(`SELECT x.* FROM (
      SELECT k.sequence, k.partition FROM ${t.events} k WHERE ${keys.join(' AND ')}
      ORDER BY k.sequence ${dir}, k.partition ${dir} OFFSET 0
    ) c CROSS JOIN LATERAL (
      SELECT ${EVENT_COLUMNS} FROM ${t.events} e WHERE ${rowWhere.join(' AND ')} OFFSET 0
    ) x
    ORDER BY c.sequence ${dir}, c.partition ${dir} LIMIT ${bind(q.limit)}`);
  return { sql, params };
}
