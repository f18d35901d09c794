import { drainAll, events, gate, setup, startConsumer } from './helpers';
import { until } from '../support/until';

afterEach(drainAll);

describe('Consumer: a paused group (Rheo#pauseGroup)', () => {
  it('lets running handlers finish and settle, claims nothing while paused, and claims at the resume', async () => {
    const { rheo, stream, group } = await setup();
    await rheo.appendBatch(stream, events(4));
    const release = gate();
    const handled: number[] = [];
    const log: string[] = [];
    const g = startConsumer(rheo, { stream, group, maxDemand: 4, concurrency: 4, leaseMs: 60_000, pollMs: 50 }, async (lease) => {
      if (lease.event.sequence <= 4) await release.promise;
      handled.push(lease.event.sequence);
    });
    g.on('paused', (paused) => log.push(paused ? 'paused' : 'resumed'));
    await until('4 handlers running', () => g.running === 4);
    await rheo.pauseGroup(stream, group, { reason: 'test' });
    release.open();
    await until('the 4 settled', async () => (await rheo.lag(stream, group)).lag === 0);
    await rheo.appendBatch(stream, events(3));
    await until('the consumer saw the pause', () => g.paused);
    await new Promise((r) => setTimeout(r, 300)); // six poll intervals
    expect(handled.sort((a, b) => a - b)).toEqual([1, 2, 3, 4]);
    expect((await rheo.lag(stream, group)).lag).toBe(3);
    await rheo.resumeGroup(stream, group);
    await until('all 7 handled', () => handled.length === 7);
    expect(g.paused).toBe(false);
    expect(log).toEqual(['paused', 'resumed']);
  });

  it('hears the resume through the wake-up even after many appends woke it to a paused answer', async () => {
    const { rheo, stream, group } = await setup();
    const handled: number[] = [];
    // A poll interval far longer than the case: only the resume's wake-up can end the wait in time.
    const g = startConsumer(rheo, { stream, group, leaseMs: 600_000, pollMs: 300_000 }, async (lease) => {
      handled.push(lease.event.sequence);
    });
    await rheo.pauseGroup(stream, group);
    for (let i = 0; i < 8; i++) {
      await rheo.append(stream, { payload: i });
      await new Promise((r) => setTimeout(r, 10));
    }
    await until('the consumer saw the pause', () => g.paused);
    expect(g.stats.wakeUps).toBeGreaterThan(3); // more paused answers to a wake-up than a spurious run would tolerate
    expect(handled).toEqual([]);
    await rheo.resumeGroup(stream, group);
    await until('all 8 handled', () => handled.length === 8, 10_000);
  });
});

describe('Consumer: a group whose flow limit holds it back (groupConcurrency)', () => {
  it('hears the settle that frees a place through the wake-up, even after many appends woke it to a held answer', async () => {
    const { rheo, stream, group } = await setup({ group: { groupConcurrency: 1 } });
    await rheo.append(stream, { payload: 'first' });
    // Another process holds the group's one place.
    const [held] = await rheo.fetch(stream, group, { consumerId: 'elsewhere', leaseMs: 600_000 });
    const handled: number[] = [];
    // A poll interval far longer than the case: only wake-ups can end the waits in time.
    const g = startConsumer(rheo, { stream, group, leaseMs: 600_000, pollMs: 300_000 }, async (lease) => {
      handled.push(lease.event.sequence);
    });
    for (let i = 0; i < 8; i++) {
      await rheo.append(stream, { payload: i });
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(g.stats.wakeUps).toBeGreaterThan(3); // more held answers to a wake-up than a spurious run would tolerate
    expect(handled).toEqual([]);
    await rheo.ack(held);
    await until('all 8 handled, one at a time', () => handled.length === 8, 10_000);
  });
});
