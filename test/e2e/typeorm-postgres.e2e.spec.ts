import { Body, Controller, type INestApplication, Post } from '@nestjs/common';
import { Ctx, Payload } from '@nestjs/microservices';
import { TerminusModule } from '@nestjs/terminus';
import { InjectDataSource, TypeOrmModule } from '@nestjs/typeorm';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { RheoClient, RheoConsumer, RheoContext, RheoModule, typeormBackend } from '../../lib';
import { dropSchema, freshSchema, PG_URL } from '../sql/pg-helpers';
import { startHybrid } from './support';
import { until } from '../support/until';
import { healthController } from './health-controller';

// The PostgreSQL wiring a Nest user writes: TypeOrmModule owns the DataSource,
// RheoModule.forRootAsync builds the backend on it, and an HTTP endpoint writes a
// business row and its event in one transaction (outbox).
const schema = freshSchema('e2e');
const received: Array<{ id: string; total: number; attempt: number; partition: number }> = [];

@Controller()
class OrdersController {
  constructor(
    @InjectDataSource() private readonly ds: DataSource,
    private readonly rheo: RheoClient,
  ) {}

  @Post('orders')
  async place(@Body() body: { id: string; total: number; fail?: boolean }) {
    try {
      await this.ds.transaction(async (manager) => {
        await manager.query(`INSERT INTO "${schema}".orders (id, total) VALUES ($1, $2)`, [body.id, body.total]);
        await this.rheo.append('orders', { id: `order-placed-${body.id}`, key: body.id, type: 'order_placed', payload: body }, { manager });
        if (body.fail) throw new Error('payment declined');
      });
      return { placed: true };
    } catch (err) {
      return { placed: false, reason: (err as Error).message };
    }
  }

  @RheoConsumer({ stream: 'orders', group: 'billing', maxDemand: 10, concurrency: 4, pollMs: 50 })
  async onOrder(@Payload() order: { id: string; total: number }, @Ctx() ctx: RheoContext) {
    received.push({ id: order.id, total: order.total, attempt: ctx.attempt, partition: ctx.event.partition });
  }
}

const HealthController = healthController({ maxLag: 100 });

describe('TypeOrmModule + RheoModule.forRootAsync on PostgreSQL', () => {
  let app: INestApplication;

  beforeAll(async () => {
    app = await startHybrid({
      imports: [
        TypeOrmModule.forRoot({ type: 'postgres', url: PG_URL, poolSize: 5 }),
        RheoModule.forRootAsync({
          inject: [DataSource],
          useFactory: async (ds: DataSource) => {
            await ds.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
            await ds.query(`CREATE TABLE IF NOT EXISTS "${schema}".orders (id text PRIMARY KEY, total integer NOT NULL)`);
            return { backend: typeormBackend({ dataSource: ds, schema }), streams: [{ name: 'orders', partitions: 3 }] };
          },
        }),
        TerminusModule,
      ],
      controllers: [OrdersController, HealthController],
    });
  });

  afterAll(async () => {
    await app?.close();
    await dropSchema(schema);
  });

  it('appends through RheoClient, consumes through @RheoConsumer, and /health is up', async () => {
    const client = app.get(RheoClient);
    expect(client.unwrap().backend.name).toBe('postgres');
    const http = request(app.getHttpServer());
    for (let i = 0; i < 20; i++)
      await http
        .post('/orders')
        .send({ id: `o${i}`, total: 10 * i })
        .expect(201, { placed: true });

    await until('billing consumed every order', async () => (await client.lag('orders', 'billing')).lag === 0 && received.length >= 20);
    expect(received.map((r) => r.id).sort()).toEqual(Array.from({ length: 20 }, (_, i) => `o${i}`).sort());
    expect(received.every((r) => r.attempt === 1)).toBe(true);
    expect(new Set(received.map((r) => r.partition)).size).toBeGreaterThan(1);

    const health = await http.get('/health').expect(200);
    expect(health.body.info.rheo.groups['orders/billing']).toMatchObject({ lag: 0, inflight: 0, deadLetters: 0 });
  });

  it('commits the business row and its event together, and rolls both back together', async () => {
    const client = app.get(RheoClient);
    const ds = app.get(DataSource);
    const http = request(app.getHttpServer());
    await http.post('/orders').send({ id: 'ok-1', total: 5 }).expect(201, { placed: true });
    await http.post('/orders').send({ id: 'bad-1', total: 7, fail: true }).expect(201, { placed: false, reason: 'payment declined' });

    const rows = await ds.query(`SELECT id FROM "${schema}".orders WHERE id IN ('ok-1', 'bad-1') ORDER BY id`);
    expect(rows).toEqual([{ id: 'ok-1' }]);
    const events = await client.query({ stream: 'orders', where: { type: 'order_placed' }, limit: 1000 });
    const ids = events.map((e) => e.id);
    expect(ids).toContain('order-placed-ok-1');
    expect(ids).not.toContain('order-placed-bad-1');
    await until('billing consumed the committed order', () => received.some((r) => r.id === 'ok-1'));
    expect(received.some((r) => r.id === 'bad-1')).toBe(false);
  });
});
