import { Controller, type INestApplication, Module } from '@nestjs/common';
import { Ctx, Payload } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { RheoClient, RheoConsumer, RheoContext, RheoModule, RheoServer, typeormBackend } from '../../lib';
import { startHybrid } from './support';
import { until } from '../support/until';

// The PostgreSQL wiring of docs/backends.md ("PostgreSQL and SQLite (TypeORM 1.1)"), copied
// as it is written there, plus a consumer: it must boot and consume. Two
// substitutions only: the URL (DATABASE_URL, else the machine's PostgreSQL) and a
// fresh schema per run instead of 'rheo'.
const DATABASE_URL = process.env.DATABASE_URL ?? process.env.RHEO_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const fresh = (label: string) => `rheo_t_readme_${label}_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
const schema = fresh('wiring');
const schemaWithoutStreams = fresh('nostreams');

interface Order {
  id: string;
  total: number;
}

const consumed: Array<{ order: Order; stream: string; key: string | null; attempt: number }> = [];

@Controller()
class OrdersController {
  @RheoConsumer({ stream: 'orders', group: 'billing', pollMs: 50 })
  async onOrder(@Payload() order: Order, @Ctx() ctx: RheoContext) {
    consumed.push({ order, stream: ctx.stream, key: ctx.event.key, attempt: ctx.attempt });
  }
}

// ---- the module of docs/backends.md, verbatim but for the URL and the schema ----
@Module({
  imports: [
    TypeOrmModule.forRoot({ type: 'postgres', url: DATABASE_URL }),
    RheoModule.forRootAsync({
      inject: [DataSource],
      useFactory: (dataSource: DataSource) => ({
        backend: typeormBackend({ dataSource, schema }),
        streams: [{ name: 'orders', partitions: 4 }], // every stream a consumer names
      }),
    }),
  ],
  controllers: [OrdersController],
})
class AppModule {}
// ----

async function dropSchemas(...names: string[]): Promise<void> {
  const ds = new DataSource({ type: 'postgres', url: DATABASE_URL, poolSize: 1 });
  await ds.initialize();
  try {
    for (const name of names) await ds.query(`DROP SCHEMA IF EXISTS "${name}" CASCADE`);
  } finally {
    await ds.destroy();
  }
}

describe('the documented PostgreSQL wiring (TypeOrmModule + RheoModule.forRootAsync)', () => {
  afterAll(async () => {
    await dropSchemas(schema, schemaWithoutStreams);
  });

  it('boots with a consumer, and an appended event is consumed', async () => {
    const app = await startHybrid({ imports: [AppModule] });
    try {
      const client = app.get(RheoClient);
      expect(client.unwrap().backend.name).toBe('postgres');
      expect(await client.listStreams()).toEqual([expect.objectContaining({ name: 'orders', partitions: 4 })]);

      const event = await client.append('orders', { key: 'order-42', type: 'order_placed', payload: { id: 'order-42', total: 99 } });
      await until(
        'the billing consumer handled the order',
        async () => (await client.lag('orders', 'billing')).lag === 0 && consumed.length > 0,
      );
      expect(consumed).toEqual([{ order: { id: 'order-42', total: 99 }, stream: 'orders', key: 'order-42', attempt: 1 }]);

      // The tables live in the schema the module named, on the DataSource TypeOrmModule owns.
      const rows = await app.get(DataSource).query(`SELECT id FROM "${schema}".rheo_events WHERE stream = 'orders'`);
      expect(rows).toEqual([{ id: event.id }]);
    } finally {
      await app.close();
    }
  });

  it('without `streams` (as the docs used to show it), the same module fails to boot once a consumer is added', async () => {
    @Module({
      imports: [
        TypeOrmModule.forRoot({ type: 'postgres', url: DATABASE_URL }),
        RheoModule.forRootAsync({
          inject: [DataSource],
          useFactory: (dataSource: DataSource) => typeormBackend({ dataSource, schema: schemaWithoutStreams }),
        }),
      ],
      controllers: [OrdersController],
    })
    class WithoutStreamsModule {}

    const ref = await Test.createTestingModule({ imports: [WithoutStreamsModule] }).compile();
    const app: INestApplication = ref.createNestApplication({ logger: false });
    try {
      app.connectMicroservice({ strategy: app.get(RheoServer) }, { inheritAppConfig: true });
      await app.init();
      await expect(app.startAllMicroservices()).rejects.toMatchObject({
        code: 'stream_not_found',
        message: expect.stringContaining('OrdersController.onOrder: stream "orders" does not exist'),
      });
    } finally {
      await app.close();
    }
  });
});
