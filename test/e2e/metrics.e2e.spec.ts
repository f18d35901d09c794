import { channel } from 'node:diagnostics_channel';
import { Controller, Get, Header, type INestApplication, Inject } from '@nestjs/common';
import { Ctx, Payload } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import { register, Registry } from 'prom-client';
import request from 'supertest';
import {
  CHANNELS,
  getRheoClientToken,
  getRheoServerToken,
  memoryBackend,
  postgresBackend,
  RheoClient,
  RheoConsumer,
  RheoContext,
  RheoModule,
  RheoReject,
  RheoRetry,
  RheoServer,
} from '../../lib';
import { MARKET_EVENTS } from '../../sample/market';
import { dropSchema, freshSchema, PG_URL } from '../sql/pg-helpers';
import { parseExposition as parse, sampleApp } from './support';
import { until } from '../support/until';

// The /metrics of issue 11: a known workload on PostgreSQL, scraped over HTTP
// the way Prometheus does, with exact counter values and lag 0 at the end.

const REGISTRY = 'metrics registry';

/** GET /metrics from the registry the app registered on, as the docs wire it. */
@Controller()
class MetricsController {
  constructor(@Inject(REGISTRY) private readonly registry: Registry) {}

  @Get('metrics')
  @Header('Content-Type', 'text/plain; version=0.0.4; charset=utf-8')
  metrics(): Promise<string> {
    return this.registry.metrics();
  }
}

// Settles as the channel tells them, counted apart from the metrics: a workload
// is over when all its settles were told (the lag can reach 0 a moment before).
let settles = 0;
const countSettle = () => settles++;
beforeAll(() => channel(CHANNELS.settle).subscribe(countSettle));
afterAll(() => channel(CHANNELS.settle).unsubscribe(countSettle));

/**
 * billing: orders 0-6 ack, 7 and 8 retry once then ack, 9 is rejected.
 * audit (maxAttempts 1): 9 throws on its only attempt (a dead letter), the rest ack.
 */
@Controller()
class OrdersController {
  @RheoConsumer({ stream: 'orders', group: 'billing', pollMs: 20 })
  onBilling(@Payload() order: { n: number }, @Ctx() ctx: RheoContext) {
    if (order.n === 9) throw new RheoReject('order 9 is invalid');
    if ((order.n === 7 || order.n === 8) && ctx.attempt === 1) throw new RheoRetry('not yet', { delayMs: 1 });
  }

  @RheoConsumer({ stream: 'orders', group: 'audit', pollMs: 20, maxAttempts: 1 })
  onAudit(@Payload() order: { n: number }) {
    if (order.n === 9) throw new Error('audit store refused order 9');
  }
}

async function scrape(app: INestApplication): Promise<Map<string, number>> {
  const res = await request(app.getHttpServer()).get('/metrics').expect(200);
  expect(res.headers['content-type']).toMatch(/^text\/plain/);
  return parse(res.text);
}

