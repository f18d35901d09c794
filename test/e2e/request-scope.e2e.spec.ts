import { Controller, type INestApplication, Injectable, Scope } from '@nestjs/common';
import { Ctx, Payload } from '@nestjs/microservices';
import { memoryBackend, RheoClient, RheoConsumer, RheoContext, RheoModule, RheoReject, type JsonValue } from '../../lib';
import { startHybrid } from './support';
import { until } from '../support/until';

let instances = 0;
const seen: Array<{ instance: number; id: string }> = [];

/** A per-delivery dependency: request scope makes the controller per-delivery too. */
@Injectable({ scope: Scope.REQUEST })
class PerDelivery {
  readonly n = ++instances;
}

@Controller()
class ScopedController {
  constructor(private readonly perDelivery: PerDelivery) {}

  @RheoConsumer({ stream: 'scoped', group: 'g', pollMs: 10 })
  onEvent(@Payload() payload: { reject?: boolean }, @Ctx() ctx: RheoContext) {
    if (payload.reject) throw new RheoReject('rejected in request scope');
    seen.push({ instance: this.perDelivery.n, id: ctx.event.id });
  }
}

describe('a request-scoped consumer', () => {
  let app: INestApplication;

  beforeAll(async () => {
    app = await startHybrid({
      imports: [RheoModule.forRoot({ backend: memoryBackend(), streams: [{ name: 'scoped' }] })],
      controllers: [ScopedController],
      providers: [PerDelivery],
    });
  });

  afterAll(async () => {
    await app.close();
  });

  it('gets a fresh instance per delivery, and outcomes still apply', async () => {
    const client = app.get(RheoClient);
    const a = await client.append('scoped', { payload: { n: 1 } as JsonValue });
    const b = await client.append('scoped', { payload: { n: 2 } as JsonValue });
    const c = await client.append('scoped', { payload: { reject: true } });
    await until('settled', async () => (await client.lag('scoped', 'g')).lag === 0);
    expect(seen.map((s) => s.id)).toEqual([a.id, b.id]);
    expect(new Set(seen.map((s) => s.instance)).size).toBe(2);
    expect(await client.deadLetters('scoped', 'g')).toEqual([
      expect.objectContaining({ eventId: c.id, attempt: 1, reason: 'rejected in request scope' }),
    ]);
  });
});
