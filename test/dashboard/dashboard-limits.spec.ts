import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Rheo, RheoDashboardModule, RheoModule, sqliteBackend } from '../../lib';
import { MAX_FILTER_KEYS } from '../../lib/core/limits';
import { ACTION, type Adapter, call, type DashboardApp, serveDashboard } from './apps';

// A replay `where` past the query filter limits is the caller's fault: 400 naming
// the field, on SQLite too, which refused a statement of ~500 filter keys ("Expression
// tree is too large") and so answered 500. Nothing is replayed.

const GROUP_URL = '/rheo/api/streams/orders/groups/billing';
const dir = mkdtempSync(join(tmpdir(), 'rheo-dashboard-limits-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe.each<Adapter>(['express', 'fastify'])('dashboard replay where on SQLite, %s', (adapter) => {
  let s: DashboardApp;
  let rheo: Rheo;
  beforeAll(async () => {
    s = await serveDashboard(adapter, {
      imports: [
        RheoModule.forRoot({ backend: sqliteBackend({ database: join(dir, `${adapter}.db`) }), streams: [{ name: 'orders' }] }),
        RheoDashboardModule.forRoot({ readOnly: false }),
      ],
    });
    rheo = s.app.get(Rheo);
    await rheo.createGroup('orders', 'billing');
    await rheo.append('orders', { payload: { k0: 'v0' } });
    for (const lease of await rheo.fetch('orders', 'billing')) await rheo.ack(lease);
  });
  afterAll(() => s?.app.close());

  const replay = (where: unknown) => call(s.url, `${GROUP_URL}/replay`, { method: 'POST', body: { where }, headers: ACTION });
  const keys = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, `v${i}`]));

  it('answers 400 for 500 filter keys, and for one over the limit, replaying nothing', async () => {
    for (const n of [500, MAX_FILTER_KEYS + 1]) {
      const res = await replay({ payload: keys(n) });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({
        statusCode: 400,
        error: 'invalid_argument',
        message: `query.where must hold at most ${MAX_FILTER_KEYS} metadata and payload filter keys in all (it holds ${n})`,
        field: 'query.where',
      });
    }
    expect(await rheo.lag('orders', 'billing')).toMatchObject({ lag: 0 });
  });

  it('answers 400 for a filter too deep or too large', async () => {
    const deep = await replay({ metadata: { a: [[[[[[[[['x']]]]]]]]] } });
    expect(deep).toMatchObject({
      status: 400,
      body: { error: 'invalid_argument', field: 'query.where.metadata.a[0][0][0][0][0][0][0][0]' },
    });
    const large = await replay({ payload: { a: 'x'.repeat(20_000) } });
    expect(large).toMatchObject({ status: 400, body: { error: 'invalid_argument', field: 'query.where' } });
  });

  it('replays by a filter within the limits', async () => {
    expect(await replay({ payload: { k0: 'v0' } })).toMatchObject({ status: 200, body: { replayed: 1 } });
  });
});
