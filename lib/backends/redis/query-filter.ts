import type { RheoEvent } from '../../core/types';
import type { QueryRequest } from '../backend';
import { jsonFieldsFilter } from '../json-filter';

/**
 * The filter of a query as a predicate over decoded events. Redis has no
 * secondary indexes, so a query scans sequence ranges and filters here; the
 * metadata and payload equalities are the shared own-key filter of every
 * JavaScript-side backend (`{ "__proto__": {} }` matches that key, not every object).
 */
export function queryFilter(req: QueryRequest): (e: RheoEvent) => boolean {
  const from = req.from?.getTime();
  const to = req.to?.getTime();
  const fields = jsonFieldsFilter(req.where);
  return (e) => {
    if (req.where.type !== undefined && e.type !== req.where.type) return false;
    if (req.where.key !== undefined && e.key !== req.where.key) return false;
    const ts = e.timestamp.getTime();
    if (from !== undefined && ts < from) return false;
    if (to !== undefined && ts > to) return false;
    return fields === null || fields(e.metadata as Record<string, unknown>, e.payload);
  };
}
