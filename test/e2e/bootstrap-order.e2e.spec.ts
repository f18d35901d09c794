import { readFileSync } from 'node:fs';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { join } from 'node:path';
import { Body, Controller, type INestApplication, Post } from '@nestjs/common';
import { Ctx, Payload } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import {
  type Backend,
  type JsonValue,
  memoryBackend,
  Rheo,
  RheoClient,
  RheoConsumer,
  RheoContext,
  RheoModule,
  RheoServer,
} from '../../lib';
import { startApp } from '../../sample/bootstrap';
import { until } from '../support/until';

const handled: string[] = [];

@Controller()
class OrdersController {
  constructor(private readonly rheo: RheoClient) {}

  @Post('orders')
  place(@Body() order: JsonValue) {
    return this.rheo.append('orders', { payload: order });
  }

  @RheoConsumer({ stream: 'orders', group: 'billing', pollMs: 10 })
  onOrder(@Payload() order: JsonValue, @Ctx() ctx: RheoContext) {
    void order;
    handled.push(ctx.event.id);
  }
}

/** A hybrid app wired as in main.ts, not started. */
async function createApp(backend: Backend): Promise<INestApplication> {
  const ref = await Test.createTestingModule({
    imports: [RheoModule.forRoot({ backend, streams: [{ name: 'orders' }] })],
    controllers: [OrdersController],
  }).compile();
  const app = ref.createNestApplication({ logger: false });
  app.enableShutdownHooks();
  app.connectMicroservice({ strategy: app.get(RheoServer) }, { inheritAppConfig: true });
  await app.init();
  return app;
}

/** The order of the two start calls in a main.ts code sample. */
function startOrder(source: string): string[] {
  return [...source.matchAll(/await app\.(listen|startAllMicroservices)\(/g)].map((m) => m[1]);
}

describe('bootstrap order: HTTP first, then the consumers', () => {
  it("is the order the README's main.ts and the sample's startApp (sample/main.ts) use", () => {
    const readme = readFileSync(join(__dirname, '../../README.md'), 'utf8');
    const mainTs = readme.slice(readme.indexOf('// main.ts'));
    expect(startOrder(mainTs.slice(0, mainTs.indexOf('```')))).toEqual(['listen', 'startAllMicroservices']);
    const bootstrap = readFileSync(join(__dirname, '../../sample/bootstrap.ts'), 'utf8');
    expect(startOrder(bootstrap)).toEqual(['listen', 'startAllMicroservices']);
  });

  it('serves HTTP and consumes when started in that order', async () => {
    const app = await createApp(memoryBackend());
    try {
      await startApp(app, 0);
      expect((app.getHttpServer().address() as AddressInfo).port).toBeGreaterThan(0);
      const placed = await request(app.getHttpServer()).post('/orders').send({ amount: 12 }).expect(201);
      await until('order consumed and acked', async () => (await app.get(RheoClient).lag('orders', 'billing')).lag === 0);
      expect(handled).toContain(placed.body.id);
    } finally {
      await app.close();
    }
  });

  describe('when the port is taken', () => {
    let blocker: Server;
    let port: number;

    beforeAll(async () => {
      blocker = createServer();
      await new Promise<void>((resolve) => blocker.listen(0, resolve));
      port = (blocker.address() as AddressInfo).port;
    });

    afterAll(async () => {
      await new Promise<void>((resolve) => blocker.close(() => resolve()));
    });

    it('fails with EADDRINUSE before any consumer started: no lease was claimed, the events are untouched', async () => {
      const backend = memoryBackend();
      const rheo = new Rheo(backend);
      await rheo.createStream('orders');
      await rheo.createGroup('orders', 'billing');
      const appended = await rheo.appendBatch('orders', [{ payload: { n: 1 } }, { payload: { n: 2 } }, { payload: { n: 3 } }]);
      const before = await rheo.groupInfo('orders', 'billing');

      const app = await createApp(backend);
      try {
        await expect(startApp(app, port)).rejects.toMatchObject({ code: 'EADDRINUSE' });
        expect(app.get(RheoServer).consumers()).toEqual([]);
        const after = await rheo.groupInfo('orders', 'billing');
        expect(after.inflight).toBe(0);
        expect(after.lag).toEqual(before.lag);
        expect(after.lag.lag).toBe(3);
        const leases = await rheo.fetch('orders', 'billing', { limit: 10 });
        expect(leases.map((l) => [l.event.id, l.attempt])).toEqual(appended.map((e) => [e.id, 1]));
      } finally {
        await app.close();
      }
      expect(handled.filter((id) => appended.some((e) => e.id === id))).toEqual([]);
    });
  });
});
