import { channel } from 'node:diagnostics_channel';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { Controller, type INestApplicationContext } from '@nestjs/common';
import { Ctx, Payload } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import { Counter, register, Registry } from 'prom-client';
import {
  type Backend,
  CHANNELS,
  ManualClock,
  memoryBackend,
  postgresBackend,
  Rheo,
  RheoConsumer,
  RheoContext,
  RheoError,
  RheoModule,
  RheoServer,
} from '../../lib';
import { until } from '../support/until';

// The `metrics` option without HTTP: its validation, prom-client as an optional
// peer, the scrape-time cache, and what an app with metrics off leaves behind.

async function boot(
  metrics: unknown,
  backend: Backend = memoryBackend(),
  streams = [{ name: 'orders' }],
): Promise<INestApplicationContext> {
  const ref = await Test.createTestingModule({
    imports: [RheoModule.forRoot({ backend, streams, metrics } as Parameters<typeof RheoModule.forRoot>[0])],
  }).compile();
  return ref.createNestApplication({ logger: false }).init();
}

async function bootError(metrics: unknown): Promise<RheoError> {
  const err = await boot(metrics).then(
    (app) => app.close().then(() => undefined),
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(RheoError);
  return err as RheoError;
}

describe('the metrics option', () => {
  it.each([
    ['a string', 'yes', 'metrics', /metrics must be true, false or \{ registry\?, prefix\?, groups\? \}/],
    ['null', null, 'metrics', /metrics must be true, false/],
    ['an unknown key', { buckets: [1] }, 'metrics.buckets', /metrics\.buckets is not a metrics option \(use registry, prefix, groups\)/],
    [
      'groups that are neither app, all nor a list',
      { groups: 'mine' },
      'metrics.groups',
      /metrics\.groups must be 'app', 'all' or an array/,
    ],
    ['a listed group without its stream', { groups: ['orders/billing', 'billing'] }, 'metrics.groups[1]', /'stream\/group' key/],
    [
      'a listed group that is not a string',
      { groups: [{ stream: 'orders', group: 'billing' }] },
      'metrics.groups[0]',
      /'stream\/group' key/,
    ],
    ['a listed key with an empty group', { groups: ['orders/'] }, 'metrics.groups[0]', /'stream\/group' key/],
    ['a prefix starting with a digit', { prefix: '1x_' }, 'metrics.prefix', /metrics\.prefix must be a string of letters/],
    ['a prefix with a dash', { prefix: 'my-app_' }, 'metrics.prefix', /metrics\.prefix must be a string of letters/],
    ['a registry that is not one', { registry: {} }, 'metrics.registry', /metrics\.registry must be a prom-client Registry/],
  ])('rejects %s with a RheoError naming the field and the instance', async (_what, metrics, field, message) => {
    const err = await bootError(metrics);
    expect(err.code).toBe('invalid_argument');
    expect(err.field).toBe(field);
    expect(err.message).toMatch(/^RheoModule\(default\): /);
    expect(err.message).toMatch(message);
  });

  it('refuses a prefix whose names another metric of the registry already has, naming metrics.prefix', async () => {
    const registry = new Registry();
    new Counter({ name: 'mine_deliveries_total', help: 'not ours', registers: [registry] });
    const err = await bootError({ registry, prefix: 'mine_' });
    expect(err.field).toBe('metrics.prefix');
    expect(err.message).toMatch(/mine_deliveries_total/);
    // What it had registered before the clash is gone again; the user's metric stays.
    expect(registry.getMetricsAsArray().map((m) => m.name)).toEqual(['mine_deliveries_total']);
  });

  it('registers every metric under the chosen prefix', async () => {
    const registry = new Registry();
    const app = await boot({ registry, prefix: 'shop_' });
    try {
      expect(
        registry
          .getMetricsAsArray()
          .map((m) => m.name)
          .sort(),
      ).toEqual([
        'shop_append_repeats_total',
        'shop_append_to_handler_seconds',
        'shop_appended_events_total',
        'shop_deliveries_total',
        'shop_flow_held_total',
        'shop_group_dead_letters',
        'shop_group_inflight',
        'shop_group_lag',
        'shop_group_oldest_unsettled_age_seconds',
        'shop_group_paused',
        'shop_group_waiting_for_key',
        'shop_handler_duration_seconds',
      ]);
    } finally {
      await app.close();
    }
    expect(registry.getMetricsAsArray()).toEqual([]);
  });

  it('off (absent or false): registers nothing and subscribes to nothing', async () => {
    for (const metrics of [undefined, false]) {
      const app = await boot(metrics);
      try {
        expect(register.getMetricsAsArray().filter((m) => m.name.startsWith('rheo_'))).toEqual([]);
        for (const name of [
          CHANNELS.settle,
          CHANNELS.leaseLost,
          CHANNELS.leaseExpired,
          CHANNELS.flowHeld,
          'tracing:rheo:append:asyncEnd',
          'tracing:rheo:process:start',
        ])
          expect(channel(name).hasSubscribers).toBe(false);
      } finally {
        await app.close();
      }
    }
  });

  it('without prom-client installed: a RheoError naming metrics that says what to install', () => {
    // A child process where prom-client cannot be resolved, as on a machine without it.
    const code = `
      const Module = require('node:module');
      const resolve = Module._resolveFilename;
      Module._resolveFilename = function (request, ...rest) {
        if (request === 'prom-client') throw Object.assign(new Error('blocked by test'), { code: 'MODULE_NOT_FOUND' });
        return resolve.call(this, request, ...rest);
      };
      require('reflect-metadata');
      const { Test } = require('@nestjs/testing');
      const { RheoModule, memoryBackend } = require('./lib');
      Test.createTestingModule({ imports: [RheoModule.forRoot({ backend: memoryBackend(), metrics: true })] })
        .compile()
        .then(
          () => process.stdout.write('booted'),
          (e) => process.stdout.write(JSON.stringify({ field: e.field, code: e.code, message: e.message })),
        );
    `;
    const root = join(__dirname, '..', '..');
    const out = execFileSync(process.execPath, ['-r', 'ts-node/register/transpile-only', '-e', code], {
      cwd: root,
      encoding: 'utf8',
      env: { ...process.env, TS_NODE_PROJECT: join(root, 'tsconfig.json') },
    });
    expect(JSON.parse(out)).toEqual({
      field: 'metrics',
      code: 'invalid_argument',
      message: 'RheoModule(default): metrics needs the optional dependency "prom-client": npm install prom-client@15',
    });
  });
});

describe('the group gauges at scrape time', () => {
  it("with groups: 'all', read every group of every stream once per second however often Prometheus scrapes", async () => {
    const clock = new ManualClock();
    const registry = new Registry();
    const app = await boot({ registry, groups: 'all' }, memoryBackend({ clock }));
    try {
      const rheo = app.get(Rheo);
      await rheo.createStream('payments', { partitions: 2 });
      await rheo.createGroup('orders', 'billing');
      await rheo.createGroup('orders', 'shipping');
      await rheo.createGroup('payments', 'ledger');
      await rheo.appendBatch('payments', [{ payload: 1 }, { payload: 2 }]);
      const groupInfo = jest.spyOn(rheo, 'groupInfo');

      const first = await registry.metrics();
      expect(first).toContain('rheo_group_lag{stream="payments",group="ledger"} 2');
      expect(first).toContain('rheo_group_lag{stream="orders",group="billing"} 0');
      expect(first).toContain('rheo_group_lag{stream="orders",group="shipping"} 0');
      expect(groupInfo).toHaveBeenCalledTimes(3);

      // Within the second: the same figures, no read (the new event is not seen yet).
      await rheo.append('payments', { payload: 3 });
      clock.advance(999);
      await Promise.all([registry.metrics(), registry.metrics()]);
      expect(await registry.metrics()).toContain('rheo_group_lag{stream="payments",group="ledger"} 2');
      expect(groupInfo).toHaveBeenCalledTimes(3);

      // A second later: one new round.
      clock.advance(1);
      expect(await registry.metrics()).toContain('rheo_group_lag{stream="payments",group="ledger"} 3');
      expect(groupInfo).toHaveBeenCalledTimes(6);
    } finally {
      await app.close();
    }
  });

  it('rheo_group_paused: 1 while a pause holds the group, 0 once it resumes, labelled as the lag gauge', async () => {
    const clock = new ManualClock();
    const registry = new Registry();
    const app = await boot({ registry, groups: 'all' }, memoryBackend({ clock }));
    try {
      const rheo = app.get(Rheo);
      await rheo.createGroup('orders', 'billing');
      await rheo.createGroup('orders', 'shipping');
      await rheo.pauseGroup('orders', 'billing', { reason: 'card API down' });
      const paused = await registry.metrics();
      expect(paused).toContain('# TYPE rheo_group_paused gauge');
      expect(paused).toContain('rheo_group_paused{stream="orders",group="billing"} 1');
      expect(paused).toContain('rheo_group_paused{stream="orders",group="shipping"} 0');
      expect(paused).toContain('rheo_group_lag{stream="orders",group="billing"} 0');

      await rheo.resumeGroup('orders', 'billing');
      clock.advance(1000);
      expect(await registry.metrics()).toContain('rheo_group_paused{stream="orders",group="billing"} 0');

      // A pause whose until has come is over by the store's clock: 0 too.
      await rheo.pauseGroup('orders', 'shipping', { until: new Date(clock.now() + 5000) });
      clock.advance(1000);
      expect(await registry.metrics()).toContain('rheo_group_paused{stream="orders",group="shipping"} 1');
      clock.advance(5000);
      expect(await registry.metrics()).toContain('rheo_group_paused{stream="orders",group="shipping"} 0');
    } finally {
      await app.close();
    }
  });

  it('leave the gauges out of a scrape when the store cannot be read, and read again at the next', async () => {
    const registry = new Registry();
    // A real store that does not answer: nothing listens on port 1.
    const app = await boot({ registry, groups: 'all' }, postgresBackend({ url: 'postgres://postgres@127.0.0.1:1/test', poolSize: 1 }), []);
    try {
      const listStreams = jest.spyOn(app.get(Rheo), 'listStreams');
      const text = await registry.metrics();
      expect(text).toContain('# TYPE rheo_appended_events_total counter');
      expect(text).toContain('# TYPE rheo_group_lag gauge');
      expect(text).not.toContain('rheo_group_lag{');
      const rounds = listStreams.mock.calls.length;
      expect(rounds).toBeGreaterThan(0);
      // The failed round is not cached.
      await registry.metrics();
      expect(listStreams.mock.calls.length).toBeGreaterThan(rounds);
    } finally {
      await app.close();
    }
  });
});

describe('flow control', () => {
  const handled: string[] = [];
  let capped = 0;
  let releaseCapped!: () => void;
  const cappedHeld = new Promise<void>((resolve) => (releaseCapped = resolve));

  @Controller()
  class Flow {
    @RheoConsumer({ stream: 'orders', group: 'keyed', ordering: 'key', pollMs: 10 })
    onKeyed(@Payload() p: { key: string }) {
      handled.push(p.key);
    }

    @RheoConsumer({ stream: 'orders', group: 'capped', groupConcurrency: 1, concurrency: 2, pollMs: 10 })
    async onCapped() {
      capped++;
      await cappedHeld;
    }
  }

  it("rheo_flow_held_total counts events set waiting for their key and fetches a group-wide limit held, for this app's consumers", async () => {
    const registry = new Registry();
    const ref = await Test.createTestingModule({
      imports: [RheoModule.forRoot({ backend: memoryBackend(), streams: [{ name: 'orders', partitions: 1 }], metrics: { registry } })],
      controllers: [Flow],
    }).compile();
    const app = ref.createNestApplication({ logger: false });
    app.connectMicroservice({ strategy: app.get(RheoServer) }, { inheritAppConfig: true });
    await app.init();
    await app.startAllMicroservices();
    try {
      const rheo = app.get(Rheo);
      await rheo.appendBatch(
        'orders',
        ['a', 'a', 'b', 'a'].map((key) => ({ key, payload: { key } })),
      );
      await until('every keyed event handled', () => handled.length === 4);
      await until('the capped group holds one', () => capped === 1);
      // A fetch of another process (not this app's consumer) is not counted.
      await rheo.createGroup('orders', 'other', { ordering: 'key' });
      expect(await rheo.fetch('orders', 'other', { consumerId: 'elsewhere' })).toHaveLength(2);
      const text = await registry.metrics();
      expect(text).toContain('# TYPE rheo_flow_held_total counter');
      expect(text).toContain('rheo_flow_held_total{stream="orders",group="keyed",reason="key"} 2');
      expect(text).not.toContain('rheo_flow_held_total{stream="orders",group="other"');
      const held = /rheo_flow_held_total\{stream="orders",group="capped",reason="group_concurrency"\} (\d+)/.exec(text);
      expect(Number(held?.[1])).toBeGreaterThan(0);
      expect(capped).toBe(1);
      // The gauge reads the store: 'other' has the events its fetch set waiting, keyed none any more.
      expect(text).toContain('rheo_group_waiting_for_key{stream="orders",group="other"} 2');
      expect(text).toContain('rheo_group_waiting_for_key{stream="orders",group="keyed"} 0');
    } finally {
      releaseCapped();
      await app.close();
    }
  });

  it('rheo_group_waiting_for_key: the events waiting for their key, read at scrape time', async () => {
    const clock = new ManualClock();
    const registry = new Registry();
    const app = await boot({ registry, groups: 'all' }, memoryBackend({ clock }));
    try {
      const rheo = app.get(Rheo);
      await rheo.createGroup('orders', 'keyed', { ordering: 'key' });
      await rheo.createGroup('orders', 'plain');
      await rheo.appendBatch(
        'orders',
        ['a', 'a', 'a', 'b'].map((key) => ({ key, payload: 1 })),
      );
      const leases = await rheo.fetch('orders', 'keyed', { limit: 10 });
      expect(leases).toHaveLength(2);
      const text = await registry.metrics();
      expect(text).toContain('# TYPE rheo_group_waiting_for_key gauge');
      expect(text).toContain('rheo_group_waiting_for_key{stream="orders",group="keyed"} 2');
      expect(text).toContain('rheo_group_waiting_for_key{stream="orders",group="plain"} 0');
      for (const lease of leases) await rheo.ack(lease);
      clock.advance(1000);
      // The ack of a's head gave its place to a's next event: one left waiting.
      expect(await registry.metrics()).toContain('rheo_group_waiting_for_key{stream="orders",group="keyed"} 1');
    } finally {
      await app.close();
    }
  });
});

describe('a lease lost under a running handler', () => {
  let aborted: unknown = null;

  @Controller()
  class Slow {
    @RheoConsumer({ stream: 'orders', group: 'billing', leaseMs: 200, pollMs: 10 })
    async onOrder(@Payload() p: unknown, @Ctx() ctx: RheoContext) {
      // Holds the lease until the runtime says it is gone.
      await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve()));
      aborted = ctx.signal.reason;
    }
  }

  it('counts lease_lost for this consumer, and nothing for the consumer that took the event over', async () => {
    const clock = new ManualClock();
    const backend = memoryBackend({ clock });
    const registry = new Registry();
    const ref = await Test.createTestingModule({
      imports: [RheoModule.forRoot({ backend, streams: [{ name: 'orders' }], metrics: { registry } })],
      controllers: [Slow],
    }).compile();
    const app = ref.createNestApplication({ logger: false });
    app.connectMicroservice({ strategy: app.get(RheoServer) }, { inheritAppConfig: true });
    await app.init();
    await app.startAllMicroservices();
    try {
      const [event] = await app.get(Rheo).appendBatch('orders', [{ payload: 1 }]);
      const server = app.get(RheoServer);
      await until('the handler holds the lease', () => server.unwrap().groups.get('orders/billing')!.running === 1);
      // Another process's consumer (a Rheo of its own on the same store) claims the event once the lease has expired.
      const other = new Rheo(backend);
      await other.createGroup('orders', 'billing', { ifNotExists: true });
      clock.advance(1000);
      const [stolen] = await other.fetch('orders', 'billing', { consumerId: 'other-process' });
      expect(stolen.event.id).toBe(event.id);
      await until('the renewal found the lease lost', () => aborted !== null);
      await other.ack(stolen);
      const text = await registry.metrics();
      expect(text).toContain('rheo_deliveries_total{stream="orders",group="billing",outcome="lease_lost"} 1');
      expect(text).not.toContain('outcome="ack"');
    } finally {
      await app.close();
    }
  });
});
