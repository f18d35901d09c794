import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Controller, type INestApplication } from '@nestjs/common';
import { Ctx, Payload } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import {
  memoryBackend,
  postgresBackend,
  redisBackend,
  Rheo,
  RheoClient,
  RheoConsumer,
  RheoContext,
  RheoModule,
  RheoReject,
  RheoRetry,
  RheoServer,
  sqliteBackend,
} from '../../lib';
import { PG_SCHEMA } from '../../lib/backends/postgres/schema';
import { pgTables } from '../../lib/backends/sql/names';
import { SQLITE_SCHEMA } from '../../lib/backends/sqlite/schema';
import { dropSchema, freshSchema, pgDataSource, PG_URL } from '../sql/pg-helpers';
import { ChannelRecorder } from '../support/channel-recorder';
import { CapturingLogger } from './log-capture';
import { until } from '../support/until';

type Order = { kind: 'ok' | 'throw' | 'reject' | 'retry' | 'wait' };

let gate: Promise<void> = Promise.resolve();
let openGate: () => void = () => undefined;
const started: string[] = [];

@Controller()
class Billing {
  @RheoConsumer({
    stream: 'orders',
    group: 'billing',
    maxAttempts: 2,
    retry: { initialMs: 5, factor: 1, maxMs: 5 },
    pollMs: 10,
    maxDemand: 3,
    concurrency: 1,
  })
  async bill(@Payload() order: Order, @Ctx() ctx: RheoContext): Promise<void> {
    started.push(ctx.event.id);
    if (order.kind === 'throw') throw new Error('card declined');
    if (order.kind === 'reject') throw new RheoReject('unknown customer');
    if (order.kind === 'retry' && ctx.attempt === 1) throw new RheoRetry('bank busy', { delayMs: 7 });
    if (order.kind === 'wait') await gate;
  }
}

