import { types } from 'node:util';
import { RheoError } from './errors';
import type { JsonValue } from './types';

import { MAX_NAME_LENGTH } from './limits';

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;

/**
 * True when `value` passes {@link checkName}. For hot paths whose field names are
 * built per item (`events[17].key`): they test first and build the name, and call
 * checkName for its error, only when the test fails.
 */
export function isName(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0 && value.length <= MAX_NAME_LENGTH && !CONTROL.test(value) && value.isWellFormed();
}

/** A stream, group, consumer id, event id, key or type: non-empty, bounded, no control characters. */
export function checkName(field: string, value: unknown): string {
  if (typeof value !== 'string') throw RheoError.invalid(field, 'must be a string');
  if (value.length === 0) throw RheoError.invalid(field, 'must not be empty');
  if (value.length > MAX_NAME_LENGTH) throw RheoError.invalid(field, `must be at most ${MAX_NAME_LENGTH} characters`);
  if (CONTROL.test(value)) throw RheoError.invalid(field, 'must not contain control characters');
  checkWellFormed(field, value);
  return value;
}

/**
 * The name of a stream or group about to be created: a {@link checkName} name
 * without `/`. Configuration, health and metrics key a consumer by
 * `'stream/group'`, which a `/` in either name would make ambiguous. Only
 * creation checks it: a stream or group that already has one keeps working.
 */
export function checkNewName(field: string, value: unknown): string {
  checkName(field, value);
  if ((value as string).includes('/'))
    throw RheoError.invalid(field, "must not contain '/' (a consumer is keyed by 'stream/group' in configuration, health and metrics)");
  return value as string;
}

/**
 * Strings must be well-formed Unicode: a lone surrogate (what `.slice()` through
 * an emoji leaves) has no UTF-8 encoding, so stores replace it and two different
 * strings would become one (two ids colliding, one event lost).
 */
export function checkWellFormed(field: string, value: string): string {
  if (!value.isWellFormed()) throw RheoError.invalid(field, 'must be well-formed Unicode (it contains a lone surrogate)');
  return value;
}

/** Text an operator typed (a reason, a name): a non-empty, well-formed string of at most `max` characters, refused whole, never cut. */
export function checkOperatorText(field: string, value: unknown, max: number): string {
  if (typeof value !== 'string' || value.length === 0) throw RheoError.invalid(field, 'must be a non-empty string');
  if (value.length > max) throw RheoError.invalid(field, `must be at most ${max} characters (it has ${value.length})`);
  return checkWellFormed(field, value);
}

/** Keys no user object may carry: assigning them changes a prototype instead of storing a value. */
const FORBIDDEN_KEYS = new Set(['__proto__']);

/** A boolean. */
export function checkBoolean(field: string, value: unknown): boolean {
  if (typeof value !== 'boolean') throw RheoError.invalid(field, 'must be a boolean');
  return value;
}

/** An integer in [min, max]. */
export function checkInt(field: string, value: unknown, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (typeof value !== 'number' || !Number.isInteger(value)) throw RheoError.invalid(field, 'must be an integer');
  if (value < min || value > max) {
    throw RheoError.invalid(field, max === Number.MAX_SAFE_INTEGER ? `must be >= ${min}` : `must be between ${min} and ${max}`);
  }
  return value;
}

/** A valid Date. */
export function checkDate(field: string, value: unknown): Date {
  if (!(value instanceof Date) || Number.isNaN(value.getTime())) throw RheoError.invalid(field, 'must be a valid Date');
  return value;
}

/** True when `value` passes {@link checkObject} (see {@link isName} for why). */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** A plain object (not an array, not null, not a class instance). */
export function checkObject(field: string, value: unknown): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw RheoError.invalid(field, 'must be an object');
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) throw RheoError.invalid(field, 'must be a plain object');
  return value as Record<string, unknown>;
}

/** The keys one kind of object may have, and what a key of it is called in a refusal (`a fetch option`). */
export interface KeySet {
  readonly what: string;
  readonly keys: ReadonlySet<string>;
  /** The keys as the refusal lists them. */
  readonly list: string;
}

/** A {@link KeySet}, built once per kind of object (a module constant), so a check costs a lookup per key. */
export function keySet(what: string, keys: readonly string[]): KeySet {
  return Object.freeze({ what, keys: new Set(keys), list: keys.join(', ') });
}

