import { jsonEqual } from '../core/json-equal';
import type { JsonValue, QueryWhere } from '../core/types';

/**
 * The metadata and payload equality filters of a query as one predicate, shared
 * by every backend that checks them in JavaScript. Keys are matched as own
 * properties only: `{ "__proto__": {} }` (what JSON.parse makes of that text)
 * must match a payload that holds that key, not every object through its
 * prototype.
 */
export function jsonFieldsFilter(where: QueryWhere): ((metadata: Record<string, unknown>, payload: unknown) => boolean) | null {
  const metadata = where.metadata ? Object.entries(where.metadata) : [];
  const payload = where.payload ? Object.entries(where.payload) : [];
  if (metadata.length + payload.length === 0) return null;
  return (m, p) => {
    if (!metadata.every(([k, v]) => Object.hasOwn(m, k) && jsonEqual(m[k] as JsonValue, v))) return false;
    if (payload.length === 0) return true;
    if (typeof p !== 'object' || p === null || Array.isArray(p)) return false;
    return payload.every(([k, v]) => Object.hasOwn(p, k) && jsonEqual((p as Record<string, JsonValue>)[k], v));
  };
}
