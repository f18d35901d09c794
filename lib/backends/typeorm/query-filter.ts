import { jsonEqual } from '../../core/json-equal';
import type { JsonValue, RheoEvent } from '../../core/types';
import type { QueryRequest } from '../backend';

/** A page of events in query order, strictly after keyset position `after`. */
export type PageReader = (after: QueryRequest['after'], pageSize: number) => Promise<RheoEvent[]>;

/**
 * Run a query whose column filters (type, key, partition, time, sequence) are in
 * SQL, and whose payload and metadata filters are checked here with core's
 * jsonEqual, page by page, until `limit` matches. Both databases would otherwise
 * bend JSON equality: PostgreSQL's jsonb refuses strings holding \u0000, SQLite's
 * json_extract makes true equal 1.
 */
export async function filteredQuery(req: QueryRequest, readPage: PageReader): Promise<RheoEvent[]> {
  const metadata = Object.entries(req.where.metadata ?? {});
  const payload = Object.entries(req.where.payload ?? {});
  const matches = (e: RheoEvent): boolean => {
    if (!metadata.every(([k, v]) => k in e.metadata && jsonEqual(e.metadata[k] as JsonValue, v))) return false;
    if (payload.length === 0) return true;
    const p = e.payload;
    if (typeof p !== 'object' || p === null || Array.isArray(p)) return false;
    return payload.every(([k, v]) => k in p && jsonEqual((p as Record<string, JsonValue>)[k], v));
  };
  const filtered = metadata.length + payload.length > 0;
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
