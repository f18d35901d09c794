// Handler timeouts (issue 13, ADR 029): real timers for the handler's time, the
// ManualClock for the store's (so a retry's backoff waits until the test moves it).
import { type Lease, type Outcome, RheoError } from '../../lib';
import type { LateResultEvent } from '../../lib/runtime/consumer-types';
import { drainAll, events, gate, setup, startConsumer } from './helpers';
import { until } from '../support/until';

afterEach(drainAll);

/** Resolves when `signal` aborts. */
function aborted(signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve()));
}

describe('Consumer: handler timeouts', () => {
  it('aborts the signal with a RheoError saying timeout, and retries with reason "timeout after N ms" on the group backoff', async () => {
    const { rheo, stream, group, clock } = await setup({ group: { retry: { initialMs: 1000, factor: 2, maxMs: 60_000 } } });
    await rheo.appendBatch(stream, events(1));
    const attempts: number[] = [];
    let reason: unknown = null;
    const g = startConsumer(rheo, { stream, group, leaseMs: 60_000, pollMs: 10, timeoutMs: 30 }, async (lease, { signal }) => {
      attempts.push(lease.attempt);
      if (lease.attempt > 1) return;
      await aborted(signal); // a well-behaved handler stops on its signal
      reason = signal.reason;
    });
    const settled: Outcome[] = [];
    g.on('settled', ({ outcome }) => settled.push(outcome));
    await until('the timeout settled', () => settled.length === 1);
    expect(settled[0]).toEqual({ kind: 'nack', reason: 'timeout after 30 ms' });
    await until('the handler saw its signal abort', () => reason !== null);
    expect(reason).toBeInstanceOf(RheoError);
    expect((reason as RheoError).message).toMatch(/^timeout after 30 ms/);
    // Stopping on the signal still ends the call after its timeout: its (ack) result is dropped and counted.
    await until('late result counted', () => g.stats.lateResults === 1);
    expect(g.stats.timeouts).toBe(1);
    expect(g.overdue).toBe(0);
    expect((await rheo.lag(stream, group)).lag).toBe(1);
    // The retry waits for the group's backoff on the store's clock.
    clock.advance(1000);
    await until('the retry handled', () => settled.length === 2);
    expect(settled[1]).toEqual({ kind: 'ack' });
    expect(attempts).toEqual([1, 2]);
    expect((await rheo.lag(stream, group)).lag).toBe(0);
  });

  it("dead-letters at the timeout with onTimeout 'dead-letter'; a drain does not wait for the call still running", async () => {
    const { rheo, stream, group } = await setup();
    const [e] = await rheo.appendBatch(stream, events(1));
    const stuck = gate();
    const g = startConsumer(rheo, { stream, group, leaseMs: 60_000, pollMs: 10, timeoutMs: 25, onTimeout: 'dead-letter' }, () =>
      stuck.promise.then(() => undefined),
    );
    const late: LateResultEvent[] = [];
    g.on('late_result', (ev) => late.push(ev));
    await until('dead-lettered', async () => (await rheo.countDeadLetters(stream, group)) === 1);
    const [dead] = await rheo.deadLetters(stream, group);
    expect(dead).toMatchObject({ eventId: e.id, reason: 'timeout after 25 ms', attempt: 1 });
    expect(g.overdue).toBe(1);
    expect(g.running).toBe(0);
    // The outcome is written; the call that ignores its signal holds nothing a drain must wait for.
    expect(await g.drain(5_000)).toBe('drained');
    stuck.open();
    await until('late result reported', () => late.length === 1);
    expect(late[0]).toMatchObject({ timeoutMs: 25, ended: 'resolved' });
    expect(late[0].leases.map((l) => l.event.id)).toEqual([e.id]);
    expect(g.stats).toMatchObject({ timeouts: 1, lateResults: 1, lateSettles: 0 });
    expect(g.overdue).toBe(0);
  });

  it('drops the late result of a handler that ignores its signal: a late ack does not ack, a late throw does not nack again', async () => {
    const { rheo, stream, group, backend, clock } = await setup();
    const [e] = await rheo.appendBatch(stream, events(1));
    const first = gate();
    const second = gate();
    const g = startConsumer(rheo, { stream, group, leaseMs: 60_000, pollMs: 10, timeoutMs: 20 }, async (lease) => {
      if (lease.attempt === 1)
        await first.promise; // then acks: too late
      else if (lease.attempt === 2) {
        await second.promise;
        throw new Error('too late to matter');
      }
    });
    const late: LateResultEvent[] = [];
    g.on('late_result', (ev) => late.push(ev));
    const errors: unknown[] = [];
    g.on('handler_error', ({ error }) => errors.push(error));
    await until('first timeout settled', () => g.stats.timeouts === 1 && backend.settles.length === 1);
    first.open();
    await until('first late result', () => late.length === 1);
    expect(late[0].ended).toBe('resolved');
    clock.advance(1000);
    await until('second timeout settled', () => g.stats.timeouts === 2 && backend.settles.length === 2);
    second.open();
    await until('second late result', () => late.length === 2);
    expect(late[1].ended).toBe('threw');
    // Only the two timeouts were written: nothing of either late result reached the store.
    expect(backend.settles.map((s) => [s.kind, s.eventId, s.attempt, s.reason])).toEqual([
      ['nack', e.id, 1, 'timeout after 20 ms'],
      ['nack', e.id, 2, 'timeout after 20 ms'],
    ]);
    expect(errors.map((err) => (err as Error).message)).toEqual([
      expect.stringMatching(/^timeout after 20 ms/),
      expect.stringMatching(/^timeout after 20 ms/),
    ]);
    expect(g.stats.lateResults).toBe(2);
    expect((await rheo.lag(stream, group)).lag).toBe(1);
  });

  it('a handler that never ends does not block the consumer; calls alive stay within 2 × concurrency', async () => {
    const { rheo, stream, group, clock } = await setup();
    const appended = await rheo.appendBatch(stream, events(5));
    const stuck = [gate(), gate()];
    const started: string[] = [];
    let alive = 0;
    let maxAlive = 0;
    const g = startConsumer(
      rheo,
      { stream, group, maxDemand: 5, concurrency: 1, leaseMs: 60_000, pollMs: 10, timeoutMs: 20 },
      async (lease) => {
        const i = (lease.event.payload as { i: number }).i;
        started.push(`${i}@${lease.attempt}`);
        alive++;
        maxAlive = Math.max(maxAlive, alive);
        try {
          if (lease.attempt === 1 && i < 2) await stuck[i].promise; // ignores its signal
        } finally {
          alive--;
        }
      },
    );
    const settled: Array<[number, Outcome['kind']]> = [];
    g.on('settled', ({ lease, outcome }) => settled.push([(lease.event.payload as { i: number }).i, outcome.kind]));
    // Event 0 hangs past its timeout: its slot is given back and event 1 starts (2 calls alive = 2 × concurrency).
    // Event 1 hangs too: with two calls overdue, nothing more may start.
    await until('both timeouts settled', () => settled.length === 2);
    expect(settled).toEqual([
      [0, 'nack'],
      [1, 'nack'],
    ]);
    expect(started).toEqual(['0@1', '1@1']);
    expect(g.overdue).toBe(2);
    expect(g.running).toBe(0);
    expect(g.inflight).toBe(3);
    // One stuck call ends: one slot of the overflow frees, and the rest flows at full concurrency beside the other.
    stuck[0].open();
    await until('events 2..4 handled', () => settled.length === 5);
    expect(started.slice(2)).toEqual(['2@1', '3@1', '4@1']);
    expect(g.overdue).toBe(1);
    clock.advance(1000); // the two timeouts come back
    await until('all acked', async () => (await rheo.lag(stream, group)).lag === 0);
    expect(started.filter((s) => s.endsWith('@2')).sort()).toEqual(['0@2', '1@2']);
    expect(maxAlive).toBeLessThanOrEqual(2);
    expect(g.stats).toMatchObject({ timeouts: 2, lateResults: 1 });
    stuck[1].open();
    await until('second late result', () => g.stats.lateResults === 2);
    expect(appended).toHaveLength(5);
  });

  it('settles nothing for a timeout that comes after the lease was lost (the new holder settles it)', async () => {
    const { rheo, stream, group, backend } = await setup();
    const [e] = await rheo.appendBatch(stream, events(1));
    backend.loseOnRenew(e.id, 1);
    const lost: Lease[] = [];
    const reasons: string[] = [];
    const g = startConsumer(rheo, { stream, group, leaseMs: 100, pollMs: 10, timeoutMs: 300 }, async (_lease, { signal }) => {
      await aborted(signal);
      reasons.push((signal.reason as RheoError).code);
      // Ignore the signal for a while: the timeout still fires while this runs.
      await new Promise((r) => setTimeout(r, 400));
    });
    g.on('lease_lost', (lease) => lost.push(lease));
    await until('lease lost', () => lost.length === 1);
    await until('the timeout fired', () => g.stats.timeouts === 1);
    await until('the call ended', () => g.stats.lateResults === 1);
    expect(reasons).toEqual(['stale_lease']);
    expect(backend.settles).toEqual([]);
    expect(g.inflight).toBe(0);
  });

  it('a handler that ends in time is settled by its result: no abort, no timeout counted', async () => {
    const { rheo, stream, group } = await setup();
    await rheo.appendBatch(stream, events(20));
    let sawAbort = false;
    const g = startConsumer(
      rheo,
      { stream, group, concurrency: 4, leaseMs: 60_000, pollMs: 10, timeoutMs: 10_000 },
      async (_l, { signal }) => {
        await new Promise((r) => setImmediate(r));
        sawAbort ||= signal.aborted;
      },
    );
    await until('all acked', async () => (await rheo.lag(stream, group)).lag === 0);
    expect(sawAbort).toBe(false);
    expect(g.stats).toMatchObject({ timeouts: 0, lateResults: 0, settled: 20 });
  });
});
