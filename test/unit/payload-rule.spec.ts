import { ManualClock, Rheo, RheoError } from '../../lib';
import { MemoryBackend } from '../../lib/backends/memory/memory-backend';
import { checkPayload, jsonPayload } from '../../lib/core/validate';
import { Money } from '../support/money';

/**
 * The payload rule (docs/payloads-and-limits.md): a payload is accepted when
 * JSON.stringify represents it faithfully (class instances by their own
 * enumerable properties, toJSON, undefined properties dropped), and refused with
 * the field named where JSON.stringify would silently change it or throw. The
 * appended event carries the payload as stored, what a read returns.
 */

class Line {
  sku = 'a-1';
  quantity = 2;
  note?: string = undefined;
  price = new Money(5, 'EUR');
  get total(): number {
    return this.quantity * 2;
  }
  describe(): string {
    return this.sku;
  }
}

class OrderDto {
  id = 'o-1';
  placedAt = new Date(Date.UTC(2026, 4, 1, 12));
  coupon: string | undefined = undefined;
  lines = [new Line(), new Line()];
  tags = ['new'];
  nested = { deep: { at: new Date(0), missing: undefined } };
}

let rheo: Rheo;

beforeEach(async () => {
  rheo = new Rheo(new MemoryBackend({ clock: new ManualClock(Date.UTC(2026, 0, 1)) }));
  await rheo.createStream('s');
});

const stored = (value: unknown) => JSON.parse(JSON.stringify(value)) as unknown;

describe('what JSON.stringify represents faithfully is accepted, as JSON makes it', () => {
  it.each<[string, unknown]>([
    ['a DTO class instance with Date fields, undefined properties and nested instances', new OrderDto()],
    ['a class instance at the top', new Line()],
    ['a Date payload (its ISO string)', new Date(Date.UTC(2026, 0, 2))],
    ['an object with toJSON', { at: { toJSON: () => ({ wrapped: true }) } }],
    ['undefined properties dropped', { a: 1, b: undefined, c: { d: undefined } }],
    ['a prototype-less object with a Date', Object.assign(Object.create(null) as object, { at: new Date(5) })],
    ['boxed primitives', { n: Object(3), s: Object('x'), b: Object(false) }],
    ['a Buffer (its toJSON)', { bytes: Buffer.from('hi') }],
  ])('%s', async (_, payload) => {
    const event = await rheo.append('s', { payload: payload as never });
    expect(event.payload).toEqual(stored(payload));
    // The appended event is the stored one: a read gives back the same payload.
    const [read] = await rheo.read('s');
    expect(read.payload).toEqual(event.payload);
    expect(JSON.stringify(event.payload)).toBe(JSON.stringify(payload));
  });

  it('calls each toJSON once, with its key, as JSON.stringify does', async () => {
    const keys: string[] = [];
    const spy = (v: string) => ({ toJSON: (key: string) => (keys.push(key), v) });
    const event = await rheo.append('s', { payload: { a: spy('x'), list: [spy('y')] } as never });
    expect(event.payload).toEqual({ a: 'x', list: ['y'] });
    expect(keys).toEqual(['a', '0']);
  });

  it('appendBatch stores each DTO as JSON makes it, and a query by the stored value finds it', async () => {
    const [a, b] = await rheo.appendBatch('s', [{ payload: new OrderDto() as never }, { payload: { plain: 1 } }]);
    expect(a.payload).toEqual(stored(new OrderDto()));
    expect(b.payload).toEqual({ plain: 1 });
    const found = await rheo.query({ stream: 's', where: { payload: { placedAt: '2026-05-01T12:00:00.000Z' } } });
    expect(found.map((e) => e.id)).toEqual([a.id]);
  });

  it('leaves a plain JSON payload as it is: no copy is made to check it', () => {
    const flat = { a: 1, b: 'x' };
    const nested = { a: [1, { b: null }], c: { d: 'e' } };
    expect(jsonPayload('p', flat)).toBe(flat);
    expect(jsonPayload('p', nested)).toBe(nested);
    const withDate = { a: [1, { b: null }], c: { d: new Date(0) } };
    const copy = jsonPayload('p', withDate) as { a: unknown; c: unknown };
    expect(copy).toEqual({ a: [1, { b: null }], c: { d: '1970-01-01T00:00:00.000Z' } });
    // Only what changed is new; the unchanged branch is shared, the caller's value untouched.
    expect(copy.a).toBe(withDate.a);
    expect(withDate.c.d).toBeInstanceOf(Date);
  });

  it('keeps a __proto__ key as an own property when a copy is made', () => {
    const value = JSON.parse('{"__proto__":{"x":1},"at":null}') as Record<string, unknown>;
    value.at = new Date(0);
    const copy = jsonPayload('p', value) as Record<string, unknown>;
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
    expect(Object.keys(copy)).toEqual(['__proto__', 'at']);
    expect(checkPayload('p', value, 1000)).toBe('{"__proto__":{"x":1},"at":"1970-01-01T00:00:00.000Z"}');
  });
});

