import { Controller, type INestApplication } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import { memoryBackend, Rheo, RheoConsumer, RheoError, RheoModule, RheoServer } from '../../lib';
import { until } from '../support/until';
import { CapturingLogger } from './log-capture';

// A consumer declared with `ordering: 'key'` in a Nest app: its group is created
// with it, each key's events are handled in order, one at a time, and a key whose
// head is slow does not hold back the other keys of its partition (the stream has
// one partition, so `ordering: 'partition'` would run them one after the other).
// A broadcast consumer's instance group is created with its key settings too.

interface Order {
  key: string;
  n: number;
}

const handled: Record<string, number[]> = {};
const running = new Map<string, number>();
let mostAtOnce = 0;
let mostOfOneKey = 0;
let releaseSlow!: () => void;
const slow = new Promise<void>((resolve) => (releaseSlow = resolve));

@Controller()
class Shipping {
  @RheoConsumer({ stream: 'orders', group: 'shipping', ordering: 'key', concurrency: 4, maxDemand: 8, pollMs: 10 })
  async ship(@Payload() order: Order) {
    running.set(order.key, (running.get(order.key) ?? 0) + 1);
    mostOfOneKey = Math.max(mostOfOneKey, running.get(order.key)!);
    mostAtOnce = Math.max(
      mostAtOnce,
      [...running.values()].reduce((a, b) => a + b, 0),
    );
    // Key a's first event waits until the test lets it go: the other keys must not wait with it.
    if (order.key === 'a' && order.n === 1) await slow;
    else await new Promise((r) => setImmediate(r));
    (handled[order.key] ??= []).push(order.n);
    running.set(order.key, running.get(order.key)! - 1);
  }

  // Each instance's own group, with its key settings: the same per-key order in every instance.
  @RheoConsumer({ stream: 'orders', group: 'cache', broadcast: true, keyConcurrency: 2 })
  invalidate() {}
}

describe("@RheoConsumer with ordering: 'key'", () => {
  let app: INestApplication;
  let logger: CapturingLogger;

  beforeAll(async () => {
    logger = new CapturingLogger();
    const ref = await Test.createTestingModule({
      imports: [RheoModule.forRoot({ backend: memoryBackend(), streams: [{ name: 'orders', partitions: 1 }] })],
      controllers: [Shipping],
    }).compile();
    app = ref.createNestApplication({ logger });
    app.connectMicroservice({ strategy: app.get(RheoServer) }, { inheritAppConfig: true });
    await app.init();
    await app.startAllMicroservices();
  });

  afterAll(() => app.close());

  it('creates the group with it and reports it as the consumer starts', async () => {
    const info = await app.get(Rheo).groupInfo('orders', 'shipping');
    expect(info.config).toMatchObject({ ordering: 'key', keyConcurrency: null, groupConcurrency: null, rateLimit: null });
    expect(logger.lines().find((l) => l.includes('Shipping.ship') && l.includes('consumer started'))).toContain('ordering key');
    const [cache] = (await app.get(Rheo).listGroups('orders')).filter((g) => g.group.startsWith('cache.'));
    expect((await app.get(Rheo).groupInfo('orders', cache.group)).config).toMatchObject({ ordering: 'none', keyConcurrency: 2 });
    expect(logger.lines().find((l) => l.includes('Shipping.invalidate') && l.includes('consumer started'))).toContain('keyConcurrency 2');
  });

  it("handles each key's events in order, one at a time, while a slow key holds back only itself", async () => {
    const rheo = app.get(Rheo);
    const keys = ['a', 'b', 'c'];
    for (let n = 1; n <= 4; n++) for (const key of keys) await rheo.append('orders', { key, payload: { key, n } });
    // b and c finish while a's first event is still running: no head-of-line blocking within the partition.
    await until('keys b and c handled', () => handled.b?.length === 4 && handled.c?.length === 4);
    expect(handled.a).toBeUndefined();
    const info = await rheo.groupInfo('orders', 'shipping');
    expect(info.waitingForKey).toBe(3);
    releaseSlow();
    await until('key a handled', () => handled.a?.length === 4);
    expect(handled).toEqual({ a: [1, 2, 3, 4], b: [1, 2, 3, 4], c: [1, 2, 3, 4] });
    expect(mostOfOneKey).toBe(1);
    expect(mostAtOnce).toBeGreaterThan(1);
    expect((await rheo.groupInfo('orders', 'shipping')).waitingForKey).toBe(0);
  });
});

describe('flow limits on a backend that does not enforce them', () => {
  /** A memory store that declares no flow control, as a backend without it does. */
  function withoutFlowControl() {
    const backend = memoryBackend();
    const { capabilities } = backend;
    return Object.assign(backend, { capabilities: { ...capabilities, guarantees: { ...capabilities.guarantees, flowControl: false } } });
  }

  @Controller()
  class Notify {
    @RheoConsumer({ stream: 'orders', group: 'audit' })
    audit() {}

    @RheoConsumer({ stream: 'orders', group: 'notify', ordering: 'key' })
    notify() {}
  }

  it('are refused at startup, naming the handler and the option, before any group is created', async () => {
    for (const [options, field, message] of [
      [{}, 'ordering', /^Notify\.notify: ordering is not supported by the memory backend/],
      [
        { consumers: { 'orders/audit': { rateLimit: { max: 5, perMs: 1000 } } } },
        'consumers["orders/audit"].rateLimit',
        /^Notify\.audit: /,
      ],
    ] as const) {
      const backend = withoutFlowControl();
      const app = await Test.createTestingModule({
        imports: [RheoModule.forRoot({ backend, streams: [{ name: 'orders' }], ...options })],
        controllers: [Notify],
      })
        .compile()
        .then((ref) => ref.createNestMicroservice({ strategy: ref.get(RheoServer), logger: false }));
      const error = await app.listen().then(
        () => undefined,
        (err: unknown) => err as RheoError,
      );
      expect(error).toBeInstanceOf(RheoError);
      expect(error?.field).toBe(field);
      expect(error?.message).toMatch(message);
      expect(await new Rheo(backend).listGroups('orders')).toEqual([]);
      await app.close();
    }
  });
});