/** True when every own key of `obj` is in `allowed`: the test of {@link checkKeys}, for callers that build the field name only on failure. */
export function hasOnlyKeys(obj: object, allowed: KeySet): boolean {
  for (const k in obj) if (!allowed.keys.has(k) && Object.prototype.hasOwnProperty.call(obj, k)) return false;
  return true;
}

/**
 * Refuse a key of `obj` that `allowed` does not hold: a typo (`deliverat`,
 * `leasems`) would otherwise be ignored and the option fall back to its default.
 * The field is `<field>.<key>` (the key alone when `field` is empty) and the
 * message lists the valid keys. Own enumerable keys, walked without allocating
 * (`for…in`, not `Object.keys`): it runs for every appended event and settle.
 */
export function checkKeys(field: string, obj: object, allowed: KeySet): void {
  for (const k in obj) {
    if (!allowed.keys.has(k) && Object.prototype.hasOwnProperty.call(obj, k)) {
      throw RheoError.invalid(field === '' ? k : `${field}.${k}`, `is not ${allowed.what} (use ${allowed.list})`);
    }
  }
}

/**
 * Where the walk of a JSON value is: the field it started from and the keys and
 * indexes below it. The field name an error reports is built from it only when
 * there is an error: on the append hot path every payload is walked, and building
 * a name per key cost more than the walk.
 */
class JsonPath {
  private readonly parts: Array<string | number> = [];

  constructor(private readonly root: string) {}

  push(part: string | number): void {
    this.parts.push(part);
  }

  pop(): void {
    this.parts.pop();
  }

  get field(): string {
    return this.root + this.parts.map((p) => (typeof p === 'number' ? `[${p}]` : `.${p}`)).join('');
  }
}

/** Deepest nesting of a payload or metadata value. */
const MAX_JSON_DEPTH = 64;

function checkJsonValue(path: JsonPath, value: unknown, depth: number, seen: Set<object>, maxDepth = MAX_JSON_DEPTH): void {
  if (value === null) return;
  switch (typeof value) {
    case 'string':
      if (!(value as string).isWellFormed()) checkWellFormed(path.field, value as string);
      return;
    case 'boolean':
      return;
    case 'number':
      if (!Number.isFinite(value)) throw RheoError.invalid(path.field, 'must be JSON: numbers must be finite');
      return;
    case 'object':
      break;
    default:
      throw RheoError.invalid(path.field, `must be JSON: ${typeof value} is not a JSON value`);
  }
  if (depth > maxDepth) throw RheoError.invalid(path.field, `must be JSON nested at most ${maxDepth} levels deep`);
  const obj = value as object;
  if (seen.has(obj)) throw RheoError.invalid(path.field, 'must be JSON: it contains a cycle');
  seen.add(obj);
  if (Array.isArray(obj)) {
    for (let i = 0; i < obj.length; i++) {
      path.push(i);
      checkJsonValue(path, obj[i], depth + 1, seen, maxDepth);
      path.pop();
    }
  } else {
    const proto = Object.getPrototypeOf(obj);
    if (proto !== Object.prototype && proto !== null) {
      throw RheoError.invalid(path.field, `must be JSON: ${obj.constructor?.name ?? 'object'} is not a plain object`);
    }
    for (const k of Object.keys(obj)) {
      if (!k.isWellFormed()) checkWellFormed(`${path.field} key ${JSON.stringify(k)}`, k);
      const v = (obj as Record<string, unknown>)[k];
      path.push(k);
      if (v === undefined) throw RheoError.invalid(path.field, 'must be JSON: undefined is not a JSON value');
      checkJsonValue(path, v, depth + 1, seen, maxDepth);
      path.pop();
    }
  }
  seen.delete(obj);
}

/**
 * True when `value` is a plain object whose keys are well-formed and whose values are
 * all valid JSON scalars: what checkJsonValue accepts without recursing, tested
 * without its path, cycle set or per-key bookkeeping. The usual payload has this
 * shape; anything else (a nested value, or an error to report) takes the full walk,
 * which decides and reports exactly as before.
 */
function isFlatJsonObject(value: unknown): boolean {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return false;
  for (const k of Object.keys(value)) {
    if (!k.isWellFormed()) return false;
    const v = (value as Record<string, unknown>)[k];
    switch (typeof v) {
      case 'string':
        if (!v.isWellFormed()) return false;
        break;
      case 'number':
        if (!Number.isFinite(v)) return false;
        break;
      case 'boolean':
        break;
      default:
        if (v !== null) return false;
    }
  }
  return true;
}

/**
 * `json`, the JSON text of `field`, when it is at most `maxBytes` of UTF-8;
 * `payload_too_large` otherwise. Bytes are counted only near the limit.
 */
