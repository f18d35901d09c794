import { RheoError } from '../../lib';
import { checkPayload } from '../../lib/core/validate';

/**
 * checkPayload tests a flat object of scalars without the full walk (validate.ts
 * isFlatJsonObject). Every flat-object edge must still be decided, and reported,
 * exactly as the full walk does: the same JSON text, or the same error and field.
 */

class Quote {
  bid = 1;
}

function errorOf(fn: () => unknown): { code: string; message: string; field?: unknown } | 'accepted' {
  try {
    fn();
    return 'accepted';
  } catch (err) {
    expect(err).toBeInstanceOf(RheoError);
    const e = err as RheoError;
    return { code: e.code, message: e.message, field: e.field };
  }
}

describe('checkPayload on flat objects', () => {
  it.each<[string, unknown]>([
    ['scalars of every kind', { s: 'x', n: -0, f: 1.5, t: true, f2: false, z: null }],
    ['an empty object', {}],
    ['a prototype-less object', Object.assign(Object.create(null) as object, { a: 1 })],
    ['a non-ASCII key and value', { é: '😀' }],
    // Not flat JSON: the full walk accepts them as JSON.stringify writes them (the payload rule).
    ['an undefined value (dropped)', { a: 1, b: undefined }],
    ['a class instance (its own properties)', new Quote()],
    ['a Date value (its ISO string)', { a: new Date(0) }],
  ])('accepts %s and returns JSON.stringify of it', (_, value) => {
    expect(checkPayload('p', value, 1 << 20)).toBe(JSON.stringify(value));
  });

  it.each<[string, unknown, string, string]>([
    ['a lone surrogate value', { a: '\ud800' }, 'invalid_argument', 'p.a'],
    ['a lone surrogate key', { '\udc00': 1 }, 'invalid_argument', 'p key "\\udc00"'],
    ['NaN', { a: NaN }, 'invalid_argument', 'p.a'],
    ['Infinity', { a: 1, b: Infinity }, 'invalid_argument', 'p.b'],
    ['a function', { a: () => 1 }, 'invalid_argument', 'p.a'],
    ['a BigInt', { a: BigInt(1) }, 'invalid_argument', 'p.a'],
    ['a symbol', { a: Symbol('x') }, 'invalid_argument', 'p.a'],
    ['an invalid Date value', { a: new Date(NaN) }, 'invalid_argument', 'p.a'],
  ])('rejects %s as the full walk does', (_, value, code, field) => {
    const got = errorOf(() => checkPayload('p', value, 1 << 20));
    expect(got).toMatchObject({ code, field });
  });

  it('still counts the size of a flat object', () => {
    expect(errorOf(() => checkPayload('p', { big: 'x'.repeat(100) }, 50))).toMatchObject({ code: 'payload_too_large', field: 'p' });
  });
});
