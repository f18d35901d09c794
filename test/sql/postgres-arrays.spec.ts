import type { DataSource } from 'typeorm';
import { boolArray, intArray, textArray } from '../../lib/backends/postgres/arrays';
import { pgDataSource } from './pg-helpers';

// The backend builds its array parameters itself (lib/backends/postgres/arrays.ts):
// each literal must reach PostgreSQL as exactly the values it was built from.
describe('postgres array literals', () => {
  let ds: DataSource;
  beforeAll(async () => {
    ds = await pgDataSource(1);
  });
  afterAll(async () => {
    await ds.destroy();
  });

  async function roundTrip<T>(literal: string, type: string): Promise<T[]> {
    const [row] = (await ds.query(`SELECT $1::${type} AS v`, [literal])) as Array<{ v: T[] }>;
    return row.v;
  }

  it('texts arrive as themselves, whatever they hold', async () => {
    const values = [
      '',
      'NULL',
      'null',
      ' spaced out ',
      'a,b',
      '{braces}',
      'quote " inside',
      'back\\slash',
      '\\"both\\"',
      'tab\tand\nnewline',
      'ünïcödé ✓ 😀',
      'orders',
      'l-123.4',
    ];
    expect(await roundTrip<string>(textArray(values), 'text[]')).toEqual(values);
  });

  it('an empty list is an empty array', async () => {
    expect(await roundTrip<string>(textArray([]), 'text[]')).toEqual([]);
    expect(await roundTrip<number>(intArray([]), 'int[]')).toEqual([]);
    expect(await roundTrip<boolean>(boolArray([]), 'bool[]')).toEqual([]);
  });

  it('integers keep their value, negative and beyond 32 bits included', async () => {
    const small = [0, 1, -1, 2147483647, -2147483648];
    expect(await roundTrip<number>(intArray(small), 'int[]')).toEqual(small);
    const big = [0, -1, Date.now(), Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER];
    // pg returns bigint as text
    expect((await roundTrip<string>(intArray(big), 'bigint[]')).map(Number)).toEqual(big);
  });

  it('booleans', async () => {
    const values = [true, false, false, true];
    expect(await roundTrip<boolean>(boolArray(values), 'bool[]')).toEqual(values);
  });

  it('a value that is not an integer is refused by the server, as the driver literal was', async () => {
    await expect(roundTrip<number>(intArray([1.5]), 'int[]')).rejects.toThrow(/invalid input syntax/);
  });
});
