// The bits are stored with every event (SQLite and PostgreSQL): this hashing is a storage format, frozen like a released schema version.
// A small Bloom filter per event over its top-level scalar payload and metadata
// fields, stored in the query-order index (rheo_events_order). A query's equality
// filters on scalar values need their bits set, which the index answers on its
// own: the rows that cannot match are skipped without being read. Reading rows is
// what a selective filter costs (a 1-in-1000 filter reads 1000 rows per match,
// about 0.6 us each at a million events); walking the index is ten times cheaper.
//
// Only a prefilter: a false positive costs one row read, and the SQL and
// JavaScript checks after it decide. It must never drop a match: equal values
// (core's jsonEqual) hash alike, so 0 and -0 hash as one number.
import type { JsonValue, QueryWhere } from '../../core/types';

/** Bits of the filter: an integer JavaScript numbers and SQLite both hold exactly. */
const BITS = 52;
const LOW = 2 ** 32;

/** Every bit set: what a row with no filter computed (written before the filter existed) holds; it passes every test. */
export const ALL_BITS = -1;

const f64 = new Float64Array(1);
const u32 = new Uint32Array(f64.buffer);

function mixString(h: number, s: string): number {
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h;
}

/** FNV-1a over the column, the key and the value's type and contents. */
function fieldHash(column: number, key: string, value: null | boolean | number | string): number {
  let h = mixString(Math.imul(0x811c9dc5 ^ column, 0x01000193), key);
  if (value === null) return Math.imul(h ^ 0x6e, 0x01000193) >>> 0;
  switch (typeof value) {
    case 'boolean':
      return Math.imul(h ^ (value ? 0x74 : 0x66), 0x01000193) >>> 0;
    case 'number':
      f64[0] = value === 0 ? 0 : value; // -0 is 0 to jsonEqual
      h = Math.imul(h ^ 0x64, 0x01000193);
      h = Math.imul(h ^ u32[0], 0x01000193);
      return Math.imul(h ^ u32[1], 0x01000193) >>> 0;
    default:
      return mixString(Math.imul(h ^ 0x73, 0x01000193), value) >>> 0;
  }
}

// The filter being built, as low and high words (module state, not an object per
// event: this runs once per appended event). Synchronous, so never interleaved.
let lo = 0;
let hi = 0;

function setBit(bit: number): void {
  if (bit < 32) lo = (lo | (1 << bit)) >>> 0;
  else hi = (hi | (1 << (bit - 32))) >>> 0;
}

/** Two bits per field, from one hash (double hashing). */
function addFields(column: number, obj: unknown): void {
  if (typeof obj !== 'object' || obj === null || Array.isArray(obj)) return;
  for (const key of Object.keys(obj)) {
    const v = (obj as Record<string, JsonValue>)[key];
    if (typeof v === 'object' && v !== null) continue;
    const h = fieldHash(column, key, v);
    setBit(h % BITS);
    setBit((Math.imul(h, 0x9e3779b1) >>> 0) % BITS);
  }
}

const PAYLOAD = 1;
const METADATA = 2;

function build(metadata: unknown, payload: unknown): number {
  lo = 0;
  hi = 0;
  addFields(PAYLOAD, payload);
  addFields(METADATA, metadata);
  return hi * LOW + lo;
}

/** The filter of an event: every top-level scalar field of its payload (when an object) and of its metadata. */
export function eventBloom(metadata: object, payload: JsonValue): number {
  return build(metadata, payload);
}

/** The bits a query's scalar equality filters need, or null when it has none (objects and arrays are not hashed). */
export function queryBloom(where: QueryWhere): number | null {
  const v = build(where.metadata ?? null, where.payload ?? null);
  return v === 0 ? null : v;
}
