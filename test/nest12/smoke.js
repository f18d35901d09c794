// The sample's scenario on Nest 12, from the packed build (see run.sh): boot a
// hybrid app, append over HTTP, consume with two groups, dead-letter a poison
// event, check /health and the dashboard's script, shut down. Exits 0 on success, 1 otherwise.
'use strict';
require('reflect-metadata');
const { readdirSync, readFileSync } = require('node:fs');
const { dirname, join } = require('node:path');
const { Body, Controller, Get, Inject, Module, ParseIntPipe, Post } = require('@nestjs/common');
const { NestFactory } = require('@nestjs/core');
const { Ctx, Payload } = require('@nestjs/microservices');
const { HealthCheck, HealthCheckService, TerminusModule } = require('@nestjs/terminus');
const {
  memoryBackend,
  RheoClient,
  RheoConsumer,
  RheoContext,
  RheoDashboardModule,
  RheoHealthIndicator,
  RheoModule,
  RheoReject,
  RheoServer,
} = require('nestjs-rheo');

const STREAM = 'market-events';
const seen = { risk: new Set(), surveillance: new Set() };

function version(pkg, from) {
  const entry = require.resolve(pkg, { paths: [from] });
  let dir = dirname(entry);
  while (dir !== dirname(dir)) {
    try {
      const json = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
      if (json.name === pkg) return { version: json.version, dir };
    } catch {
      // no package.json here, or not JSON: look further up
    }
    dir = dirname(dir);
  }
  throw new Error(`no package.json for ${pkg}`);
}

/** Decorate without TypeScript: what tsc emits for decorators, by hand. */
function method(cls, name, decorators, params = []) {
  const proto = cls.prototype;
  for (const [index, decorator] of params.entries()) decorator(proto, name, index);
  Reflect.decorate(decorators, proto, name, Object.getOwnPropertyDescriptor(proto, name));
}

class RiskController {
  onEvent(payload, ctx) {
    if (!(ctx instanceof RheoContext)) throw new Error('ctx is not a RheoContext');
    seen.risk.add(ctx.event.id);
  }
}
method(RiskController, 'onEvent', [RheoConsumer({ stream: STREAM, group: 'risk', concurrency: 4, pollMs: 20 })], [Payload(), Ctx()]);
Controller()(RiskController);

class SurveillanceController {
  onEvent(payload, ctx) {
    if (payload.price <= 0) throw new RheoReject(`price must be positive, got ${payload.price}`);
    seen.surveillance.add(ctx.event.id);
  }
}
method(SurveillanceController, 'onEvent', [RheoConsumer({ stream: STREAM, group: 'surveillance', pollMs: 20 })], [Payload(), Ctx()]);
Controller()(SurveillanceController);

/** Failure paths through Nest 12's pipeline: a plain throw retries, a pipe refusal dead-letters at once. */
const attempts = [];
class OrdersController {
  onOrder(qty, ctx) {
    attempts.push(`${ctx.event.id}:${ctx.attempt}`);
    if (ctx.attempt === 1) throw new Error('transient');
  }
}
method(
  OrdersController,
  'onOrder',
  [RheoConsumer({ stream: 'orders', group: 'g', pollMs: 20, retry: { initialMs: 0, maxMs: 0 } })],
  [Payload('qty', ParseIntPipe), Ctx()],
);
Controller()(OrdersController);

class EventsController {
  constructor(rheo) {
    this.rheo = rheo;
  }
  async append(body) {
    const e = await this.rheo.append(STREAM, { type: body.type, key: body.payload.instrument, payload: body.payload });
    return { id: e.id };
  }
  async lag() {
    return { risk: (await this.rheo.lag(STREAM, 'risk')).lag, surveillance: (await this.rheo.lag(STREAM, 'surveillance')).lag };
  }
}
method(EventsController, 'append', [Post()], [Body()]);
method(EventsController, 'lag', [Get('lag')]);
Inject(RheoClient)(EventsController, undefined, 0);
Controller('events')(EventsController);

class HealthController {
  constructor(health, rheo) {
    this.health = health;
    this.rheo = rheo;
  }
  check() {
    return this.health.check([() => this.rheo.isHealthy('rheo', { maxLag: 1000 })]);
  }
}
method(HealthController, 'check', [Get('health'), HealthCheck()]);
Inject(HealthCheckService)(HealthController, undefined, 0);
Inject(RheoHealthIndicator)(HealthController, undefined, 1);
Controller()(HealthController);

class AppModule {}
Module({
  imports: [
    RheoModule.forRoot({ backend: memoryBackend(), streams: [{ name: STREAM, partitions: 4 }, { name: 'orders' }] }),
    TerminusModule,
    RheoDashboardModule.forRoot({ path: '/rheo' }),
  ],
  controllers: [EventsController, HealthController, RiskController, SurveillanceController, OrdersController],
})(AppModule);

function check(condition, message) {
  if (!condition) throw new Error(`check failed: ${message}`);
}

