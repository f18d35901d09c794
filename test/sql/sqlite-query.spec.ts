// Payload and metadata filters on SQLite are narrowed in SQL (json_type and
// json_extract) and decided in JavaScript. The SQL part must never drop a match:
// every filter here is checked against the JavaScript filter over every event.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type JsonValue, Rheo, type RheoEvent, sqliteBackend } from '../../lib';
import type { QueryWhere } from '../../lib/core/types';
import { jsonFieldsFilter } from '../../lib/backends/json-filter';

const dir = mkdtempSync(join(tmpdir(), 'rheo-sqlite-query-'));
const rheo = new Rheo(sqliteBackend({ database: join(dir, 'q.db') }));
const STREAM = 'q';

/** Values that JSON text, SQLite's JSON functions and JavaScript could each read differently. */
const VALUES: JsonValue[] = [
  'plain',
  '',
  'quote " and \\ backslash',
  'tab\tnew\nline',
  'nul \u0000 inside',
  'caf\u00e9 \u{1F30D} \u2028',
  '1',
  'true',
  'null',
  '{"a":1}',
  0,
  -0,
  1,
  -1,
  0.1,
  0.1 + 0.2,
  1e21,
  1e-7,
  2 ** 53,
  2 ** 53 + 2,
  1.2345678901234567e19, // an integer past 2^53: JSON text "12345678901234567000"
  -987654321.125,
  true,
  false,
  null,
  { a: 1, b: { c: [1, 2] } },
  { b: { c: [1, 2] }, a: 1 },
  { a: 1 },
  {},
  [],
  [1, 2],
  [2, 1],
  [{ a: 1 }],
];

const KEYS = ['k', '', 'with space', 'dot.ted', 'quo"te', 'back\\slash', '__proto__', '$', 'caf\u00e9', 'ctl\u0001'];

/** Payload i holds VALUES[i] under every key (some keys missing on some events), metadata a few of them. */
function payloadOf(i: number): Record<string, JsonValue> {
  const out: Record<string, JsonValue> = {};
  KEYS.forEach((k, j) => {
    if ((i + j) % 7 !== 3) Object.defineProperty(out, k, { value: VALUES[(i + j) % VALUES.length], enumerable: true, writable: true });
  });
  return out;
}

let all: RheoEvent[] = [];

beforeAll(async () => {
  await rheo.createStream(STREAM, { partitions: 3 });
  const inputs = VALUES.map((_, i) => ({
    partition: i % 3,
    payload: payloadOf(i),
    metadata: { correlationId: `c${i % 4}`, n: VALUES[(i * 5) % VALUES.length], flag: i % 2 === 0 },
  }));
  // Twice, so that every value matches more than one event.
  await rheo.appendBatch(STREAM, inputs);
  await rheo.appendBatch(STREAM, inputs);
  for (const p of [0, 1, 2]) all.push(...(await rheo.read(STREAM, { partition: p, limit: 1000 })));
  all = all.sort((a, b) => a.sequence - b.sequence || a.partition - b.partition);
});

afterAll(async () => {
  await rheo.close();
  rmSync(dir, { recursive: true, force: true });
});

/** What the query must return: the JavaScript filter over every event, in query order. */
function expected(where: QueryWhere, order: 'asc' | 'desc'): string[] {
  const f = jsonFieldsFilter(where)!;
  const ids = all.filter((e) => f(e.metadata, e.payload)).map((e) => e.id);
  return order === 'asc' ? ids : ids.reverse();
}

async function queried(where: QueryWhere, order: 'asc' | 'desc', limit: number): Promise<string[]> {
  const ids: string[] = [];
  for await (const e of rheo.queryStream({ stream: STREAM, where, order, limit })) ids.push(e.id);
  return ids;
}

describe('sqlite query: payload and metadata filters narrowed in SQL', () => {
  it('returns exactly what the JavaScript filter matches, for every value under every key, in both orders and page sizes', async () => {
    let matched = 0;
    for (const key of KEYS) {
      for (const value of VALUES) {
        const where = { payload: { [key]: value } };
        Object.defineProperty(where.payload, key, { value, enumerable: true }); // __proto__ as an own key
        for (const [order, limit] of [
          ['asc', 1000],
          ['desc', 3],
        ] as const) {
          const want = expected(where, order);
          expect({ key, value, order, got: await queried(where, order, limit) }).toEqual({ key, value, order, got: want });
          matched += want.length;
        }
      }
    }
    expect(matched).toBeGreaterThan(KEYS.length * VALUES.length); // the filters do match events: the test is not vacuous
  });

  it('treats a missing key, null, false, 0 and "" as different values', async () => {
    for (const value of [null, false, 0, '', [], {}] as JsonValue[]) {
      const where = { payload: { k: value } };
      const got = await queried(where, 'asc', 1000);
      expect(got).toEqual(expected(where, 'asc'));
      for (const e of all.filter((x) => got.includes(x.id))) expect(Object.hasOwn(e.payload as object, 'k')).toBe(true);
    }
  });

  it('combines metadata and payload filters with the column filters', async () => {
    for (const value of VALUES) {
      const where: QueryWhere = { metadata: { n: value, flag: true }, payload: { k: VALUES[0] }, partition: 1 };
      const f = jsonFieldsFilter(where)!;
      const want = all.filter((e) => e.partition === 1 && f(e.metadata, e.payload)).map((e) => e.id);
      expect(await queried(where, 'asc', 2)).toEqual(want);
      const loose: QueryWhere = { metadata: { n: value } };
      expect(await queried(loose, 'asc', 1000)).toEqual(expected(loose, 'asc'));
    }
  });

  it('matches nested objects whatever their key order, and arrays only in their order', async () => {
    const reordered = { payload: { k: { b: { c: [1, 2] }, a: 1 } } };
    const got = await queried(reordered, 'asc', 1000);
    expect(got.length).toBeGreaterThan(0);
    expect(got).toEqual(expected(reordered, 'asc'));
    const swapped = { payload: { k: [2, 1] } };
    expect(await queried(swapped, 'asc', 1000)).toEqual(expected(swapped, 'asc'));
  });
});
