// A query on SQLite: the column filters, the Bloom bits of the scalar equality
// filters (bloom.ts) and, where they can be written, exact JSON predicates
// (json-where.ts), read in query order from rheo_events_order; the shared loop
// (sql/query-filter.ts) has the last word on every row, in JavaScript.
import type { RheoEvent } from '../../core/types';
import type { QueryRequest } from '../backend';
import type { TableNames } from '../sql/names';
import { columnFilters, filteredQuery } from '../sql/query-filter';
import type { DbEvent } from '../sql/rows';
import type { Sql } from '../sql/statement';
import { queryBloom } from '../sql/bloom';
import { jsonWhere } from './json-where';
import { sqliteQuery } from './plans';

/** Reads one page: the statement and its parameters, run under the backend's lock wait. */
export type SqlitePageRun = (sql: Sql<DbEvent>, params: unknown[]) => Promise<RheoEvent[]>;

export function sqliteFilteredQuery(t: TableNames, req: QueryRequest, run: SqlitePageRun): Promise<RheoEvent[]> {
  const json = jsonWhere(req.where);
  const bloom = queryBloom(req.where);
  // Selective predicates: the rows SQL returns are (nearly) all matches, so a page is the limit.
  return filteredQuery(
    req,
    (after, limit) => {
      const { sql, params } = sqliteQuery(t, { stream: req.stream, ...columnFilters(req), after, limit }, json, bloom);
      return run(sql, params);
    },
    json.selective,
  );
}