export function checkJsonSize(field: string, json: string, maxBytes: number): string {
  // A UTF-16 code unit is at most 3 UTF-8 bytes: a text that short is under the limit without counting.
  if (json.length * 3 <= maxBytes) return json;
  const size = Buffer.byteLength(json);
  if (size > maxBytes) {
    throw new RheoError('payload_too_large', `${field} is ${size} bytes, over the limit of ${maxBytes}`, { field });
  }
  return json;
}

/**
 * The payload rule (docs/payloads-and-limits.md): a payload is what
 * JSON.stringify makes of it, when it represents the value faithfully. Class
 * instances count by their own enumerable properties, `toJSON` is called (once,
 * with its key, as JSON.stringify calls it), boxed primitives are unboxed and
 * properties whose value is undefined are dropped. Refused, naming the field:
 * what JSON.stringify would throw on (BigInt, cycles) or change without a word
 * (NaN and ±Infinity to null, functions and symbols dropped, undefined in an
 * array to null, a Map, Set, RegExp, Error or typed array to `{}`, an invalid Date
 * to null), and lone surrogates (ADR 013).
 *
 * Returns `value` itself when it is plain JSON already (no copy, so the usual
 * payload costs no allocation); otherwise the plain JSON value, sharing every
 * unchanged branch with `value`: what the store keeps and the append returns.
 */
export function jsonPayload(field: string, value: unknown): JsonValue {
  if (value === undefined) throw RheoError.invalid(field, 'is required');
  if (isFlatJsonObject(value)) return value as JsonValue;
  const out = toJsonValue(new JsonPath(field), value, '', 0, new Set());
  if (out === undefined) throw RheoError.invalid(field, 'must be JSON: its toJSON() returned undefined');
  return out as JsonValue;
}

/** A payload ({@link jsonPayload}) whose JSON text is at most `maxBytes`; returns that text, which backends store as is. */
export function checkPayload(field: string, value: unknown, maxBytes: number): string {
  return checkJsonSize(field, JSON.stringify(jsonPayload(field, value)), maxBytes);
}

/** Set `key` on a fresh copy: `__proto__` as an own property, as JSON.parse makes it, not as the prototype. */
function setOwn(obj: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
  else obj[key] = value;
}

/**
 * Objects whose contents sit where JSON.stringify does not look (internal slots,
 * not own properties): it writes them as `{}`. Named for the error; undefined
 * for any other object.
 */
function opaqueKind(obj: object): string | undefined {
  if (types.isMap(obj)) return 'a Map';
  if (types.isSet(obj)) return 'a Set';
  if (types.isWeakMap(obj) || types.isWeakSet(obj)) return 'a WeakMap or WeakSet';
  if (types.isRegExp(obj)) return 'a RegExp';
  if (types.isNativeError(obj)) return 'an Error';
  if (types.isPromise(obj)) return 'a Promise';
  if (types.isAnyArrayBuffer(obj) || types.isArrayBufferView(obj)) return 'binary data (an ArrayBuffer or a typed array)';
  return undefined;
}

/**
 * One value as JSON.stringify serialises it (SerializeJSONProperty): `toJSON`
 * first, then unboxing, then the value. Returns `value` itself when nothing
 * changes, undefined for what JSON.stringify omits (the holder decides whether
 * that is allowed), or the new value.
 */
