import { Controller, type INestApplication } from '@nestjs/common';
import { Ctx, Payload } from '@nestjs/microservices';
import { TerminusModule } from '@nestjs/terminus';
import request from 'supertest';
import {
  type Backend,
  memoryBackend,
  RheoClient,
  RheoConsumer,
  RheoContext,
  RheoHealthIndicator,
  RheoModule,
  type JsonValue,
} from '../../lib';
import { startHybrid } from './support';
import { until } from '../support/until';
import { healthController } from './health-controller';

/** Holds every delivery until opened: the group falls behind on demand. */
const gate = { open: false, running: 0 };

@Controller()
class MarketController {
  @RheoConsumer({ stream: 'market-events', group: 'risk', maxDemand: 1, pollMs: 10 })
  async onEvent(@Payload() p: JsonValue, @Ctx() ctx: RheoContext) {
    void p;
    void ctx;
    gate.running++;
    try {
      while (!gate.open) await new Promise((r) => setTimeout(r, 5));
    } finally {
      gate.running--;
    }
  }
}

const HealthController = healthController({ maxLag: 3 });

describe('RheoHealthIndicator behind /health', () => {
  let app: INestApplication;
  let backend: Backend;

  beforeAll(async () => {
    backend = memoryBackend();
    app = await startHybrid({
      imports: [RheoModule.forRoot({ backend, streams: [{ name: 'market-events' }] }), TerminusModule],
      controllers: [MarketController, HealthController],
    });
  });

  afterAll(async () => {
    gate.open = true;
    await app.close();
  });

  it('is up with per-group figures when the group keeps up', async () => {
    const res = await request(app.getHttpServer()).get('/health').expect(200);
    expect(res.body.status).toBe('ok');
    expect(res.body.info.rheo).toEqual({
      status: 'up',
      groups: { 'market-events/risk': { lag: 0, inflight: 0, deadLetters: 0, oldestUnsettledAgeMs: null, consumer: 'running' } },
    });
  });

  it('goes down naming the group while lag exceeds maxLag, and up again after consumption', async () => {
    const client = app.get(RheoClient);
    await client.appendBatch(
      'market-events',
      Array.from({ length: 6 }, (_, i) => ({ payload: { i } })),
    );
    await until('handler holding a lease', () => gate.running === 1);
    const down = await request(app.getHttpServer()).get('/health').expect(503);
    expect(down.body.status).toBe('error');
    expect(down.body.error.rheo.status).toBe('down');
    expect(down.body.error.rheo.failing).toEqual(['market-events/risk: lag 6 > 3']);
    expect(down.body.error.rheo.groups['market-events/risk']).toMatchObject({ lag: 6, inflight: 1 });
    gate.open = true;
    await until('caught up', async () => (await client.lag('market-events', 'risk')).lag === 0);
    const up = await request(app.getHttpServer()).get('/health').expect(200);
    expect(up.body.info.rheo.groups['market-events/risk'].lag).toBe(0);
  });

  it('reports thresholds on the oldest unsettled event and explicit groups', async () => {
    const indicator = app.get(RheoHealthIndicator);
    gate.open = false;
    const client = app.get(RheoClient);
    await client.append('market-events', { payload: { late: true } });
    await until('held', () => gate.running === 1);
    const result = await until('an old unsettled event', async () => {
      const r = await indicator.isHealthy('rheo', { maxOldestUnackedMs: 0, groups: ['market-events/risk'] });
      return r.rheo.status === 'down' ? r : null;
    });
    expect(result.rheo.failing).toEqual([expect.stringMatching(/^market-events\/risk: oldest unsettled event \d+ ms old > 0 ms$/)]);
    const missing = await indicator.isHealthy('rheo', { groups: [{ stream: 'market-events', group: 'nobody' }] });
    expect(missing.rheo).toMatchObject({ status: 'down', failing: [expect.stringContaining('market-events/nobody')] });
    await expect(indicator.isHealthy('rheo', { maxLag: -1 })).rejects.toMatchObject({ code: 'invalid_argument', field: 'maxLag' });
    // A typo is refused, not read as "no limit" (which would report up whatever happens).
    await expect(indicator.isHealthy('rheo', { maxlag: 3 } as never)).rejects.toMatchObject({
      code: 'invalid_argument',
      field: 'options.maxlag',
      message: expect.stringContaining('(use maxLag, maxOldestUnackedMs, maxDeadLetters, deadLetterWindowMs, groups, checkLagWhilePaused)'),
    });
    await expect(indicator.isHealthy('rheo', { groups: [{ stream: 'market-events', grop: 'risk' }] } as never)).rejects.toMatchObject({
      code: 'invalid_argument',
      field: 'groups[0].grop',
    });
    gate.open = true;
    await until('caught up', async () => (await client.lag('market-events', 'risk')).lag === 0);
  });

  it('goes down when the backend stops answering', async () => {
    await backend.close();
    const res = await request(app.getHttpServer()).get('/health').expect(503);
    expect(res.body.error.rheo).toEqual({ status: 'down', message: expect.stringMatching(/^backend unreachable: /) });
  });
});