describe('Prometheus metrics on PostgreSQL, scraped over HTTP', () => {
  const schema = freshSchema('metrics');
  const registry = new Registry();
  let app: INestApplication;

  beforeAll(async () => {
    const ref = await Test.createTestingModule({
      imports: [
        RheoModule.forRoot({
          backend: postgresBackend({ url: PG_URL, schema, poolSize: 3 }),
          streams: [{ name: 'orders', partitions: 2 }],
          metrics: { registry },
        }),
      ],
      controllers: [OrdersController, MetricsController],
      providers: [{ provide: REGISTRY, useValue: registry }],
    }).compile();
    app = ref.createNestApplication({ logger: false });
    app.connectMicroservice({ strategy: app.get(RheoServer) }, { inheritAppConfig: true });
    await app.init();
    await app.startAllMicroservices();
  });

  afterAll(async () => {
    await app?.close();
    await dropSchema(schema);
  });

  it('counts a known workload exactly and reads lag 0 at the end', async () => {
    const client = app.get(RheoClient);
    for (let n = 0; n < 4; n++) await client.append('orders', { key: `o${n}`, payload: { n } });
    await client.appendBatch(
      'orders',
      [4, 5, 6, 7, 8, 9].map((n) => ({ key: `o${n}`, payload: { n } })),
    );
    // billing settles 12 times (10 + 2 retries), audit 10.
    await until('every delivery settled', () => settles === 22);
    await until('lag 0', async () => (await client.lag('orders', 'billing')).lag + (await client.lag('orders', 'audit')).lag === 0);
    const m = await scrape(app);

    expect(m.get('rheo_appended_events_total{stream="orders"}')).toBe(10);
    const deliveries = (group: string, outcome: string) =>
      m.get(`rheo_deliveries_total{stream="orders",group="${group}",outcome="${outcome}"}`);
    expect([deliveries('billing', 'ack'), deliveries('billing', 'retry'), deliveries('billing', 'reject')]).toEqual([9, 2, 1]);
    expect(deliveries('billing', 'dead_letter')).toBeUndefined();
    expect([deliveries('audit', 'ack'), deliveries('audit', 'dead_letter')]).toEqual([9, 1]);
    expect(deliveries('audit', 'retry')).toBeUndefined();

    // One observation per handler run: billing ran 12 times (10 + 2 retries), audit 10.
    for (const [group, runs] of [
      ['billing', 12],
      ['audit', 10],
    ] as const) {
      expect(m.get(`rheo_handler_duration_seconds_count{stream="orders",group="${group}"}`)).toBe(runs);
      expect(m.get(`rheo_append_to_handler_seconds_count{stream="orders",group="${group}"}`)).toBe(runs);
      expect(m.get(`rheo_append_to_handler_seconds_bucket{le="+Inf",stream="orders",group="${group}"}`)).toBe(runs);
      expect(m.get(`rheo_group_lag{stream="orders",group="${group}"}`)).toBe(0);
      expect(m.get(`rheo_group_inflight{stream="orders",group="${group}"}`)).toBe(0);
      expect(m.get(`rheo_group_oldest_unsettled_age_seconds{stream="orders",group="${group}"}`)).toBe(0);
    }
    expect(m.get('rheo_group_dead_letters{stream="orders",group="billing"}')).toBe(1);
    expect(m.get('rheo_group_dead_letters{stream="orders",group="audit"}')).toBe(1);
  });
});

describe('metrics of two named instances in one app', () => {
  const registry = new Registry();
  let app: INestApplication;
  const seen: string[] = [];

  @Controller()
  class TwoStores {
    @RheoConsumer({ stream: 'trades', group: 'risk', pollMs: 10 })
    onTrade(@Payload() p: unknown, @Ctx() ctx: RheoContext) {
      seen.push(`trades:${ctx.event.id}`);
    }

    @RheoConsumer({ stream: 'audit-log', group: 'archive', instance: 'audit', pollMs: 10 })
    onAudit(@Payload() p: unknown, @Ctx() ctx: RheoContext) {
      seen.push(`audit:${ctx.event.id}`);
    }
  }

  beforeAll(async () => {
    const ref = await Test.createTestingModule({
      imports: [
        RheoModule.forRoot({ backend: memoryBackend(), streams: [{ name: 'trades' }], metrics: { registry } }),
        RheoModule.forRoot({ name: 'audit', backend: memoryBackend(), streams: [{ name: 'audit-log' }], metrics: { registry } }),
      ],
      controllers: [TwoStores, MetricsController],
      providers: [{ provide: REGISTRY, useValue: registry }],
    }).compile();
    app = ref.createNestApplication({ logger: false });
    app.connectMicroservice({ strategy: app.get(RheoServer) }, { inheritAppConfig: true });
    app.connectMicroservice({ strategy: app.get(getRheoServerToken('audit')) }, { inheritAppConfig: true });
    await app.init();
    await app.startAllMicroservices();
  });

  afterAll(async () => {
    await app?.close();
  });

  it('share one registry: each counts its own once, and each reports its own groups', async () => {
    settles = 0;
    const main = app.get(RheoClient);
    const audit = app.get<RheoClient>(getRheoClientToken('audit'));
    await main.appendBatch('trades', [{ payload: 1 }, { payload: 2 }, { payload: 3 }]);
    await audit.append('audit-log', { payload: 'who' });
    await until('all settled', () => seen.length === 4 && settles === 4);
    const m = await scrape(app);
    expect(m.get('rheo_appended_events_total{stream="trades"}')).toBe(3);
    expect(m.get('rheo_appended_events_total{stream="audit-log"}')).toBe(1);
    expect(m.get('rheo_deliveries_total{stream="trades",group="risk",outcome="ack"}')).toBe(3);
    expect(m.get('rheo_deliveries_total{stream="audit-log",group="archive",outcome="ack"}')).toBe(1);
    expect(m.get('rheo_handler_duration_seconds_count{stream="trades",group="risk"}')).toBe(3);
    expect(m.get('rheo_handler_duration_seconds_count{stream="audit-log",group="archive"}')).toBe(1);
    expect(m.get('rheo_group_lag{stream="trades",group="risk"}')).toBe(0);
    expect(m.get('rheo_group_lag{stream="audit-log",group="archive"}')).toBe(0);
  });
});

