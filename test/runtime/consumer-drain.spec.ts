import { Consumer } from '../../lib';
import type { ConsumerState } from '../../lib/runtime/consumer-types';
import { drainAll, events, gate, setup, startConsumer } from './helpers';
import { until } from '../support/until';

afterEach(drainAll);

describe('Consumer: drain', () => {
  it('stops fetching, keeps renewing, waits for running handlers, loses nothing', async () => {
    const { rheo, stream, group, backend } = await setup();
    await rheo.appendBatch(stream, events(3));
    const hold = gate();
    const handled: number[] = [];
    const states: ConsumerState[] = [];
    const g = startConsumer(rheo, { stream, group, maxDemand: 3, concurrency: 3, leaseMs: 60, pollMs: 5 }, async (l) => {
      await hold.promise;
      handled.push(l.event.sequence);
    });
    g.on('state', (s) => states.push(s));
    await until('three running', () => g.running === 3);
    const fetchesBefore = backend.calls.fetch;
    const drained = g.drain(10_000);
    expect(g.state).toBe('draining');
    await rheo.appendBatch(stream, events(2)); // must not be fetched any more
    const renewsAtDrain = backend.calls.renew;
    await until('renewals go on while draining', () => backend.calls.renew >= renewsAtDrain + 2);
    let settled: string | null = null;
    void drained.then((r) => (settled = r));
    await new Promise((r) => setTimeout(r, 20));
    expect(settled).toBeNull(); // still waiting for the handlers
    hold.open();
    expect(await drained).toBe('drained');
    expect(handled.sort()).toEqual([1, 2, 3]);
    expect(backend.calls.fetch).toBeLessThanOrEqual(fetchesBefore + 1); // at most the fetch already in flight
    const lag = await rheo.lag(stream, group);
    expect(lag.partitions[0].frontier).toBe(3);
    expect(lag.lag).toBe(2);
    expect(g.state).toBe('stopped');
    expect(states).toEqual(['draining', 'stopped']);
    expect(g.inflight).toBe(0);
    const renewsAfter = backend.calls.renew;
    await new Promise((r) => setTimeout(r, 100));
    expect(backend.calls.renew).toBe(renewsAfter); // stopped: no more renewals
  });

  it('is idempotent: a second call returns the same promise', async () => {
    const { rheo, stream, group } = await setup();
    const g = startConsumer(rheo, { stream, group, pollMs: 5 }, async () => undefined);
    const a = g.drain();
    const b = g.drain(5);
    expect(b).toBe(a);
    expect(await a).toBe('drained');
    expect(await g.drain()).toBe('drained');
  });

  it('times out on a stuck handler; the lease then expires and another Consumer gets the event', async () => {
    const { rheo, stream, group, backend, clock } = await setup();
    const [e] = await rheo.appendBatch(stream, events(1));
    const stuck = gate();
    const g1 = startConsumer(rheo, { stream, group, leaseMs: 60, pollMs: 5, consumerId: 'one' }, () => stuck.promise);
    await until('handler running', () => g1.running === 1);
    expect(await g1.drain(30)).toBe('timeout');
    expect(g1.state).toBe('stopped');
    expect(g1.inflight).toBe(1); // given up, left to expire
    expect(g1.running).toBe(1);
    const renews = backend.calls.renew;
    await new Promise((r) => setTimeout(r, 100));
    expect(backend.calls.renew).toBe(renews); // the lease is left to expire

    const seen: Array<{ consumerId: string; attempt: number }> = [];
    const g2 = startConsumer(
      rheo,
      { stream, group, leaseMs: 60, pollMs: 5, consumerId: 'two' },
      async (l) => void seen.push({ consumerId: l.consumerId, attempt: l.attempt }),
    );
    const polls = g2.stats.pollTimeouts;
    await until('the second Consumer polls', () => g2.stats.pollTimeouts >= polls + 3);
    expect(seen).toEqual([]); // still leased by the first (the clock has not moved)
    clock.advance(60);
    await until('redelivered to the second Consumer', () => seen.length === 1);
    expect(seen).toEqual([{ consumerId: 'two', attempt: 2 }]);
    await until('acked', async () => (await rheo.lag(stream, group)).lag === 0);

    stuck.open(); // the first Consumer's handler finally returns: it must not settle anything
    await until('the stuck handler returned', () => g1.running === 0);
    await new Promise((r) => setTimeout(r, 20));
    expect(backend.settles.map((s) => `${s.eventId === e.id}:${s.kind}:${s.attempt}:${s.answered}`)).toEqual(['true:ack:2:ok']);
  });

  it('drains at once while backing off, and clears lastError', async () => {
    const { rheo, stream, group, backend } = await setup();
    backend.failFetch(1000, 'backend_unavailable');
    const g = startConsumer(rheo, { stream, group, pollMs: 5 }, async () => undefined);
    await until('backing off', () => g.state === 'backing_off');
    expect(g.lastError?.code).toBe('backend_unavailable');
    expect(await g.drain(5000)).toBe('drained');
    expect(g.lastError).toBeNull();
    expect(g.state).toBe('stopped');
  });

  it('a Consumer never started drains at once and stays stopped', async () => {
    const { rheo, stream, group, backend } = await setup();
    await rheo.appendBatch(stream, events(1));
    const g = new Consumer(rheo, { stream, group }, async () => undefined);
    expect(await g.drain()).toBe('drained');
    g.start();
    await new Promise((r) => setTimeout(r, 20));
    expect(g.state).toBe('stopped');
    expect(backend.calls.fetch).toBe(0);
  });

  it('start is idempotent: one fetch loop, one renewal timer', async () => {
    const { rheo, stream, group, backend } = await setup();
    const g = startConsumer(rheo, { stream, group, pollMs: 10_000, leaseMs: 20_000 }, async () => undefined);
    g.start();
    g.start();
    await until('idle', () => backend.calls.wait >= 1);
    await new Promise((r) => setTimeout(r, 20));
    expect(backend.calls.fetch).toBe(1);
    expect(backend.calls.wait).toBe(1);
  });
});