function toJsonValue(path: JsonPath, value: unknown, key: string | number, depth: number, seen: Set<object>): unknown {
  switch (typeof value) {
    case 'string':
      if (!value.isWellFormed()) checkWellFormed(path.field, value);
      return value;
    case 'number':
      if (!Number.isFinite(value)) throw RheoError.invalid(path.field, 'must be JSON: numbers must be finite');
      return value;
    case 'boolean':
    case 'undefined':
      return value;
    case 'object':
      if (value === null) return null;
      break;
    default:
      throw RheoError.invalid(path.field, `must be JSON: ${typeof value} is not a JSON value`);
  }
  let obj = value as object;
  const toJSON = (obj as { toJSON?: unknown }).toJSON;
  if (typeof toJSON === 'function') {
    if (types.isDate(obj) && Number.isNaN(obj.getTime()))
      throw RheoError.invalid(path.field, 'must be JSON: an invalid Date has no JSON form');
    const replaced: unknown = toJSON.call(obj, typeof key === 'number' ? String(key) : key);
    // What toJSON returns is serialised as it is: its own toJSON is not called again.
    if (typeof replaced !== 'object' || replaced === null) return toJsonValue(path, replaced, key, depth, seen);
    obj = replaced;
  }
  const isArray = Array.isArray(obj);
  const proto = isArray ? null : Object.getPrototypeOf(obj);
  // Plain objects and arrays skip the built-in tests: the usual nested payload is nothing else.
  const plain = isArray || proto === Object.prototype || proto === null;
  if (!plain) {
    if (types.isBoxedPrimitive(obj)) {
      if (types.isNumberObject(obj) || types.isStringObject(obj) || types.isBooleanObject(obj))
        return toJsonValue(path, obj.valueOf(), key, depth, seen);
      throw RheoError.invalid(path.field, 'must be JSON: a boxed BigInt or Symbol is not a JSON value');
    }
    const opaque = opaqueKind(obj);
    if (opaque) throw RheoError.invalid(path.field, `must be JSON: ${opaque} is not a JSON value (JSON.stringify would write {})`);
  }
  if (depth > MAX_JSON_DEPTH) throw RheoError.invalid(path.field, `must be JSON nested at most ${MAX_JSON_DEPTH} levels deep`);
  if (seen.has(obj)) throw RheoError.invalid(path.field, 'must be JSON: it contains a cycle');
  seen.add(obj);
  const result = isArray ? toJsonArray(path, obj as unknown[], depth, seen) : toJsonObject(path, obj, depth, seen, !plain);
  seen.delete(obj);
  return result;
}

function toJsonArray(path: JsonPath, arr: unknown[], depth: number, seen: Set<object>): unknown[] {
  let out: unknown[] | undefined;
  for (let i = 0; i < arr.length; i++) {
    const v = arr[i];
    path.push(i);
    const w = toJsonValue(path, v, i, depth + 1, seen);
    if (w === undefined)
      throw RheoError.invalid(path.field, 'must be JSON: undefined in an array is not a JSON value (it would become null)');
    path.pop();
    if (out === undefined && w !== v) out = arr.slice(0, i);
    if (out !== undefined) out.push(w);
  }
  return out ?? arr;
}

function toJsonObject(path: JsonPath, obj: object, depth: number, seen: Set<object>, instance: boolean): object {
  const source = obj as Record<string, unknown>;
  // A class instance is always copied: the store keeps its own enumerable properties, on a plain object.
  let out: Record<string, unknown> | undefined = instance ? {} : undefined;
  const keys = Object.keys(obj);
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i];
    if (!k.isWellFormed()) checkWellFormed(`${path.field} key ${JSON.stringify(k)}`, k);
    const v = source[k];
    path.push(k);
    const w = toJsonValue(path, v, k, depth + 1, seen);
    path.pop();
    if (out === undefined && (w !== v || w === undefined)) {
      // The first change: a copy begins (an enumerable getter before it is read a second time, which JSON.stringify does not do).
      out = {};
      for (let j = 0; j < i; j++) setOwn(out, keys[j], source[keys[j]]);
    }
    if (out !== undefined && w !== undefined) setOwn(out, k, w);
  }
  return out ?? obj;
}

/**
 * A plain object of JSON values, walked by own keys only; undefined values are
 * dropped. Returns a copy without a prototype, so no key can reach one.
 */
export function checkJsonObject(field: string, value: unknown, maxDepth = MAX_JSON_DEPTH): Record<string, JsonValue> {
  const obj = checkObject(field, value);
  const out: Record<string, JsonValue> = Object.create(null);
  for (const [k, v] of Object.entries(obj)) {
    checkWellFormed(`${field} key ${JSON.stringify(k)}`, k);
    if (v === undefined) continue;
    checkJsonValue(new JsonPath(`${field}.${k}`), v, 1, new Set(), maxDepth);
    out[k] = v as JsonValue;
  }
  return out;
}

/**
 * Metadata: a plain object of JSON values; undefined values are dropped. The key
 * `__proto__` is refused: stored, read back and assigned, it would replace an
 * object's prototype instead of holding a value, so it cannot round-trip.
 */
export function checkMetadata(field: string, value: unknown, maxDepth = MAX_JSON_DEPTH): Record<string, JsonValue> {
  const obj = checkJsonObject(field, value, maxDepth);
  for (const k of Object.keys(obj)) {
    if (FORBIDDEN_KEYS.has(k)) throw RheoError.invalid(`${field}.${k}`, 'is not an allowed metadata key (it names the object prototype)');
  }
  return Object.assign({}, obj);
}
