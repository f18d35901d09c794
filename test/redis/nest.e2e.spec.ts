import { Controller, type INestApplication } from '@nestjs/common';
import { Ctx, Payload } from '@nestjs/microservices';
import { redisBackend, RheoClient, RheoConsumer, RheoContext, RheoModule, RheoReject, type JsonValue } from '../../lib';
import { startHybrid } from '../e2e/support';
import { until } from '../support/until';
import { deleteKeys, freshPrefix, REDIS_URL } from './support';

// The whole Nest stack on the Redis backend: module, transport, @RheoConsumer,
// RheoClient; shutdown closes the client the backend created.
const prefix = freshPrefix('nest');
const handled: Array<{ payload: JsonValue; attempt: number }> = [];

@Controller()
class QuotesController {
  @RheoConsumer({ stream: 'quotes', group: 'pricing', pollMs: 1000, concurrency: 4 })
  onQuote(@Payload() payload: JsonValue, @Ctx() ctx: RheoContext) {
    if ((payload as { bad?: boolean }).bad) throw new RheoReject('bad quote');
    handled.push({ payload, attempt: ctx.attempt });
  }
}

describe('Nest app on the redis backend', () => {
  let app: INestApplication;
  let client: RheoClient;

  beforeAll(async () => {
    app = await startHybrid({
      imports: [RheoModule.forRoot({ backend: redisBackend({ url: REDIS_URL, prefix }), streams: [{ name: 'quotes', partitions: 2 }] })],
      controllers: [QuotesController],
    });
    client = app.get(RheoClient);
  });

  afterAll(async () => {
    await app?.close();
    await deleteKeys(prefix);
  });

  it('delivers appended events to the handler, acks them and dead-letters a rejected one', async () => {
    await client.appendBatch<JsonValue>('quotes', [
      ...Array.from({ length: 20 }, (_, i) => ({ key: `k${i % 5}`, payload: { i } })),
      { key: 'k0', payload: { bad: true } },
    ]);
    await until('the group caught up', async () => (await client.lag('quotes', 'pricing')).lag === 0);
    expect(handled.map((h) => (h.payload as { i: number }).i).sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i));
    expect(handled.every((h) => h.attempt === 1)).toBe(true);
    const info = await client.groupInfo('quotes', 'pricing');
    expect(info).toMatchObject({ inflight: 0, deadLetters: 1 });
  });
});