describe('two apps in one process on the default registry', () => {
  @Controller()
  class Quiet {
    @RheoConsumer({ stream: 'jobs', group: 'workers', pollMs: 10 })
    onJob() {}
  }

  async function boot(): Promise<INestApplication> {
    const ref = await Test.createTestingModule({
      imports: [RheoModule.forRoot({ backend: memoryBackend(), streams: [{ name: 'jobs' }], metrics: true })],
      controllers: [Quiet],
    }).compile();
    const app = ref.createNestApplication({ logger: false });
    app.connectMicroservice({ strategy: app.get(RheoServer) }, { inheritAppConfig: true });
    await app.init();
    await app.startAllMicroservices();
    return app;
  }

  it('register without throwing, and leave no metric and no subscriber once both are closed', async () => {
    const first = await boot();
    const second = await boot();
    await first.get(RheoClient).append('jobs', { payload: 1 });
    await second.get(RheoClient).append('jobs', { payload: 2 });
    const text = await register.metrics();
    // Each app counted its own append once: two in all, not four.
    expect(parse(text).get('rheo_appended_events_total{stream="jobs"}')).toBe(2);
    await first.close();
    expect(register.getSingleMetric('rheo_appended_events_total')).toBeDefined();
    await second.close();
    expect(register.getMetricsAsArray().filter((m) => m.name.startsWith('rheo_'))).toEqual([]);
    // This file's own settle counter aside, only the metrics' subscribers are in question.
    channel(CHANNELS.settle).unsubscribe(countSettle);
    try {
      for (const name of [CHANNELS.settle, CHANNELS.leaseLost, CHANNELS.leaseExpired, CHANNELS.consumerStart])
        expect(channel(name).hasSubscribers).toBe(false);
      expect(channel('tracing:rheo:append:asyncEnd').hasSubscribers).toBe(false);
      expect(channel('tracing:rheo:process:start').hasSubscribers).toBe(false);
    } finally {
      channel(CHANNELS.settle).subscribe(countSettle);
    }
  });
});

describe("the sample app's /metrics", () => {
  const app = sampleApp('sample-metrics');

  it('serves the Prometheus text format with the counters of what it consumed', async () => {
    const http = request(app().getHttpServer());
    settles = 0;
    await http
      .post('/events')
      .send({ type: 'trade', payload: { instrument: 'EURUSD', price: 1.1, qty: 1000 } })
      .expect(201);
    // One settle per group: risk and surveillance.
    await until('both groups settled', () => settles === 2);
    const res = await http.get('/metrics').expect(200);
    // Prometheus' text format, version 0.0.4 (Express orders the parameters its own way).
    expect(res.headers['content-type']).toMatch(/^text\/plain;/);
    expect(res.headers['content-type']).toContain('version=0.0.4');
    const m = parse(res.text);
    expect(m.get(`rheo_appended_events_total{stream="${MARKET_EVENTS}"}`)).toBe(1);
    expect(m.get(`rheo_deliveries_total{stream="${MARKET_EVENTS}",group="risk",outcome="ack"}`)).toBe(1);
    expect(m.get(`rheo_deliveries_total{stream="${MARKET_EVENTS}",group="surveillance",outcome="ack"}`)).toBe(1);
    expect(m.get(`rheo_group_lag{stream="${MARKET_EVENTS}",group="risk"}`)).toBe(0);
    expect(m.get(`rheo_group_lag{stream="${MARKET_EVENTS}",group="surveillance"}`)).toBe(0);
  });
});