describe('logs a person can read (SQLite)', () => {
  let dir: string;
  let file: string;
  let app: INestApplication;
  let logger: CapturingLogger;
  let closed: boolean;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rheo-logs-'));
    file = join(dir, 'rheo.db');
    logger = new CapturingLogger();
    started.length = 0;
    gate = new Promise<void>((resolve) => (openGate = resolve));
    const ref = await Test.createTestingModule({
      imports: [RheoModule.forRoot({ backend: sqliteBackend({ database: file }), streams: [{ name: 'orders' }] })],
      controllers: [Billing],
    }).compile();
    app = ref.createNestApplication({ logger });
    app.connectMicroservice({ strategy: app.get(RheoServer) }, { inheritAppConfig: true });
    await app.init();
    await app.startAllMicroservices();
    closed = false;
  });

  afterEach(async () => {
    openGate();
    if (!closed) await app.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const client = () => app.get(RheoClient);
  const deadLetters = async (n: number) => (await client().deadLetters('orders', 'billing')).length === n;

  it('logs the backend, the tables it installed and the consumer with its settings, once each at LOG', async () => {
    const latest = Math.max(...SQLITE_SCHEMA.map((v) => v.version));
    const versions = SQLITE_SCHEMA.map((v) => v.version).join(', ');
    const lines = logger.lines('log');
    const mine = lines.filter((l) => l.startsWith('[RheoModule]') || l.startsWith('[RheoServer]'));
    expect(mine).toEqual([
      `[RheoModule] Instance "default": sqlite backend, file ${file}`,
      `[RheoModule] Instance "default": installed the rheo tables (schema version${latest > 1 ? 's' : ''} ${versions})`,
      '[RheoServer] Billing.bill (orders/billing): consumer started: maxDemand 3, concurrency 1, leaseMs 30000, pollMs 10, ' +
        'partitions all, maxAttempts 2, retry 5 ms x1 up to 5 ms, ordering none',
    ]);
  });

  it('a plain throw: one WARN line per retry and per dead letter, the stack at DEBUG only, nothing at ERROR', async () => {
    const event = await client().append('orders', { payload: { kind: 'throw' } });
    await until('dead letter', () => deadLetters(1));
    const id = event.id;
    await until('dead-letter line', () => logger.lines('warn').some((l) => l.includes('dead-lettered')));
    expect(logger.lines('warn')).toEqual([
      `[RheoServer] Billing.bill (orders/billing): event ${id} failed (attempt 1/2), retrying in 5 ms: card declined`,
      `[RheoServer] Billing.bill (orders/billing): event ${id} dead-lettered (attempt 2/2, no attempts left): card declined`,
    ]);
    expect(logger.lines('error')).toEqual([]);
    const debug = logger.lines('debug').filter((l) => l.includes(id));
    expect(debug).toHaveLength(2);
    expect(debug[0]).toMatch(
      new RegExp(`^\\[RheoServer\\] Billing\\.bill \\(orders/billing\\): event ${id} attempt 1 threw: Error: card declined\\n\\s+at `),
    );
  });

  it("a RheoRetry's delay and a RheoReject's dead letter, each one WARN line without a stack", async () => {
    const retried = await client().append('orders', { payload: { kind: 'retry' } });
    const rejected = await client().append('orders', { payload: { kind: 'reject' } });
    await until('reject dead-lettered', () => deadLetters(1));
    await until('retried event acked', async () => (await client().lag('orders', 'billing')).lag === 0);
    expect(logger.lines('warn')).toEqual([
      `[RheoServer] Billing.bill (orders/billing): event ${retried.id} failed (attempt 1/2), retrying in 7 ms: bank busy`,
      `[RheoServer] Billing.bill (orders/billing): event ${rejected.id} dead-lettered (rejected, attempt 1/2): unknown customer`,
    ]);
    expect(logger.lines('error')).toEqual([]);
    // Deliberate outcomes are decisions, not failures: no stack anywhere.
    expect(logger.entries.filter((e) => e.message.includes('\n    at '))).toEqual([]);
  });

  it('tells retries and dead letters as the store wrote them after another process changed maxAttempts', async () => {
    // This app read maxAttempts 2 at boot; another process on the same file raises it to 3.
    const other = new Rheo(sqliteBackend({ database: file }));
    const rec = new ChannelRecorder();
    try {
      await other.updateGroup('orders', 'billing', { maxAttempts: 3 });
      const event = await client().append('orders', { payload: { kind: 'throw' } });
      await until('dead letter', () => deadLetters(1));
      await until('dead-letter line', () => logger.lines('warn').some((l) => l.includes('dead-lettered')));
      const id = event.id;
      expect(logger.lines('warn')).toEqual([
        `[RheoServer] Billing.bill (orders/billing): event ${id} failed (attempt 1/3), retrying in 5 ms: card declined`,
        `[RheoServer] Billing.bill (orders/billing): event ${id} failed (attempt 2/3), retrying in 5 ms: card declined`,
        `[RheoServer] Billing.bill (orders/billing): event ${id} dead-lettered (attempt 3/3, no attempts left): card declined`,
      ]);
      const settles = rec.messages('rheo:settle') as Array<{ eventId: string; attempt: number; outcome: string }>;
      expect(settles.filter((m) => m.eventId === id).map((m) => [m.attempt, m.outcome])).toEqual([
        [1, 'retry'],
        [2, 'retry'],
        [3, 'dead_letter'],
      ]);
      expect(rec.messages('rheo:dead_letter')).toMatchObject([{ eventId: id, attempt: 3, cause: 'max_attempts' }]);
    } finally {
      rec.close();
      await other.close();
    }
  });

  it('logs every admin action through RheoClient with its counts', async () => {
    await client().append('orders', { payload: { kind: 'reject' } });
    await until('dead letter', () => deadLetters(1));
    await client().redrive('orders', 'billing', { all: true });
    await until('dead-lettered again', async () => (await client().lag('orders', 'billing')).lag === 0 && (await deadLetters(1)));
    await client().replay('orders', 'billing', { afterSequence: 0 });
    await until(
      'replayed and dead-lettered again',
      async () => (await client().lag('orders', 'billing')).lag === 0 && (await deadLetters(1)),
    );
    await client().trim('orders');
    await client().purgeDeadLetters('orders', 'billing', { all: true });
    await client().reset('orders', 'billing', { confirm: true, start: 'end' });
    expect(logger.lines('log').filter((l) => l.startsWith('[RheoClient]'))).toEqual([
      '[RheoClient] Redrove 1 dead letter(s) of orders/billing (all)',
      '[RheoClient] Replayed orders/billing: 1 event(s) re-opened (after sequence 0)',
      '[RheoClient] Trimmed orders: 0 event(s) removed',
      '[RheoClient] Purged 1 dead letter(s) of orders/billing (all)',
      '[RheoClient] Reset orders/billing: every delivery forgotten, restarting from end',
    ]);
  });

  it("logs a drain's summary and each consumer's stop", async () => {
    await client().appendBatch('orders', [{ payload: { kind: 'wait' } }, { payload: { kind: 'ok' } }, { payload: { kind: 'ok' } }]);
    const server = app.get(RheoServer);
    await until('one handler running, two prefetched', () => started.length === 1 && server.consumers()[0].inflight === 3);
    closed = true;
    const closing = app.close();
    await until('draining', () => server.consumers()[0].state === 'draining');
    openGate();
    await closing;
    const lines = logger.lines('log').filter((l) => l.startsWith('[RheoServer]'));
    expect(lines.slice(-2)).toEqual([
      '[RheoServer] Billing.bill (orders/billing): consumer stopped',
      expect.stringMatching(
        /^\[RheoServer\] Drained 1 consumer\(s\) in \d+ ms: 1 running handler\(s\) finished, 2 prefetched lease\(s\) released$/,
      ),
    ]);
    expect(started).toHaveLength(1);
  });
});

