import type { JsonValue, QueryWhere, RheoEvent } from '../../core/types';
import type { QueryRequest } from '../backend';
import { jsonFieldsFilter } from '../json-filter';

/** A page of events in query order, strictly after keyset position `after`. */
export type PageReader = (after: QueryRequest['after'], pageSize: number) => Promise<RheoEvent[]>;

/**
 * Run a query whose column filters (type, key, partition, time, sequence) are in
 * SQL, and whose payload and metadata filters are checked here with the shared
 * own-key filter (core's jsonEqual), page by page, until `limit` matches: this
 * check is the final word on every row. Both databases would otherwise bend JSON
 * equality: PostgreSQL's jsonb refuses strings holding \u0000 (and its json
 * operators de-escape the whole document, failing the same way), SQLite's
 * json_extract makes true equal 1.
 *
 * `prefiltered`: the SQL already rules out (almost) every row the filters reject
 * (e.g. with {@link jsonFieldNeedles}), so a page of `limit` rows is asked for;
 * otherwise pages of at least 500, since most rows may be dropped here.
 */
export async function filteredQuery(req: QueryRequest, readPage: PageReader, prefiltered = false): Promise<RheoEvent[]> {
  const fields = jsonFieldsFilter(req.where);
  const matches = fields ? (e: RheoEvent) => fields(e.metadata, e.payload) : () => true;
  const filtered = fields !== null;
  const pageSize = filtered && !prefiltered ? Math.max(req.limit, 500) : req.limit;
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
  /** Text that must occur in the stored payload / metadata JSON (see {@link jsonFieldNeedles}); a dialect may ignore them. */
  payloadNeedles?: string[];
  metadataNeedles?: string[];
}

/**
 * For each payload and metadata equality filter, the text `"key":<value>` as
 * JSON.stringify writes it, which the stored JSON text must contain for the
 * filter to match: both columns hold exactly what JSON.stringify made of the
 * event (the facade serialises once, with no spaces), and a top-level key of an
 * object is written `"key":` followed by its value. A scalar value is written in
 * full (-0 and 0 both as `0`, which jsonEqual calls equal); an object or array
 * only by its first character, since its keys may be stored in another order.
 * A contains-test is a pre-filter, never the decision: the same text can occur
 * deeper in the document, or as a prefix (`"n":7` in `"n":70`), so the exact
 * check stays in JavaScript; but a row that matches always contains it.
 */
export function jsonFieldNeedles(where: QueryWhere): { payloadNeedles: string[]; metadataNeedles: string[] } {
  const needles = (fields: Record<string, JsonValue> | undefined) =>
    Object.entries(fields ?? {}).map(([k, v]) => {
      const key = `${JSON.stringify(k)}:`;
      if (Array.isArray(v)) return `${key}[`;
      if (v !== null && typeof v === 'object') return `${key}{`;
      return key + JSON.stringify(v);
    });
  return { payloadNeedles: needles(where.payload), metadataNeedles: needles(where.metadata) };
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
