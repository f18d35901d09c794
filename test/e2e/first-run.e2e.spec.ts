// What a new user meets before anything is consumed: a transport never started
// (nothing fails, so the module says so), and an append before the declared
// streams exist.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Controller, type INestApplication, type ModuleMetadata } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import { firstValueFrom } from 'rxjs';
import { getRheoServerToken, memoryBackend, RheoClient, RheoConsumer, RheoError, RheoModule, RheoServer, sqliteBackend } from '../../lib';
import { TRANSPORT_START_GRACE_MS } from '../../lib/nest/rheo-lifecycle';
import { CapturingLogger } from './log-capture';

@Controller()
class Billing {
  @RheoConsumer({ stream: 'orders', group: 'billing' })
  bill(@Payload() order: unknown): void {
    void order;
  }

  @RheoConsumer({ stream: 'orders', group: 'shipping' })
  ship(@Payload() order: unknown): void {
    void order;
  }
}

@Controller()
class Archive {
  @RheoConsumer({ stream: 'audit', group: 'archive', instance: 'audit' })
  keep(@Payload() entry: unknown): void {
    void entry;
  }
}

@Controller()
class Plain {}

const START_LINES =
  '  app.connectMicroservice({ strategy: app.get(RheoServer) }, { inheritAppConfig: true });\n  await app.startAllMicroservices();';

function module(controllers: ModuleMetadata['controllers'] = [Billing]): ModuleMetadata {
  return { imports: [RheoModule.forRoot({ backend: memoryBackend(), streams: [{ name: 'orders' }] })], controllers };
}

