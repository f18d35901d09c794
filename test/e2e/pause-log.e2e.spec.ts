import { Controller, type INestApplication } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import { memoryBackend, Rheo, RheoClient, RheoConsumer, RheoModule, RheoServer } from '../../lib';
import { until } from '../support/until';
import { CapturingLogger } from './log-capture';

// What RheoServer logs of a pause of a group it consumes: one WARN when its
// consumer finds the group paused, one LOG when it claims again, each naming the
// handler, the stream and the group; and the events appended meanwhile are
// handled after the resume. The pause and the resume go through RheoClient, which
// logs them as its other admin actions.

const handled: number[] = [];

@Controller()
class Billing {
  @RheoConsumer({ stream: 'orders', group: 'billing', pollMs: 10 })
  onOrder(@Payload() order: { n: number }) {
    handled.push(order.n);
  }
}

describe('RheoServer logs a pause of its group', () => {
  let app: INestApplication;
  let logger: CapturingLogger;

  beforeAll(async () => {
    logger = new CapturingLogger();
    const ref = await Test.createTestingModule({
      imports: [RheoModule.forRoot({ backend: memoryBackend(), streams: [{ name: 'orders' }] })],
      controllers: [Billing],
    }).compile();
    app = ref.createNestApplication({ logger });
    app.connectMicroservice({ strategy: app.get(RheoServer) }, { inheritAppConfig: true });
    await app.init();
    await app.startAllMicroservices();
  });

  afterAll(() => app.close());

  const pauseLines = () => logger.lines().filter((l) => l.startsWith('[RheoServer] Billing.onOrder (orders/billing): the group is'));

  it('warns once when the consumer finds the group paused, and logs once when it claims again', async () => {
    const rheo = app.get(Rheo);
    await rheo.append('orders', { payload: { n: 1 } });
    await until('event 1 handled', () => handled.includes(1));

    const client = app.get(RheoClient);
    const pause = await client.pauseGroup('orders', 'billing', { reason: 'card API down', by: 'ana' });
    expect(pause).toEqual({ pausedAt: expect.any(Date), until: null, reason: 'card API down', by: 'ana' });
    expect((await client.groupInfo('orders', 'billing')).paused).toEqual(pause);
    await until('the pause logged', () => pauseLines().length === 1);
    const server = app.get(RheoServer);
    expect(server.consumers().map((c) => [c.group, c.paused])).toEqual([['billing', true]]);
    // An append wakes the consumer: its claim finds the group still paused, and nothing more is logged.
    await rheo.append('orders', { payload: { n: 2 } });
    expect(handled).toEqual([1]);

    expect(await client.resumeGroup('orders', 'billing')).toBe(true);
    await until('event 2 handled after the resume', () => handled.includes(2));
    await until('the resume logged', () => pauseLines().length === 2);
    expect(handled).toEqual([1, 2]);
    expect(server.consumers().map((c) => [c.group, c.paused])).toEqual([['billing', false]]);
    expect(logger.entries.filter((e) => e.message.includes(': the group is')).map((e) => [e.level, `[${e.context}] ${e.message}`])).toEqual(
      [
        ['warn', '[RheoServer] Billing.onOrder (orders/billing): the group is paused (Rheo#pauseGroup); claiming nothing until it resumes'],
        ['log', '[RheoServer] Billing.onOrder (orders/billing): the group is no longer paused; claiming again'],
      ],
    );
  });
});
