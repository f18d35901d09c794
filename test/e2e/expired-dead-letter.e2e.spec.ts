import { Controller, type INestApplication, Injectable } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import { Registry } from 'prom-client';
import { ManualClock, memoryBackend, OnRheoEvent, Rheo, RheoConsumer, RheoModule, RheoServer, type RheoEventMap } from '../../lib';
import { CapturingLogger } from './log-capture';
import { until } from '../support/until';

// A process that crashes while it holds an event's last attempt (a poison event
// that kills it) leaves the lease to expire; the claim that finds it dead-letters
// it (ADR 035). That dead letter is made by a fetch, not a settle, and an operator
// must see it as any other: one WARN line saying which event and why, the
// deliveries counter's dead_letter outcome, and the dead_letter event.

const handled: string[] = [];

@Controller()
class Billing {
  @RheoConsumer({ stream: 'orders', group: 'billing', maxAttempts: 2, leaseMs: 1000, pollMs: 10 })
  bill(@Payload() order: { n: number }): void {
    handled.push(`order ${order.n}`);
  }
}

@Injectable()
class Alerts {
  readonly deadLetters: Array<RheoEventMap['dead_letter']> = [];

  @OnRheoEvent('dead_letter')
  dead(e: RheoEventMap['dead_letter']): void {
    this.deadLetters.push(e);
  }
}

describe('a dead letter made by a claim (a lease that expired on the last attempt)', () => {
  it('is one WARN line naming the event and why, a dead_letter in rheo_deliveries_total, and a dead_letter event', async () => {
    const clock = new ManualClock();
    const backend = memoryBackend({ clock });
    // The process that crashed: it took the poison event's two attempts and settled neither.
    const crashed = new Rheo(backend);
    await crashed.createStream('orders');
    await crashed.createGroup('orders', 'billing', { maxAttempts: 2 });
    const [poison] = await crashed.appendBatch('orders', [{ payload: { n: 1 } }]);
    await crashed.fetch('orders', 'billing', { leaseMs: 1000, consumerId: 'crashed' });
    clock.advance(1001);
    const [last] = await crashed.fetch('orders', 'billing', { leaseMs: 1000, consumerId: 'crashed' });
    expect(last.attempt).toBe(2);

    const logger = new CapturingLogger();
    const registry = new Registry();
    const ref = await Test.createTestingModule({
      imports: [RheoModule.forRoot({ backend, streams: [{ name: 'orders' }], metrics: { registry } })],
      controllers: [Billing],
      providers: [Alerts],
    }).compile();
    const app: INestApplication = ref.createNestApplication({ logger });
    app.connectMicroservice({ strategy: app.get(RheoServer) }, { inheritAppConfig: true });
    await app.init();
    await app.startAllMicroservices();
    try {
      const [next] = await app.get(Rheo).appendBatch('orders', [{ payload: { n: 2 } }]);
      // The restarted consumer polls; once the crashed lease has expired its claim dead-letters the poison event.
      clock.advance(1001);
      await until('the next event handled', () => handled.includes('order 2'));
      // Its ack settles after the handler returns: wait for it, not for the handler alone.
      const acked = 'rheo_deliveries_total{stream="orders",group="billing",outcome="ack"} 1';
      await until('the next event acked', async () => (await registry.metrics()).includes(acked));
      await until('the dead-letter line', () => logger.lines('warn').some((l) => l.includes('dead-lettered')));
      expect(logger.lines('warn').filter((l) => l.includes('dead-lettered'))).toEqual([
        `[RheoServer] Billing.bill (orders/billing): event ${poison.id} dead-lettered (attempt 2/2, lease expired): lease expired on attempt 2 of 2`,
      ]);
      expect(handled).toEqual(['order 2']);
      expect(next.sequence).toBe(2);

      const alerts = app.get(Alerts);
      expect(alerts.deadLetters).toEqual([
        {
          stream: 'orders',
          group: 'billing',
          handlerName: 'Billing.bill',
          eventId: poison.id,
          partition: 0,
          sequence: 1,
          attempt: 2,
          reason: 'lease expired on attempt 2 of 2',
          cause: 'lease_expired',
          maxAttempts: 2,
        },
      ]);

      const text = await registry.metrics();
      expect(text).toContain('rheo_deliveries_total{stream="orders",group="billing",outcome="dead_letter"} 1');
      expect(text).toContain(acked);
      expect((await app.get(Rheo).deadLetters('orders', 'billing')).map((d) => d.eventId)).toEqual([poison.id]);
    } finally {
      await app.close();
    }
  });
});
