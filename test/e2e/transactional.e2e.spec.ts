// @RheoConsumer({ transactional: true }) on PostgreSQL through TypeOrmModule: the
// handler writes through ctx.manager, and its rows commit with the delivery's ack
// (a throw rolls them back and the delivery is retried). A backend that cannot do
// it, or the option in the module's configuration, fails the start naming it.
import { Controller, type INestApplication } from '@nestjs/common';
import { Ctx, Payload } from '@nestjs/microservices';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { type JsonValue, memoryBackend, RheoClient, RheoConsumer, RheoContext, RheoModule, RheoRetry, typeormBackend } from '../../lib';
import { dropSchema, freshSchema, PG_URL } from '../sql/pg-helpers';
import { createMicroservice, startHybrid } from './support';
import { until } from '../support/until';

const schema = freshSchema('e2etx');
const seen: Array<{ isEntityManager: boolean; attempt: number }> = [];

@Controller()
class LedgerController {
  @RheoConsumer({ stream: 'payments', group: 'ledger', transactional: true, concurrency: 4, pollMs: 20 })
  async onPayment(@Payload() payment: { id: string; cents: number }, @Ctx() ctx: RheoContext<JsonValue, EntityManager>) {
    seen.push({ isEntityManager: ctx.manager instanceof EntityManager, attempt: ctx.attempt });
    await ctx.manager.query(`INSERT INTO "${schema}".ledger (payment_id, cents) VALUES ($1, $2)`, [payment.id, payment.cents]);
    // Every third payment fails its first attempt after writing: that write must not survive.
    if (payment.cents % 3 === 0 && ctx.attempt === 1) throw new RheoRetry('ledger busy', { delayMs: 0 });
  }
}

@Controller()
class MemoryLedgerController {
  @RheoConsumer({ stream: 'payments', group: 'ledger', transactional: true })
  onPayment(@Payload() payment: JsonValue) {
    void payment;
  }
}

@Controller()
class PlainController {
  @RheoConsumer({ stream: 'payments', group: 'ledger' })
  onPayment(@Payload() payment: JsonValue) {
    void payment;
  }
}

describe('@RheoConsumer({ transactional: true })', () => {
  let app: INestApplication;

  beforeAll(async () => {
    app = await startHybrid({
      imports: [
        TypeOrmModule.forRoot({ type: 'postgres', url: PG_URL, poolSize: 8 }),
        RheoModule.forRootAsync({
          inject: [DataSource],
          useFactory: async (ds: DataSource) => {
            await ds.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
            await ds.query(
              `CREATE TABLE IF NOT EXISTS "${schema}".ledger (id bigserial PRIMARY KEY, payment_id text NOT NULL, cents int NOT NULL)`,
            );
            return { backend: typeormBackend({ dataSource: ds, schema }), streams: [{ name: 'payments', partitions: 2 }] };
          },
        }),
      ],
      controllers: [LedgerController],
    });
  });

  afterAll(async () => {
    await app?.close();
    await dropSchema(schema);
  });

  it('commits the rows written through ctx.manager with the ack: one row per payment, retries included', async () => {
    const client = app.get(RheoClient);
    const ds = app.get(DataSource);
    await client.appendBatch(
      'payments',
      Array.from({ length: 30 }, (_, i) => ({ key: `p${i}`, payload: { id: `p${i}`, cents: i } })),
    );
    await until('ledger consumed every payment', async () => (await client.lag('payments', 'ledger')).lag === 0, 20_000);
    const rows: Array<{ payment_id: string }> = await ds.query(`SELECT payment_id FROM "${schema}".ledger`);
    expect(rows).toHaveLength(30);
    expect(new Set(rows.map((r) => r.payment_id)).size).toBe(30);
    expect(seen.every((s) => s.isEntityManager)).toBe(true);
    expect(seen.filter((s) => s.attempt === 2)).toHaveLength(10);
  });

  it('fails the start on a backend that cannot ack inside a transaction, naming the handler and the option', async () => {
    const micro = await createMicroservice({
      imports: [RheoModule.forRoot({ backend: memoryBackend(), streams: [{ name: 'payments' }] })],
      controllers: [MemoryLedgerController],
    });
    try {
      await expect(micro.listen()).rejects.toMatchObject({
        code: 'invalid_argument',
        field: 'transactional',
        message: expect.stringMatching(/^MemoryLedgerController\.onPayment: transactional needs a backend/),
      });
    } finally {
      await micro.close();
    }
  });

  it("refuses transactional in the module's configuration: the handler relies on it, so the decorator decides", async () => {
    const boot = createMicroservice({
      imports: [
        RheoModule.forRoot({
          backend: memoryBackend(),
          streams: [{ name: 'payments' }],
          consumers: { 'payments/ledger': { transactional: true } as never },
        }),
      ],
      controllers: [PlainController],
    }).then((m) => m.listen());
    await expect(boot).rejects.toMatchObject({ code: 'invalid_argument', field: 'consumers["payments/ledger"].transactional' });
  });
});