async function main() {
  const core = version('@nestjs/core', __dirname);
  const rheoDir = dirname(require.resolve('nestjs-rheo'));
  const used = version('@nestjs/microservices', rheoDir);
  console.log(
    `node ${process.version}, @nestjs/core ${core.version}, nestjs-rheo loads @nestjs/microservices ${used.version} from ${used.dir}`,
  );
  check(core.version.startsWith('12.') && used.version.startsWith('12.'), 'Nest 12 is what the package runs on');
  check(used.dir.startsWith(__dirname), 'the package resolves Nest from this app, not from the repo');
  // The backend authors' subpath resolves from the installed package, with the suite in it.
  const forBackends = require('nestjs-rheo/backend');
  check(
    typeof forBackends.runConformance === 'function' && typeof forBackends.createCapabilities === 'function',
    'nestjs-rheo/backend exports the conformance suite and capabilities',
  );

  const app = await NestFactory.create(AppModule, { logger: ['error'] });
  app.connectMicroservice({ strategy: app.get(RheoServer) }, { inheritAppConfig: true });
  await app.init();
  await app.listen(0); // bind first: a failed bind must not leave consumers holding leases
  await app.startAllMicroservices();
  const base = `http://127.0.0.1:${app.getHttpServer().address().port}`;
  const post = async (body) => {
    const res = await fetch(`${base}/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    check(res.status === 201, `POST /events -> ${res.status}`);
    return res.json();
  };
  const ids = [];
  for (let i = 0; i < 40; i++)
    ids.push((await post({ type: 'trade', payload: { instrument: `I${i % 6}`, price: i === 13 ? -1 : 10 + i, qty: 5 } })).id);
  const deadline = Date.now() + 30_000;
  for (;;) {
    const lag = await (await fetch(`${base}/events/lag`)).json();
    if (lag.risk === 0 && lag.surveillance === 0) break;
    check(Date.now() < deadline, `groups caught up (lag ${JSON.stringify(lag)})`);
    await new Promise((r) => setTimeout(r, 50));
  }
  check(
    ids.every((id) => seen.risk.has(id)),
    'risk saw every event',
  );
  check(seen.surveillance.size === 39 && !seen.surveillance.has(ids[13]), 'surveillance handled every event but the poison one');
  const dead = await app.get(RheoClient).deadLetters(STREAM, 'surveillance');
  check(
    dead.length === 1 && dead[0].eventId === ids[13] && dead[0].attempt === 1,
    `poison event dead-lettered at once (${JSON.stringify(dead)})`,
  );
  const client = app.get(RheoClient);
  const good = await client.append('orders', { payload: { qty: '3' } });
  const bad = await client.append('orders', { payload: { qty: 'three' } });
  while ((await client.lag('orders', 'g')).lag > 0) {
    check(Date.now() < deadline + 30_000, 'orders caught up');
    await new Promise((r) => setTimeout(r, 50));
  }
  check(attempts.join(',') === `${good.id}:1,${good.id}:2`, `a throw is retried, then acked (${attempts})`);
  const refused = await client.deadLetters('orders', 'g');
  check(
    refused.length === 1 && refused[0].eventId === bad.id && refused[0].attempt === 1,
    `a pipe refusal is dead-lettered at once (${JSON.stringify(refused)})`,
  );

  const health = await fetch(`${base}/health`);
  const body = await health.json();
  check(health.status === 200 && body.info.rheo.status === 'up', `/health up (${health.status} ${JSON.stringify(body)})`);

  // The dashboard's script as the package serves it: read from the packed dist/, it holds
  // each source file of lib/nest/dashboard/assets/browser/ byte for byte.
  const page = await fetch(`${base}/rheo`);
  check(page.status === 200 && (await page.text()).includes('src="/rheo/assets/dashboard.js"'), `dashboard page (${page.status})`);
  const script = await fetch(`${base}/rheo/assets/dashboard.js`);
  const js = await script.text();
  check(script.status === 200 && /^text\/javascript/.test(script.headers.get('content-type')), `dashboard script (${script.status})`);
  const sources = join(__dirname, '..', '..', 'lib', 'nest', 'dashboard', 'assets', 'browser');
  const files = readdirSync(sources).filter((f) => f.endsWith('.js'));
  for (const file of files) check(js.includes(readFileSync(join(sources, file), 'utf8')), `the served script holds ${file} as in lib/`);
  new Function(js); // one classic script: throws if it does not parse
  await app.close();
  console.log(
    `nest12 smoke: ok (40 events, 2 groups, 1 dead letter; retry and pipe refusal; /health ${health.status}; dashboard script of ${files.length} files)`,
  );
}

const timer = setTimeout(() => {
  console.error('nest12 smoke: timed out');
  process.exit(1);
}, 90_000);
timer.unref();
main().then(
  () => process.exit(0),
  (err) => {
    console.error('nest12 smoke: FAILED', err);
    process.exit(1);
  },
);