describe('Consumer: wake-ups', () => {
  it('an append wakes an idle Consumer long before its poll interval', async () => {
    const { rheo, stream, group, backend } = await setup();
    const seen: string[] = [];
    const g = startConsumer(rheo, { stream, group, pollMs: 60_000, leaseMs: 120_000 }, async (l) => void seen.push(l.event.id));
    await until('idle, waiting for a wake-up', () => backend.calls.wait >= 1);
    const [e] = await rheo.appendBatch(stream, events(1));
    await until('handled', () => seen.length === 1);
    expect(seen).toEqual([e.id]);
    expect(g.stats.pollTimeouts).toBe(0); // the 60 s poll never fired: the wake-up carried it
    expect(g.stats.wakeUps).toBeGreaterThanOrEqual(1);
  });

  it('without wake-ups (a lost hint), the poll timer still finds the work', async () => {
    const { rheo, stream, group, backend } = await setup();
    backend.disableWait();
    const seen: string[] = [];
    const g = startConsumer(rheo, { stream, group, pollMs: 10 }, async (l) => void seen.push(l.event.id));
    await until('idle', () => backend.calls.wait >= 1);
    await rheo.appendBatch(stream, events(3));
    await until('handled by polling', () => seen.length === 3);
    expect(g.stats.wakeUps).toBe(0);
    expect(g.stats.pollTimeouts).toBeGreaterThanOrEqual(1);
  });

  it('a hint that always fires spuriously cannot make the Consumer spin', async () => {
    const { rheo, stream, group, backend } = await setup();
    backend.spuriousWakeUps();
    const g = startConsumer(rheo, { stream, group, pollMs: 20 }, async () => undefined);
    await until('five poll rounds', () => g.stats.pollTimeouts >= 5);
    const { fetches, pollTimeouts } = g.stats;
    // At most 3 spurious wake-ups per poll round, plus the round's own fetch.
    expect(fetches).toBeLessThanOrEqual((pollTimeouts + 1) * 4 + 1);
    await rheo.appendBatch(stream, events(2));
    await until('still consumes', async () => (await rheo.lag(stream, group)).lag === 0);
  });
});
