import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Controller, type INestApplication } from '@nestjs/common';
import { Ctx, Payload } from '@nestjs/microservices';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { RheoClient, RheoConsumer, RheoContext, RheoModule, typeormBackend, type JsonValue } from '../../lib';
import { startHybrid } from '../e2e/support';
import { until } from '../support/until';
import { dropSchema, freshSchema, PG_URL } from './pg-helpers';

// The wiring docs/sql.md shows: RheoModule on the DataSource TypeOrmModule made,
// with the outbox written through the app's own transaction.
const seen: Array<{ payload: JsonValue; id: string }> = [];

@Controller()
class OrdersController {
  @RheoConsumer({ stream: 'orders', group: 'billing', pollMs: 50 })
  onOrder(@Payload() payload: JsonValue, @Ctx() ctx: RheoContext) {
    seen.push({ payload, id: ctx.event.id });
  }
}

const dir = mkdtempSync(join(tmpdir(), 'rheo-nest-sql-'));
const schema = freshSchema('nest');

describe.each([
  ['sqlite', () => ({ type: 'better-sqlite3' as const, database: join(dir, 'app.db') }), undefined],
  ['postgres', () => ({ type: 'postgres' as const, url: PG_URL }), schema],
])('Nest app on TypeOrmModule + RheoModule.forRootAsync (%s)', (_name, typeorm, pgSchema) => {
  let app: INestApplication;

  beforeAll(async () => {
    seen.length = 0;
    app = await startHybrid({
      imports: [
        TypeOrmModule.forRoot(typeorm()),
        RheoModule.forRootAsync({
          inject: [DataSource],
          useFactory: (dataSource: DataSource) => ({
            backend: typeormBackend({ dataSource, schema: pgSchema }),
            streams: [{ name: 'orders' }],
          }),
        }),
      ],
      controllers: [OrdersController],
    });
  });

  afterAll(async () => {
    await app.close();
    if (pgSchema) await dropSchema(pgSchema);
  });

  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('delivers events appended through RheoClient, and through the app transaction (outbox) only when it commits', async () => {
    const client = app.get(RheoClient);
    const ds = app.get(DataSource);
    const plain = await client.append('orders', { payload: { n: 1 } });
    await expect(
      ds.transaction(async (manager) => {
        await client.append('orders', { id: `rolled-back-${_name}`, payload: { n: 2 } }, { manager });
        throw new Error('rollback');
      }),
    ).rejects.toThrow('rollback');
    const committed = await ds.transaction((manager) => client.append('orders', { payload: { n: 3 } }, { manager }));
    await until(
      'both committed events handled',
      () => seen.some((s) => s.id === plain.id) && seen.some((s) => s.id === committed.id),
      20_000,
    );
    await until('lag 0', async () => (await client.lag('orders', 'billing')).lag === 0, 20_000);
    expect(seen.map((s) => s.payload)).toEqual([{ n: 1 }, { n: 3 }]);
    expect(committed.sequence).toBe(2);
  });
});
