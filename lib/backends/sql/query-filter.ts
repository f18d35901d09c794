import type { RheoEvent } from '../../core/types';
import type { QueryRequest } from '../backend';
import { jsonFieldsFilter } from '../json-filter';

/** A page of events in query order, strictly after keyset position `after`. */
export type PageReader = (after: QueryRequest['after'], pageSize: number) => Promise<RheoEvent[]>;

/**
 * Run a query whose column filters (type, key, partition, time, sequence) are in
 * SQL, and whose payload and metadata filters are checked here with the shared
 * own-key filter (core's jsonEqual), page by page, until `limit` matches. Both
 * databases would otherwise bend JSON equality: PostgreSQL's jsonb refuses strings
 * holding \u0000, SQLite's json_extract makes true equal 1.
 */
export async function filteredQuery(req: QueryRequest, readPage: PageReader): Promise<RheoEvent[]> {
  const fields = jsonFieldsFilter(req.where);
  const matches = fields ? (e: RheoEvent) => fields(e.metadata, e.payload) : () => true;
  const filtered = fields !== null;
  const pageSize = filtered ? Math.max(req.limit, 500) : req.limit;
  const out: RheoEvent[] = [];
  let after = req.after;
  for (;;) {
    const page = await readPage(after, pageSize);
    for (const e of page) {
      if (matches(e)) out.push(e);
      if (out.length >= req.limit) return out;
    }
    if (page.length < pageSize) return out;
    const last = page[page.length - 1];
    after = { sequence: last.sequence, partition: last.partition };
  }
}

/** A query as each dialect's SQL compiler takes it: column filters, keyset position, page size. */
export interface ColumnQuery {
  stream: string;
  type?: string;
  key?: string;
  partition?: number;
  from?: number;
  to?: number;
  afterSequence?: number;
  untilSequence?: number;
  after?: { sequence: number; partition: number };
  order: 'asc' | 'desc';
  limit: number;
}

/** The filters SQL applies (everything but payload and metadata), with times as epoch milliseconds. */
export function columnFilters(req: QueryRequest) {
  return {
    type: req.where.type,
    key: req.where.key,
    partition: req.where.partition,
    from: req.from?.getTime(),
    to: req.to?.getTime(),
    afterSequence: req.afterSequence,
    untilSequence: req.untilSequence,
    order: req.order,
  };
}
