// copyJson (lib/backends/copies.ts) is how the SQLite and Redis backends build the
// payload and metadata of the events an append returns: it must give exactly what
// reading the stored JSON text back gives, and share nothing with its input.
import { copyJson } from '../../lib/backends/copies';
import type { JsonValue } from '../../lib';

const roundTrip = (v: JsonValue): JsonValue => JSON.parse(JSON.stringify(v)) as JsonValue;

/** Every object and array reachable from `v`. */
function containers(v: JsonValue, out: object[] = []): object[] {
  if (typeof v === 'object' && v !== null) {
    out.push(v);
    for (const x of Array.isArray(v) ? v : Object.values(v)) containers(x, out);
  }
  return out;
}

describe('copyJson', () => {
  const nullProto = Object.assign(Object.create(null) as Record<string, JsonValue>, { b: 2, a: [null, 'x'] });
  const withProtoKey = JSON.parse('{"__proto__": {"own": true}, "n": -0}') as JsonValue;
  const values: JsonValue[] = [
    null,
    true,
    false,
    0,
    -0,
    1.5,
    -1e300,
    '',
    'ünïcödé \u0000 \u2028 😀',
    [],
    {},
    [1, [2, [3, { deep: [-0] }]]],
    { '2': 'b', '1': 'a', z: 'last', a: 'first' },
    nullProto,
    withProtoKey,
  ];

  it.each(values.map((v, i) => [i, v]))('value %i: what the JSON round trip gives', (_i, v) => {
    const c = copyJson(v);
    expect(c).toEqual(roundTrip(v));
    // toEqual treats -0 and 0 alike in objects; the text says which it is, and so must the copy.
    expect(JSON.stringify(c)).toBe(JSON.stringify(roundTrip(v)));
    if (Object.is(v, -0)) expect(Object.is(c, 0)).toBe(true);
  });

  it('keeps key order, gives ordinary objects, and keeps a __proto__ key as an own property', () => {
    expect(Object.keys(copyJson({ '2': 'b', '1': 'a', z: 'last', a: 'first' }))).toEqual(['1', '2', 'z', 'a']);
    expect(Object.getPrototypeOf(copyJson(nullProto))).toBe(Object.prototype);
    const c = copyJson(withProtoKey) as Record<string, JsonValue>;
    expect(Object.getOwnPropertyNames(c)).toEqual(['__proto__', 'n']);
    expect(Object.getPrototypeOf(c)).toBe(Object.prototype);
    expect(Object.is(c.n, 0)).toBe(true);
  });

  it('shares no object or array with its input', () => {
    const v: JsonValue = { a: [1, { b: [2, 3] }], c: { d: {} } };
    const inputs = new Set(containers(v));
    for (const x of containers(copyJson(v))) expect(inputs.has(x)).toBe(false);
  });

  it('copies metadata objects the same way', () => {
    const metadata = { correlationId: 'c-1', tags: ['x', 'y'] };
    const c = copyJson(metadata);
    expect(c).toEqual(metadata);
    expect(c).not.toBe(metadata);
    expect(c.tags).not.toBe(metadata.tags);
  });
});
