/**
 * Array parameters as PostgreSQL array literals, built here rather than by the
 * driver. `pg` converts a JS array element by element (a type check, two regular
 * expression replacements and quotes per element, numbers included): a fifth of
 * the client's time in an append of 500 events, most of a settle's argument
 * building. The server parses the same literal either way.
 */

/**
 * `{1,2,3}` for integers (no element is null, none needs quoting). The caller
 * passes only integers it computed (partitions, sequences, ranks, timestamps,
 * Bloom bits, indexes); anything else would be refused by the server's cast, as
 * it would have been with the driver's literal.
 */
export function intArray(values: readonly number[]): string {
  return `{${values.join(',')}}`;
}

/** Characters that must be escaped inside a quoted array element. */
const NEEDS_ESCAPE = /["\\]/;

/**
 * `{"a","b"}` for non-null texts: every element quoted, so an empty string, the
 * word NULL, spaces, commas and braces arrive as themselves; quotes and
 * backslashes escaped. Most of ours (stream and group names, lease ids,
 * receipts) need no escape: one test, then the element as it is.
 */
export function textArray(values: readonly string[]): string {
  let out = '{';
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (i > 0) out += ',';
    out += NEEDS_ESCAPE.test(v) ? `"${v.replace(/[\\"]/g, '\\$&')}"` : `"${v}"`;
  }
  return out + '}';
}

/** `{t,f}` for booleans (no element is null). */
export function boolArray(values: readonly boolean[]): string {
  return `{${values.map((v) => (v ? 't' : 'f')).join(',')}}`;
}