describe('the backend line on PostgreSQL: target without credentials, and an upgrade', () => {
  const schema = freshSchema('logs');

  afterAll(() => dropSchema(schema));

  it('names host, database and schema, and the versions an upgrade from version 1 applied', async () => {
    // Version 1's tables, as a release before versions were recorded left them.
    const admin = await pgDataSource(1);
    try {
      for (const sql of PG_SCHEMA[0].up(pgTables(schema), schema)) await admin.query(sql);
    } finally {
      await admin.destroy();
    }
    const logger = new CapturingLogger();
    const ref = await Test.createTestingModule({
      imports: [RheoModule.forRoot({ backend: postgresBackend({ url: PG_URL, schema, poolSize: 2 }), streams: [{ name: 'orders' }] })],
    }).compile();
    const app = ref.createNestApplication({ logger });
    await app.init();
    await app.close();
    const url = new URL(PG_URL);
    const latest = Math.max(...PG_SCHEMA.map((v) => v.version));
    const applied = PG_SCHEMA.filter((v) => v.version > 1).map((v) => v.version);
    expect(logger.lines('log').filter((l) => l.startsWith('[RheoModule]'))).toEqual([
      `[RheoModule] Instance "default": postgres backend, ${url.host}, database ${url.pathname.slice(1)}, schema ${schema}`,
      `[RheoModule] Instance "default": upgraded the rheo tables from schema version 1 to ${latest} ` +
        `(applied schema version${applied.length > 1 ? 's' : ''} ${applied.join(', ')})`,
    ]);
    expect(logger.lines().join('\n')).not.toContain(`${url.username}@`);
  });
});

describe('Backend.describe: where the data lives, never credentials', () => {
  it('redis: host, port, database number and prefix from a URL, without user or password', async () => {
    const backend = redisBackend({ url: 'redis://ops:s3cret@127.0.0.1:6379/3', prefix: 'rheo-logs' });
    expect(backend.describe()).toEqual({ target: '127.0.0.1:6379, db 3, prefix rheo-logs' });
    await backend.close();
  });

  it('memory: says it is not durable', () => {
    expect(memoryBackend().describe()).toEqual({ target: 'in-process memory (not durable)' });
  });
});
