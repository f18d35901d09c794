// Batch consumers and handler timeouts through a Nest app on SQLite (issue 13,
// ADR 029): @Payload() is the array, @Ctx() a RheoBatchContext with per-event
// outcomes; timeoutMs aborts ctx.signal and settles by onTimeout.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Controller, type INestApplication } from '@nestjs/common';
import { Ctx, Payload } from '@nestjs/microservices';
import {
  RheoBatchContext,
  RheoClient,
  RheoConsumer,
  RheoContext,
  RheoError,
  RheoModule,
  RheoServer,
  sqliteBackend,
  type Outcome,
} from '../../lib';
import { createMicroservice, startHybrid } from '../e2e/support';
import { until } from '../support/until';

interface Quote {
  n: number;
}

const batches: Quote[][] = [];
const contexts: Array<{ stream: string; group: string; ids: string[] }> = [];
const aborts: string[] = [];

@Controller()
class QuotesController {
  @RheoConsumer({ stream: 'quotes', group: 'bulk', pollMs: 20, batch: { size: 4, maxWaitMs: 20 } })
  onQuotes(@Payload() quotes: Quote[], @Ctx() ctx: RheoBatchContext<Quote>) {
    batches.push(quotes);
    contexts.push({ stream: ctx.stream, group: ctx.group, ids: ctx.events.map((e) => e.id) });
    for (const e of ctx.events) if (e.payload.n === 3) ctx.reject(e, 'three is not a quote');
  }

  @RheoConsumer({ stream: 'failing', group: 'bulk', pollMs: 20, maxAttempts: 1, batch: { size: 3, maxWaitMs: 20 } })
  onFailing(@Payload() _quotes: Quote[]) {
    throw new Error('downstream refused the batch');
  }

  @RheoConsumer({ stream: 'slow', group: 'slow', pollMs: 20, timeoutMs: 50, onTimeout: 'dead-letter' })
  async onSlow(@Payload() _quote: Quote, @Ctx() ctx: RheoContext) {
    await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve()));
    aborts.push((ctx.signal.reason as RheoError).message);
  }
}

const dir = mkdtempSync(join(tmpdir(), 'rheo-nest-batch-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('Nest: batch consumers and handler timeouts (sqlite)', () => {
  let app: INestApplication;

  beforeAll(async () => {
    app = await startHybrid({
      imports: [
        RheoModule.forRoot({
          backend: sqliteBackend({ database: join(dir, 'app.db') }),
          streams: [{ name: 'quotes' }, { name: 'failing' }, { name: 'slow' }],
        }),
      ],
      controllers: [QuotesController],
    });
  });
  afterAll(() => app.close());

  it('hands @Payload() the array of payloads and @Ctx() the events; per-event rejects stand, the rest are acked in one settle', async () => {
    const client = app.get(RheoClient);
    const settled: Array<[number, Outcome['kind']]> = [];
    app.get(RheoServer).on('settled', (ref, lease, outcome) => {
      if (ref.stream === 'quotes') settled.push([(lease.event.payload as unknown as Quote).n, outcome.kind]);
    });
    const appended = await client.appendBatch(
      'quotes',
      Array.from({ length: 6 }, (_, n) => ({ payload: { n } })),
    );
    await until('lag 0', async () => (await client.lag('quotes', 'bulk')).lag === 0, 20_000);
    expect(batches.flat().map((q) => q.n)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(batches.every((b) => b.length <= 4)).toBe(true);
    expect(contexts.flatMap((c) => c.ids)).toEqual(appended.map((e) => e.id));
    expect(contexts.every((c) => c.stream === 'quotes' && c.group === 'bulk')).toBe(true);
    expect(settled.sort((a, b) => a[0] - b[0])).toEqual([
      [0, 'ack'],
      [1, 'ack'],
      [2, 'ack'],
      [3, 'reject'],
      [4, 'ack'],
      [5, 'ack'],
    ]);
    const dead = await client.deadLetters('quotes', 'bulk');
    expect(dead.map((d) => [d.eventId, d.reason])).toEqual([[appended[3].id, 'three is not a quote']]);
  });

  it('settles every event of a batch that throws by the error (here: dead-lettered, maxAttempts 1)', async () => {
    const client = app.get(RheoClient);
    await client.appendBatch(
      'failing',
      Array.from({ length: 3 }, (_, n) => ({ payload: { n } })),
    );
    await until('all dead-lettered', async () => (await client.deadLetters('failing', 'bulk')).length === 3, 20_000);
    const dead = await client.deadLetters('failing', 'bulk');
    expect(new Set(dead.map((d) => d.reason))).toEqual(new Set(['downstream refused the batch']));
  });

  it("aborts ctx.signal at timeoutMs and dead-letters the event with onTimeout 'dead-letter'", async () => {
    const client = app.get(RheoClient);
    const e = await client.append('slow', { payload: { n: 1 } });
    await until('dead-lettered', async () => (await client.deadLetters('slow', 'slow')).length === 1, 20_000);
    const [dead] = await client.deadLetters('slow', 'slow');
    expect(dead).toMatchObject({ eventId: e.id, reason: 'timeout after 50 ms' });
    await until('the handler saw the abort', () => aborts.length === 1);
    expect(aborts[0]).toMatch(/^timeout after 50 ms/);
    const group = app.get(RheoServer).unwrap<{ groups: Map<string, { stats: { timeouts: number; lateResults: number } }> }>().groups;
    await until('late result counted', () => group.get('slow/slow')!.stats.lateResults === 1);
    expect(group.get('slow/slow')!.stats.timeouts).toBe(1);
  });
});

describe('Nest: batch and timeout options', () => {
  it('refuses batch in the module defaults (it changes what handlers receive), naming the field', async () => {
    await expect(
      createMicroservice({
        imports: [RheoModule.forRoot({ backend: sqliteBackend({ database: ':memory:' }), defaults: { batch: { size: 2 } } as never })],
      }),
    ).rejects.toThrow(/defaults\.batch is set on @RheoConsumer only/);
  });

  it('refuses a bad batch size or timeout at startup, naming the handler and the field', async () => {
    @Controller()
    class BadController {
      @RheoConsumer({ stream: 'quotes', group: 'bad', batch: { size: 0 } })
      onBad() {}
    }
    const app = await createMicroservice({
      imports: [RheoModule.forRoot({ backend: sqliteBackend({ database: ':memory:' }), streams: [{ name: 'quotes' }] })],
      controllers: [BadController],
    });
    await expect(app.listen()).rejects.toMatchObject({
      field: 'batch.size',
      message: expect.stringMatching(/^BadController\.onBad: batch\.size/),
    });
    await app.close();

    @Controller()
    class BadTimeoutController {
      @RheoConsumer({ stream: 'quotes', group: 'bad', timeoutMs: 0 })
      onBad() {}
    }
    const other = await createMicroservice({
      imports: [
        RheoModule.forRoot({
          backend: sqliteBackend({ database: ':memory:' }),
          streams: [{ name: 'quotes' }],
          consumers: { 'quotes/bad': { onTimeout: 'never' as never } },
        }),
      ],
      controllers: [BadTimeoutController],
    });
    await expect(other.listen()).rejects.toMatchObject({ field: 'timeoutMs' });
    await other.close();
  });
});
