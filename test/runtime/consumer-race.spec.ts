import { type Lease } from '../../lib';
import { drainAll, events, setup, startConsumer } from './helpers';
import { until } from '../support/until';

afterEach(drainAll);

// Two competing Groups of one consumer group, leases expiring under them while
// handlers run (the ManualClock jumps past every lease now and then), settles
// arriving late and stale. At-least-once: nothing is lost, nothing is stuck.
describe('Consumer: competing consumers with leases expiring mid-handler', () => {
  it.each([1, 2, 3])('every event is eventually acked exactly once, lag 0 (run %i)', async () => {
    const leaseMs = 1000;
    const { rheo, stream, group, clock, backend } = await setup({ partitions: 3, group: { maxAttempts: 1000, retry: { initialMs: 0 } } });
    const appended = await rheo.appendBatch(stream, events(150, true));
    const handled = new Map<string, number>();
    const handler = async (l: Lease) => {
      handled.set(l.event.id, (handled.get(l.event.id) ?? 0) + 1);
      await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 5)));
      if (Math.random() < 0.05) throw new Error('flaky handler');
    };
    const lost: string[] = [];
    const a = startConsumer(rheo, { stream, group, consumerId: 'a', maxDemand: 7, concurrency: 3, leaseMs, pollMs: 5 }, handler);
    const b = startConsumer(rheo, { stream, group, consumerId: 'b', maxDemand: 5, concurrency: 5, leaseMs, pollMs: 5 }, handler);
    for (const g of [a, b]) g.on('lease_lost', (l) => lost.push(l.event.id));
    let expiries = 0;
    const chaos = setInterval(() => {
      clock.advance(leaseMs); // every live lease expires now
      expiries++;
    }, 7);
    try {
      await until('lag 0', async () => (await rheo.lag(stream, group)).lag === 0, 30_000);
    } finally {
      clearInterval(chaos);
    }
    expect(expiries).toBeGreaterThan(0);
    expect([...handled.keys()].sort()).toEqual(appended.map((e) => e.id).sort());
    const acked = backend.settles.filter((s) => s.kind === 'ack' && s.answered === 'ok').map((s) => s.eventId);
    expect(acked.sort()).toEqual(appended.map((e) => e.id).sort()); // one successful ack per event
    expect(await rheo.deadLetters(stream, group)).toEqual([]);
    // Stale settles happened and were dropped, never nacked on someone else's lease.
    const stale = backend.settles.filter((s) => s.answered === 'stale_lease');
    expect(stale.length + lost.length).toBeGreaterThan(0);
    await until('both quiet', () => a.inflight === 0 && b.inflight === 0 && a.running === 0 && b.running === 0);
  });
});
