import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Controller, Get, type INestApplication } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { HealthCheck, HealthCheckService, TerminusModule } from '@nestjs/terminus';
import request from 'supertest';
import {
  type Backend,
  ManualClock,
  postgresBackend,
  RheoClient,
  RheoConsumer,
  RheoHealthIndicator,
  RheoModule,
  RheoReject,
  sqliteBackend,
} from '../../lib';
import { dropSchema, freshSchema, PG_URL } from '../sql/pg-helpers';
import { startHybrid } from './support';
import { until } from '../support/until';

const WINDOW_MS = 60_000;
const GROUP = 'payments/ledger';

@Controller()
class LedgerController {
  /** Rejects poison: each one is dead-lettered on its first attempt. */
  @RheoConsumer({ stream: 'payments', group: 'ledger', pollMs: 10 })
  onPayment(@Payload() payload: { poison?: boolean }) {
    if (payload.poison) throw new RheoReject('unparseable amount');
  }
}

@Controller()
class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly rheo: RheoHealthIndicator,
  ) {}

  /** Down past 2 dead letters, whenever they died. */
  @Get('health')
  @HealthCheck()
  check() {
    return this.health.check([() => this.rheo.isHealthy('rheo', { maxDeadLetters: 2 })]);
  }

  /** Down at the first dead letter of the last minute: events are dying now. */
  @Get('health/recent')
  @HealthCheck()
  recent() {
    return this.health.check([() => this.rheo.isHealthy('rheo', { maxDeadLetters: 0, deadLetterWindowMs: WINDOW_MS })]);
  }
}

/** A real store per run, on the test clock (dead-letter times are the clock's). */
const stores: Array<{ name: string; open(clock: ManualClock): Backend; cleanup(): Promise<void> }> = [
  (() => {
    const dir = mkdtempSync(join(tmpdir(), 'rheo-health-dl-'));
    return {
      name: 'sqlite',
      open: (clock: ManualClock) => sqliteBackend({ database: join(dir, 'health.db'), clock }),
      cleanup: async () => rmSync(dir, { recursive: true, force: true }),
    };
  })(),
  (() => {
    const schema = freshSchema('health_dl');
    return {
      name: 'postgres',
      open: (clock: ManualClock) => postgresBackend({ url: PG_URL, schema, clock, poolSize: 3 }),
      cleanup: () => dropSchema(schema),
    };
  })(),
];

describe.each(stores)('/health with maxDeadLetters on $name', (store) => {
  const clock = new ManualClock(Date.UTC(2026, 0, 1));
  let app: INestApplication;
  let client: RheoClient;

  beforeAll(async () => {
    app = await startHybrid({
      imports: [RheoModule.forRoot({ backend: store.open(clock), streams: [{ name: 'payments' }] }), TerminusModule],
      controllers: [LedgerController, HealthController],
    });
    client = app.get(RheoClient);
  });

  afterAll(async () => {
    await app.close();
    await store.cleanup();
  });

  /** Append, then wait until the consumer has finished everything: `dead` dead letters in all. */
  async function consume(payloads: Array<{ poison?: boolean }>, dead: number): Promise<void> {
    await client.appendBatch(
      'payments',
      payloads.map((payload) => ({ payload })),
    );
    await until(`${dead} dead letters, nothing left`, async () => {
      const info = await client.groupInfo('payments', 'ledger');
      return info.lag.lag === 0 && info.inflight === 0 && info.deadLetters === dead;
    });
  }

  it('is up while the dead letters stay at maxDeadLetters, down (503) naming the group and the count past it', async () => {
    await consume([{ poison: true }, {}, { poison: true }], 2);
    const up = await request(app.getHttpServer()).get('/health').expect(200);
    expect(up.body.info.rheo).toEqual({
      status: 'up',
      groups: { [GROUP]: { lag: 0, inflight: 0, deadLetters: 2, oldestUnsettledAgeMs: null, consumer: 'running' } },
    });

    await consume([{ poison: true }], 3);
    const down = await request(app.getHttpServer()).get('/health').expect(503);
    expect(down.body.status).toBe('error');
    expect(down.body.error.rheo).toEqual({
      status: 'down',
      groups: { [GROUP]: { lag: 0, inflight: 0, deadLetters: 3, oldestUnsettledAgeMs: null, consumer: 'running' } },
      failing: [`${GROUP}: dead letters 3 > 2`],
    });
  });

  it('with a window, counts only the dead letters of the window: old ones no longer turn it down, new ones do', async () => {
    // The three dead letters above died just now.
    const now = await request(app.getHttpServer()).get('/health/recent').expect(503);
    expect(now.body.error.rheo.failing).toEqual([`${GROUP}: dead letters in the last ${WINDOW_MS} ms 3 > 0`]);
    expect(now.body.error.rheo.groups[GROUP]).toMatchObject({ deadLetters: 3, deadLettersInWindow: 3 });

    // A window later, they are old: up again, though all three are still there (and still fail the unwindowed check).
    clock.advance(WINDOW_MS + 1);
    const later = await request(app.getHttpServer()).get('/health/recent').expect(200);
    expect(later.body.info.rheo.groups[GROUP]).toMatchObject({ deadLetters: 3, deadLettersInWindow: 0 });
    await request(app.getHttpServer()).get('/health').expect(503);

    // Events start dying again: down, counting the new one only.
    await consume([{}, { poison: true }], 4);
    expect(await client.countDeadLetters('payments', 'ledger', { since: new Date(clock.now() - WINDOW_MS) })).toBe(1);
    const again = await request(app.getHttpServer()).get('/health/recent').expect(503);
    expect(again.body.error.rheo.failing).toEqual([`${GROUP}: dead letters in the last ${WINDOW_MS} ms 1 > 0`]);
    expect(again.body.error.rheo.groups[GROUP]).toMatchObject({ deadLetters: 4, deadLettersInWindow: 1 });

    // Exactly at the window's edge the dead letter still counts; a millisecond past, it no longer does.
    clock.advance(WINDOW_MS);
    await request(app.getHttpServer()).get('/health/recent').expect(503);
    clock.advance(1);
    await request(app.getHttpServer()).get('/health/recent').expect(200);
  });

  it('refuses bad dead-letter options naming the field', async () => {
    const indicator = app.get(RheoHealthIndicator);
    const refused = (options: object) => indicator.isHealthy('rheo', options as never);
    await expect(refused({ maxDeadLetters: -1 })).rejects.toMatchObject({ code: 'invalid_argument', field: 'maxDeadLetters' });
    await expect(refused({ maxDeadLetters: 1.5 })).rejects.toMatchObject({ code: 'invalid_argument', field: 'maxDeadLetters' });
    await expect(refused({ maxDeadLetters: '3' })).rejects.toMatchObject({ code: 'invalid_argument', field: 'maxDeadLetters' });
    await expect(refused({ maxDeadLetters: 0, deadLetterWindowMs: 0 })).rejects.toMatchObject({
      code: 'invalid_argument',
      field: 'deadLetterWindowMs',
    });
    await expect(refused({ maxDeadLetters: 0, deadLetterWindowMs: 2.5 })).rejects.toMatchObject({
      code: 'invalid_argument',
      field: 'deadLetterWindowMs',
    });
    // A window with no limit to apply it to.
    await expect(refused({ deadLetterWindowMs: 1000 })).rejects.toMatchObject({ code: 'invalid_argument', field: 'deadLetterWindowMs' });
    await expect(client.countDeadLetters('payments', 'ledger', { since: Date.now() as never })).rejects.toMatchObject({
      code: 'invalid_argument',
      field: 'options.since',
    });
  });
});
