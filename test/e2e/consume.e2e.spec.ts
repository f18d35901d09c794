import { Controller, type INestApplication } from '@nestjs/common';
import { Ctx, Payload } from '@nestjs/microservices';
import { lastValueFrom } from 'rxjs';
import { memoryBackend, RheoClient, RheoConsumer, RheoContext, RheoModule, type JsonValue } from '../../lib';
import { startHybrid } from './support';
import { until } from '../support/until';

interface Seen {
  payload: JsonValue;
  ctx: RheoContext;
}

const seen: Record<string, Seen[]> = { billing: [], audit: [] };

@Controller()
class OrdersController {
  @RheoConsumer({ stream: 'orders', group: 'billing', pollMs: 20, concurrency: 4 })
  onBilling(@Payload() payload: JsonValue, @Ctx() ctx: RheoContext) {
    seen.billing.push({ payload, ctx });
  }

  @RheoConsumer({ stream: 'orders', group: 'audit', pollMs: 20 })
  async onAudit(@Payload() payload: JsonValue, @Ctx() ctx: RheoContext) {
    await new Promise((r) => setTimeout(r, 1));
    seen.audit.push({ payload, ctx });
  }
}

describe('RheoConsumer through a hybrid Nest app', () => {
  let app: INestApplication;
  let client: RheoClient;

  beforeAll(async () => {
    app = await startHybrid({
      imports: [RheoModule.forRoot({ backend: memoryBackend(), streams: [{ name: 'orders', partitions: 3 }] })],
      controllers: [OrdersController],
    });
    client = app.get(RheoClient);
  });

  afterAll(async () => {
    await app.close();
  });

  it('delivers an appended event to the handler with its payload and context', async () => {
    const stored = await client.append('orders', {
      key: 'customer-7',
      type: 'order_placed',
      metadata: { correlationId: 'c-1' },
      payload: { orderId: 1, amount: 12.5 },
    });
    const got = await until('billing delivery', () => seen.billing.find((s) => s.ctx.event.id === stored.id));
    expect(got.payload).toEqual({ orderId: 1, amount: 12.5 });
    expect(got.ctx).toBeInstanceOf(RheoContext);
    expect(got.ctx.stream).toBe('orders');
    expect(got.ctx.group).toBe('billing');
    expect(got.ctx.attempt).toBe(1);
    expect(got.ctx.event).toMatchObject({
      id: stored.id,
      key: 'customer-7',
      type: 'order_placed',
      partition: stored.partition,
      sequence: stored.sequence,
    });
    expect(got.ctx.metadata).toEqual({ correlationId: 'c-1' });
    expect(got.ctx.partition).toBe(stored.partition);
    expect(got.ctx.sequence).toBe(stored.sequence);
    expect(got.ctx.event.timestamp).toEqual(stored.timestamp);
    expect(typeof got.ctx.leaseId).toBe('string');
    expect(got.ctx.leaseExpiresAt.getTime()).toBeGreaterThan(stored.timestamp.getTime());
    expect(got.ctx.getArgs()[0]).toBe(got.ctx.lease);
  });

  it('gives every group every event, each group acking its own', async () => {
    const before = { billing: seen.billing.length, audit: seen.audit.length };
    const events = await client.appendBatch(
      'orders',
      Array.from({ length: 60 }, (_, i) => ({ key: `k${i % 7}`, payload: { n: i } })),
    );
    await until(
      'both groups caught up',
      async () => (await client.lag('orders', 'billing')).lag === 0 && (await client.lag('orders', 'audit')).lag === 0,
    );
    for (const group of ['billing', 'audit'] as const) {
      const batch = new Set(events.map((e) => e.id));
      const ids = seen[group]
        .slice(before[group])
        .map((s) => s.ctx.event.id)
        .filter((id) => batch.has(id));
      expect(new Set(ids)).toEqual(batch);
      expect(ids).toHaveLength(batch.size); // no redelivery without a failure
      const info = await client.groupInfo('orders', group);
      expect(info.inflight).toBe(0);
      expect(info.deadLetters).toBe(0);
    }
  });

  it('emit(stream, payload) appends through the ClientProxy surface', async () => {
    const stored = await lastValueFrom(client.emit('orders', { via: 'emit' }));
    expect(stored).toMatchObject({ stream: 'orders', payload: { via: 'emit' } });
    await until('emitted event consumed', () => seen.audit.some((s) => s.ctx.event.id === stored.id));
    expect(() => client.send('orders', {})).toThrow(/does not support send/);
  });
});
