// A query's payload and metadata equality filters as SQLite predicates, so the
// database skips what cannot match instead of handing every row to JavaScript
// (a 1-in-1000 filter otherwise decodes 1000 rows per match). They only narrow:
// the shared JavaScript filter (backends/json-filter.ts, structural equality on
// own keys) still decides every row that comes back, so a predicate may let a
// non-match through (objects, arrays, a number within rounding) but must never
// drop a match.
import type { JsonValue, QueryWhere } from '../../core/types';

/** SQL text over the event alias `e`, and its parameters in order. */
export interface JsonWhere {
  clauses: string[];
  params: unknown[];
  /**
   * Every filter became a selective predicate (a value, not just a type): the
   * rows that come back are (nearly) all matches, so a page need not be read
   * larger than the limit.
   */
  selective: boolean;
}

/**
 * Keys a JSON path label can name as they are. SQLite reads `$."..."` up to the
 * next double quote, with no escapes, and compares it with the key as stored:
 * JSON.stringify writes a key as it is unless it holds a quote, a backslash or a
 * control character, which it escapes. Those keys get no predicate (JavaScript
 * alone checks them).
 */
function safeKey(key: string): boolean {
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i);
    if (c < 0x20 || c === 0x22 || c === 0x5c) return false;
  }
  return key.isWellFormed();
}

/**
 * Relative slack of the number predicate: not every SQLite version converts
 * JSON number text to the double JavaScript does (the last bit may differ), and
 * an exact `=` would then miss a match.
 */
const NUMBER_SLACK = 1e-9;

function predicate(column: 'payload' | 'metadata', key: string, value: JsonValue, out: JsonWhere): void {
  if (!safeKey(key)) {
    out.selective = false;
    return;
  }
  const path = `$."${key}"`;
  const type = `json_type(e.${column}, ?)`;
  if (value === null) {
    out.clauses.push(`${type} = 'null'`);
    out.params.push(path);
  } else if (typeof value === 'boolean') {
    out.clauses.push(`${type} = '${value ? 'true' : 'false'}'`);
    out.params.push(path);
  } else if (typeof value === 'string') {
    // json_extract gives a string's unescaped text; the type check keeps an object's JSON text from matching it.
    out.clauses.push(`${type} = 'text' AND json_extract(e.${column}, ?) = ?`);
    out.params.push(path, path, value);
  } else if (typeof value === 'number') {
    const slack = Math.abs(value) * NUMBER_SLACK + Number.MIN_VALUE;
    out.clauses.push(`${type} IN ('integer', 'real') AND json_extract(e.${column}, ?) BETWEEN ? AND ?`);
    out.params.push(path, path, value - slack, value + slack);
  } else {
    // Objects and arrays: the type only (their equality is structural, key order aside).
    out.clauses.push(`${type} = '${Array.isArray(value) ? 'array' : 'object'}'`);
    out.params.push(path);
    out.selective = false;
  }
}

/** Predicates for `where.payload` and `where.metadata` (top-level keys). */
export function jsonWhere(where: QueryWhere): JsonWhere {
  const out: JsonWhere = { clauses: [], params: [], selective: true };
  for (const [k, v] of Object.entries(where.metadata ?? {})) predicate('metadata', k, v, out);
  for (const [k, v] of Object.entries(where.payload ?? {})) predicate('payload', k, v, out);
  return out;
}