describe('what JSON.stringify would silently change or throw on is refused, naming the field', () => {
  const cycle: Record<string, unknown> = { a: 1 };
  cycle.self = { back: cycle };
  class WithFn {
    n = 1;
    f = () => 1;
  }
  it.each<[string, unknown, string]>([
    ['a BigInt field of a DTO', Object.assign(new Line(), { big: BigInt(1) }), 'event.payload.big'],
    ['NaN in a DTO', Object.assign(new Line(), { quantity: NaN }), 'event.payload.quantity'],
    ['Infinity from a toJSON', { m: { toJSON: () => Infinity } }, 'event.payload.m'],
    ['-Infinity in an array', [1, -Infinity], 'event.payload[1]'],
    ['an own function property', new WithFn(), 'event.payload.f'],
    ['a symbol value', { s: Symbol('x') }, 'event.payload.s'],
    ['a cycle through a DTO', Object.assign(new Line(), { up: cycle }), 'event.payload.up.self.back'],
    ['a lone surrogate in a DTO', Object.assign(new Line(), { sku: '\ud83d' }), 'event.payload.sku'],
    ['a lone surrogate from a toJSON', { t: { toJSON: () => 'x\udc00' } }, 'event.payload.t'],
    ['an invalid Date (JSON.stringify writes null)', { at: new Date(NaN) }, 'event.payload.at'],
    ['undefined in an array (JSON.stringify writes null)', [new Line(), undefined], 'event.payload[1]'],
    ['a toJSON returning undefined in an array', [{ toJSON: () => undefined }], 'event.payload[0]'],
    ['a Map (JSON.stringify writes {})', { m: new Map([['a', 1]]) }, 'event.payload.m'],
    ['a Set', { s: new Set([1]) }, 'event.payload.s'],
    ['a RegExp', { r: /x/ }, 'event.payload.r'],
    ['an Error', { e: new Error('boom') }, 'event.payload.e'],
    ['a typed array', { t: new Uint8Array(2) }, 'event.payload.t'],
    ['a boxed BigInt', { b: Object(BigInt(1)) }, 'event.payload.b'],
    ['a toJSON that returns undefined at the top', { toJSON: () => undefined }, 'event.payload'],
  ])('%s', async (_, payload, field) => {
    const caught = await rheo.append('s', { payload: payload as never }).catch((e: unknown) => e);
    expect(caught).toBeInstanceOf(RheoError);
    expect({ code: (caught as RheoError).code, field: (caught as RheoError).field }).toEqual({ code: 'invalid_argument', field });
    expect(await rheo.read('s')).toEqual([]);
  });

  it('bounds the size of what JSON makes of a DTO', async () => {
    const small = new Rheo(rheo.backend, { maxPayloadBytes: 40 });
    const dto = { at: new Date(0), pad: 'x'.repeat(8) }; // {"at":"1970-01-01T00:00:00.000Z","pad":"xxxxxxxx"}: 50 bytes
    await expect(small.append('s', { payload: dto })).rejects.toMatchObject({ code: 'payload_too_large', field: 'event.payload' });
  });
});
