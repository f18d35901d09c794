import { jsonEqual } from '../../core/json-equal';
import type { JsonValue, RheoEvent } from '../../core/types';
import type { QueryRequest } from '../backend';

/**
 * The filter of a query as a predicate over decoded events. Redis has no
 * secondary indexes, so a query scans sequence ranges and filters here.
 */
export function queryFilter(req: QueryRequest): (e: RheoEvent) => boolean {
  const from = req.from?.getTime();
  const to = req.to?.getTime();
  const metadata = req.where.metadata ? Object.entries(req.where.metadata) : [];
  const payload = req.where.payload ? Object.entries(req.where.payload) : [];
  return (e) => {
    if (req.where.type !== undefined && e.type !== req.where.type) return false;
    if (req.where.key !== undefined && e.key !== req.where.key) return false;
    const ts = e.timestamp.getTime();
    if (from !== undefined && ts < from) return false;
    if (to !== undefined && ts > to) return false;
    if (metadata.length) {
      const m = e.metadata as Record<string, JsonValue>;
      if (!metadata.every(([k, v]) => k in m && jsonEqual(m[k], v))) return false;
    }
    if (payload.length) {
      const p = e.payload;
      if (typeof p !== 'object' || p === null || Array.isArray(p)) return false;
      if (!payload.every(([k, v]) => k in p && jsonEqual((p as Record<string, JsonValue>)[k], v))) return false;
    }
    return true;
  };
}