describe('a transport that is never started: one warning naming the handlers and the lines that start it', () => {
  // Timers are the test's: the grace period passes when the test says (and real time still runs the consumers).
  beforeEach(() =>
    jest.useFakeTimers({
      advanceTimers: true,
      doNotFake: ['nextTick', 'setImmediate', 'clearImmediate', 'queueMicrotask', 'Date', 'performance', 'hrtime'],
    }),
  );
  afterEach(() => jest.useRealTimers());

  const apps: INestApplication[] = [];
  afterEach(async () => {
    for (const app of apps.splice(0)) await app.close();
  });

  async function create(metadata: ModuleMetadata): Promise<{ app: INestApplication; logger: CapturingLogger }> {
    const logger = new CapturingLogger();
    const app = (await Test.createTestingModule(metadata).compile()).createNestApplication({ logger });
    apps.push(app);
    return { app, logger };
  }
  const warnings = (logger: CapturingLogger) => logger.lines('warn').filter((l) => l.startsWith('[RheoModule]'));

  it('never connected: warned once, after the grace period, naming each handler', async () => {
    const { app, logger } = await create(module());
    await app.init();
    expect(warnings(logger)).toEqual([]);
    jest.advanceTimersByTime(TRANSPORT_START_GRACE_MS);
    expect(warnings(logger)).toEqual([
      `[RheoModule] Instance "default": 2 @RheoConsumer handler(s) consume nothing, ${TRANSPORT_START_GRACE_MS / 1000} s after bootstrap ` +
        'its transport was never connected: Billing.bill (orders/billing), Billing.ship (orders/shipping). ' +
        `Start it in main.ts (standalone: await app.listen()):\n${START_LINES}`,
    ]);
    jest.advanceTimersByTime(10 * TRANSPORT_START_GRACE_MS);
    expect(warnings(logger)).toHaveLength(1);
  });

  it('connected but never started: says so; a named instance shows its own token', async () => {
    const { app, logger } = await create({
      imports: [
        RheoModule.forRoot({ backend: memoryBackend(), streams: [{ name: 'orders' }] }),
        RheoModule.forRoot({ name: 'audit', backend: memoryBackend(), streams: [{ name: 'audit' }] }),
      ],
      controllers: [Billing, Archive],
    });
    app.connectMicroservice({ strategy: app.get(RheoServer) }, { inheritAppConfig: true });
    await app.init();
    jest.advanceTimersByTime(TRANSPORT_START_GRACE_MS);
    const lines = warnings(logger);
    expect(lines).toHaveLength(2);
    expect(lines[0]).toContain('Instance "default": 2 @RheoConsumer handler(s) consume nothing');
    expect(lines[0]).toContain(
      'its transport was connected but never started: Billing.bill (orders/billing), Billing.ship (orders/shipping)',
    );
    expect(lines[1]).toContain('Instance "audit": 1 @RheoConsumer handler(s) consume nothing');
    expect(lines[1]).toContain('its transport was never connected: Archive.keep (audit/archive)');
    expect(lines[1]).toContain(
      "  app.connectMicroservice({ strategy: app.get(getRheoServerToken('audit')) }, { inheritAppConfig: true });\n  await app.startAllMicroservices();",
    );
  });

  it("started as main.ts does (after init and listen), or before init as Nest's docs do: no warning", async () => {
    const after = await create(module());
    after.app.connectMicroservice({ strategy: after.app.get(RheoServer) }, { inheritAppConfig: true });
    await after.app.init();
    await after.app.startAllMicroservices();

    const before = await create(module());
    before.app.connectMicroservice({ strategy: before.app.get(RheoServer) }, { inheritAppConfig: true });
    await before.app.startAllMicroservices();
    await before.app.init();

    const named = await create({
      imports: [RheoModule.forRoot({ name: 'audit', backend: memoryBackend(), streams: [{ name: 'audit' }] })],
      controllers: [Archive],
    });
    named.app.connectMicroservice({ strategy: named.app.get(getRheoServerToken('audit')) }, { inheritAppConfig: true });
    await named.app.init();
    await named.app.startAllMicroservices();

    jest.advanceTimersByTime(10 * TRANSPORT_START_GRACE_MS);
    for (const { logger } of [after, before, named]) expect(warnings(logger)).toEqual([]);
  });

  it('a standalone microservice that listens, an app without consumers, an app closed before the grace: no warning', async () => {
    const logger = new CapturingLogger();
    const ref = await Test.createTestingModule(module()).compile();
    const standalone = ref.createNestMicroservice({ strategy: ref.get(RheoServer), logger });
    await standalone.listen();

    const plain = await create(module([Plain]));
    await plain.app.init();

    const closed = await create(module());
    await closed.app.init();
    await closed.app.close();
    apps.splice(apps.indexOf(closed.app), 1);

    jest.advanceTimersByTime(10 * TRANSPORT_START_GRACE_MS);
    await standalone.close();
    for (const l of [logger, plain.logger, closed.logger]) expect(warnings(l)).toEqual([]);
  });
});

describe('append before app.init() on a fresh database', () => {
  let dir: string;
  let app: INestApplication;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rheo-first-run-'));
    const ref = await Test.createTestingModule({
      imports: [RheoModule.forRoot({ backend: sqliteBackend({ database: join(dir, 'rheo.db') }), streams: [{ name: 'orders' }] })],
    }).compile();
    app = ref.createNestApplication({ logger: false });
  });

  afterEach(async () => {
    await app.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('says that the declared stream is created at init, and the append works once the app is initialised', async () => {
    const client = app.get(RheoClient);
    const err = await client.append('orders', { payload: 1 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RheoError);
    expect(err).toMatchObject({ code: 'stream_not_found' });
    expect((err as RheoError).message).toBe(
      'stream "orders" does not exist yet: RheoModule(default) creates the streams it declares when the application initialises ' +
        '(app.init(), app.listen() or startAllMicroservices()); call this after that',
    );
    // The same through emit(), and for a batch.
    await expect(firstValueFrom(client.emit('orders', 2))).rejects.toThrow(/does not exist yet: RheoModule\(default\) creates/);
    await expect(client.appendBatch('orders', [{ payload: 2 }])).rejects.toThrow(/does not exist yet: RheoModule\(default\) creates/);
    // A stream it does not declare gets the plain answer.
    await expect(client.append('other', { payload: 1 })).rejects.toThrow(/^stream "other" does not exist$/);

    await app.init();
    expect(await client.append('orders', { payload: 3 })).toMatchObject({ stream: 'orders', sequence: 1 });
  });
});
