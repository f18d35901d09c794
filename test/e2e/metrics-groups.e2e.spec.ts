import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Controller, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Registry } from 'prom-client';
import {
  type Backend,
  memoryBackend,
  postgresBackend,
  redisBackend,
  Rheo,
  RheoClient,
  RheoConsumer,
  RheoModule,
  type RheoModuleOptions,
  RheoServer,
  sqliteBackend,
} from '../../lib';
import { deleteKeys, freshPrefix, REDIS_URL } from '../redis/support';
import { dropSchema, freshSchema, PG_URL } from '../sql/pg-helpers';
import { parseExposition as parse } from './support';

// The metrics of an app on a store that holds many more groups than the app's
// own (SQLite): which groups get gauges, and what the append counters count,
// on every backend.

/** The (stream, group) pairs a gauge has a series for, as `stream/group`, sorted. */
function gaugeGroups(text: string, gauge = 'rheo_group_lag'): string[] {
  const out: string[] = [];
  for (const key of parse(text).keys()) {
    const m = new RegExp(`^${gauge}\\{stream="([^"]*)",group="([^"]*)"\\}$`).exec(key);
    if (m) out.push(`${m[1]}/${m[2]}`);
  }
  return out.sort();
}

@Controller()
class Consumers {
  @RheoConsumer({ stream: 'orders', group: 'billing', pollMs: 20 })
  onOrder() {}

  @RheoConsumer({ stream: 'trades', group: 'risk', pollMs: 20 })
  onTrade() {}
}

async function boot(backend: Backend, metrics: RheoModuleOptions['metrics'], withConsumers: boolean): Promise<INestApplication> {
  const ref = await Test.createTestingModule({
    imports: [RheoModule.forRoot({ backend, streams: [{ name: 'orders' }], metrics })],
    controllers: withConsumers ? [Consumers] : [],
  }).compile();
  const app = ref.createNestApplication({ logger: false });
  if (withConsumers) app.connectMicroservice({ strategy: app.get(RheoServer) }, { inheritAppConfig: true });
  await app.init();
  if (withConsumers) await app.startAllMicroservices();
  return app;
}

describe('group gauges on a store of many groups (SQLite)', () => {
  const SEEDED = 300;
  const dir = mkdtempSync(join(tmpdir(), 'rheo-metrics-groups-'));
  const file = join(dir, 'store.db');
  const opened: INestApplication[] = [];

  beforeAll(async () => {
    const rheo = new Rheo(sqliteBackend({ database: file }));
    for (let i = 0; i < SEEDED; i++) {
      const stream = `s${String(i).padStart(3, '0')}`;
      await rheo.createStream(stream);
      await rheo.createGroup(stream, 'g');
    }
    // orders: declared by the app; audit is another app's group on it. trades: only consumed here (risk);
    // its group `other` is neither declared nor consumed by this app.
    await rheo.createStream('orders');
    await rheo.createGroup('orders', 'audit');
    await rheo.createStream('trades');
    await rheo.createGroup('trades', 'other');
    await rheo.close();
  });

  afterAll(async () => {
    for (const app of opened) await app.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function scrape(metrics: Record<string, unknown>): Promise<string> {
    const registry = new Registry();
    const app = await boot(sqliteBackend({ database: file }), { registry, ...metrics }, true);
    opened.push(app);
    return registry.metrics();
  }

  it("by default, gauges only the groups of the app's declared streams and the groups it consumes", async () => {
    const text = await scrape({});
    expect(gaugeGroups(text)).toEqual(['orders/audit', 'orders/billing', 'trades/risk']);
    for (const gauge of ['rheo_group_inflight', 'rheo_group_dead_letters', 'rheo_group_oldest_unsettled_age_seconds'])
      expect(gaugeGroups(text, gauge)).toEqual(['orders/audit', 'orders/billing', 'trades/risk']);
  });

  it("with groups: 'all', gauges every group of the store", async () => {
    const groups = gaugeGroups(await scrape({ groups: 'all' }));
    expect(groups).toHaveLength(SEEDED + 4);
    expect(groups).toEqual(expect.arrayContaining(['s000/g', 's299/g', 'orders/audit', 'orders/billing', 'trades/other', 'trades/risk']));
  });

  it("with a list of 'stream/group', gauges exactly those that exist", async () => {
    const text = await scrape({ groups: ['s007/g', 'trades/other', 'nope/x', 's008/missing'] });
    expect(gaugeGroups(text)).toEqual(['s007/g', 'trades/other']);
  });
});

// An idempotent repeat (an id the stream holds, or one given twice in a batch) stores nothing: the
// appended counter counts stored events only, the repeats counter the rest.
const STORES: Array<{ name: string; make: () => Backend; cleanup?: () => Promise<unknown> }> = (() => {
  const schema = freshSchema('metrics_repeats');
  const prefix = freshPrefix('metrics-repeats');
  const dir = mkdtempSync(join(tmpdir(), 'rheo-metrics-repeats-'));
  return [
    { name: 'memory', make: () => memoryBackend() },
    {
      name: 'sqlite',
      make: () => sqliteBackend({ database: join(dir, 'store.db') }),
      cleanup: async () => rmSync(dir, { recursive: true, force: true }),
    },
    { name: 'postgres', make: () => postgresBackend({ url: PG_URL, schema, poolSize: 2 }), cleanup: () => dropSchema(schema) },
    { name: 'redis', make: () => redisBackend({ url: REDIS_URL, prefix }), cleanup: () => deleteKeys(prefix) },
  ];
})();

describe.each(STORES)('append counters on $name', ({ make, cleanup }) => {
  let app: INestApplication;
  const registry = new Registry();

  beforeAll(async () => {
    app = await boot(make(), { registry }, false);
  });

  afterAll(async () => {
    await app?.close();
    await cleanup?.();
  });

  it('count stored events, and idempotent repeats apart', async () => {
    const client = app.get(RheoClient);
    await client.append('orders', { id: 'x', payload: 1 });
    await client.append('orders', { id: 'x', payload: 1 }); // a retried append: stored before
    await client.appendBatch('orders', [
      { id: 'a', payload: 2 },
      { id: 'a', payload: 2 }, // twice in one batch
      { id: 'x', payload: 1 }, // stored before
      { id: 'b', payload: 3 },
    ]);
    for (let n = 0; n < 8; n++) await client.append('orders', { payload: n });
    const stored = (await app.get(Rheo).read('orders', { limit: 1000 })).length;
    expect(stored).toBe(11);
    const m = parse(await registry.metrics());
    expect(m.get('rheo_appended_events_total{stream="orders"}')).toBe(stored);
    expect(m.get('rheo_append_repeats_total{stream="orders"}')).toBe(3);
  });
});
