// The limits on what callers hand in, on each real store: the facade refuses
// before the store is reached, so what the store would have made of the input
// (SQLite refusing a statement of 500 filter keys as "Expression tree is too
// large", PostgreSQL spending seconds on one, 50 MB of metadata) never happens,
// and nothing is written. And a payload that is not plain JSON (a DTO) is stored
// as JSON makes it: the append returns what a read returns, and a query by a
// stored value finds it (the SQL stores' per-event filter bits included).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type Backend,
  type JsonValue,
  ManualClock,
  postgresBackend,
  redisBackend,
  Rheo,
  type RheoErrorCode,
  sqliteBackend,
} from '../../lib';
import { MAX_DELAY_MS } from '../../lib/core/limits';
import { deleteKeys, freshPrefix, REDIS_URL } from '../redis/support';
import { dropSchema, freshSchema, PG_URL } from '../sql/pg-helpers';
import { Money } from '../support/money';
import { expectRefused } from '../support/refusals';

const START = Date.UTC(2026, 0, 1);
const dir = mkdtempSync(join(tmpdir(), 'rheo-hostile-'));
const cleanups: Array<() => Promise<unknown>> = [];

const STORES: Array<[string, (clock: ManualClock) => Backend]> = [
  ['sqlite', (clock) => sqliteBackend({ database: join(dir, 'store.db'), clock })],
  [
    'postgres',
    (clock) => {
      const schema = freshSchema('hostile');
      cleanups.push(() => dropSchema(schema));
      return postgresBackend({ url: PG_URL, schema, clock });
    },
  ],
  [
    'redis',
    (clock) => {
      const prefix = freshPrefix('hostile');
      cleanups.push(() => deleteKeys(prefix));
      return redisBackend({ url: REDIS_URL, prefix, clock });
    },
  ],
];

afterAll(async () => {
  for (const cleanup of cleanups) await cleanup();
  rmSync(dir, { recursive: true, force: true });
});

class OrderPlaced {
  orderId = 'o-1';
  placedAt = new Date(Date.UTC(2026, 4, 1, 12));
  coupon: string | undefined = undefined;
  total = new Money(12.5, 'EUR');
  lines = [{ sku: 'a', at: new Date(0) }];
}

describe.each(STORES)('input limits on %s', (_name, make) => {
  let rheo: Rheo;
  let backend: Backend;

  beforeAll(async () => {
    backend = make(new ManualClock(START));
    rheo = new Rheo(backend);
    await rheo.createStream('s', { partitions: 2 });
    await rheo.createGroup('s', 'g', { ordering: 'partition' });
    await rheo.append('s', { partition: 0, payload: { n: 0 } });
  });
  afterAll(() => rheo.close());

  const refused = (call: () => Promise<unknown>, code: RheoErrorCode, field: string) => expectRefused(rheo, call, code, field);

  it('refuses metadata over 64 KiB; 64 KiB is stored and read back whole', async () => {
    await refused(() => rheo.append('s', { payload: 1, metadata: { m: 'x'.repeat(65529) } }), 'payload_too_large', 'event.metadata');
    const big = { m: 'x'.repeat(65528) }; // {"m":"…"}: 65536 bytes
    const e = await rheo.append('s', { partition: 1, payload: 1, metadata: big });
    const [read] = await rheo.read('s', { partition: 1, afterSequence: e.sequence - 1, limit: 1 });
    expect(read.metadata).toEqual(big);
  });

  it('refuses an appendBatch over maxBatchBytes and writes none of it', async () => {
    const small = new Rheo(backend, { maxBatchBytes: 10_000 });
    const batch = Array.from({ length: 11 }, (_, i) => ({ payload: { i, pad: 'x'.repeat(900) } }));
    await refused(() => small.appendBatch('s', batch), 'payload_too_large', 'events');
    expect(await small.appendBatch('s', batch.slice(0, 10))).toHaveLength(10);
  });

  it('refuses a filter of 500 string keys (SQLite: "Expression tree is too large") as invalid_argument', async () => {
    const where = { payload: Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`k${i}`, `v${i}`])) };
    await refused(() => rheo.query({ stream: 's', where }), 'invalid_argument', 'query.where');
    await refused(() => rheo.replay('s', 'g', { query: { where } }), 'invalid_argument', 'query.where');
    const deep = { payload: { a: [[[[[[[[['x']]]]]]]]] } } as const;
    await refused(
      () => rheo.query({ stream: 's', where: deep as never }),
      'invalid_argument',
      'query.where.payload.a[0][0][0][0][0][0][0][0]',
    );
  });

  it('refuses a deliverAt past a year ahead: it would hold its partition (ordering: partition) for ever', async () => {
    await refused(
      () => rheo.append('s', { partition: 0, payload: 1, deliverAt: new Date(8.64e15) }),
      'invalid_argument',
      'event.deliverAt',
    );
    await refused(
      () => rheo.append('s', { partition: 0, payload: 1, deliverAt: new Date(START + MAX_DELAY_MS + 1) }),
      'invalid_argument',
      'event.deliverAt',
    );
    const e = await rheo.append('s', { partition: 0, payload: 1, deliverAt: new Date(START + MAX_DELAY_MS) });
    expect(e.deliverAt).toEqual(new Date(START + MAX_DELAY_MS));
  });

  it('stores a DTO as JSON makes it: append returns what a read returns, and a query by a stored value finds it', async () => {
    const dto = new OrderPlaced();
    const [appended] = await rheo.appendBatch<JsonValue>('s', [{ key: 'dto', type: 'order.placed', payload: dto as never }]);
    expect(appended.payload).toEqual({
      orderId: 'o-1',
      placedAt: '2026-05-01T12:00:00.000Z',
      total: '12.5 EUR',
      lines: [{ sku: 'a', at: '1970-01-01T00:00:00.000Z' }],
    });
    const [read] = await rheo.read('s', { partition: appended.partition, afterSequence: appended.sequence - 1, limit: 1 });
    expect(read).toEqual(appended);
    const found = await rheo.query({ stream: 's', where: { payload: { placedAt: '2026-05-01T12:00:00.000Z', total: '12.5 EUR' } } });
    expect(found.map((e) => e.id)).toEqual([appended.id]);
    // The same id again returns the stored event, as it was stored.
    expect((await rheo.append('s', { id: appended.id, payload: new OrderPlaced() as never })).payload).toEqual(appended.payload);
  });
});
