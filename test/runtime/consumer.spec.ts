import { type Lease, type Outcome, RheoReject, RheoRetry } from '../../lib';
import { drainAll, events, gate, setup, startConsumer } from './helpers';
import { until } from '../support/until';

afterEach(drainAll);

const tick = () => new Promise<void>((r) => setTimeout(r, Math.random() < 0.5 ? 0 : 1));

describe('Consumer: bounds and completeness', () => {
  it.each([
    { maxDemand: 8, concurrency: 3 },
    { maxDemand: 4, concurrency: 10 },
    { maxDemand: 1, concurrency: 1 },
  ])('handles every event once with %j, never over the bounds, lag 0', async ({ maxDemand, concurrency }) => {
    const { rheo, stream, group } = await setup({ partitions: 4 });
    const appended = await rheo.appendBatch(stream, events(300, true));
    const seen = new Map<string, number>();
    let running = 0;
    let maxRunning = 0;
    let maxInflight = 0;
    const g = startConsumer(rheo, { stream, group, maxDemand, concurrency, leaseMs: 60_000, pollMs: 20 }, async (lease) => {
      running++;
      maxRunning = Math.max(maxRunning, running);
      maxInflight = Math.max(maxInflight, g.inflight);
      seen.set(lease.event.id, (seen.get(lease.event.id) ?? 0) + 1);
      await tick();
      running--;
    });
    const sampler = setInterval(() => (maxInflight = Math.max(maxInflight, g.inflight)), 1);
    const outcomes: Outcome['kind'][] = [];
    g.on('settled', ({ outcome }) => {
      outcomes.push(outcome.kind);
      maxInflight = Math.max(maxInflight, g.inflight);
    });
    await until('all settled', () => outcomes.length === appended.length);
    clearInterval(sampler);

    expect(maxRunning).toBe(Math.min(maxDemand, concurrency));
    expect(maxInflight).toBeLessThanOrEqual(maxDemand);
    expect(maxInflight).toBeGreaterThanOrEqual(1);
    expect([...seen.keys()].sort()).toEqual(appended.map((e) => e.id).sort());
    expect([...seen.values()].every((n) => n === 1)).toBe(true);
    expect(new Set(outcomes)).toEqual(new Set(['ack']));
    expect((await rheo.lag(stream, group)).lag).toBe(0);
    expect(g.inflight).toBe(0);
    expect(g.running).toBe(0);
    expect(g.state).toBe('running');
  });

  it('prefetches up to maxDemand while running only concurrency handlers; queued leases are renewed, then handled', async () => {
    const { rheo, stream, group, backend, clock } = await setup();
    await rheo.appendBatch(stream, events(30));
    const held = gate();
    let running = 0;
    let maxRunning = 0;
    const handled: string[] = [];
    const g = startConsumer(rheo, { stream, group, maxDemand: 10, concurrency: 2, leaseMs: 1000, pollMs: 20 }, async (lease) => {
      running++;
      maxRunning = Math.max(maxRunning, running);
      await held.promise;
      handled.push(lease.event.id);
      running--;
    });
    // One fetch claims the whole demand: 2 handlers run, 8 leases wait in the buffer.
    await until('buffer filled', () => g.inflight === 10 && g.running === 2);
    expect(backend.calls.fetch).toBe(1);
    expect((await rheo.groupInfo(stream, group)).inflight).toBe(10);
    // While they wait, renewals keep every buffered lease alive past its first TTL (t0 + 1000).
    const rounds = g.stats.renewRounds;
    clock.advance(600);
    await until('a renewal round after the clock moved', () => g.stats.renewRounds >= rounds + 2);
    clock.advance(600);
    expect((await rheo.groupInfo(stream, group)).inflight).toBe(10);
    held.open();
    await until('all consumed', async () => (await rheo.lag(stream, group)).lag === 0);
    expect(handled).toHaveLength(30);
    expect(new Set(handled).size).toBe(30);
    expect(maxRunning).toBe(2);
  });

  it('coalesces settles into batches (fewer settle calls than events)', async () => {
    const { rheo, stream, group, backend } = await setup();
    await rheo.appendBatch(stream, events(200));
    let settled = 0;
    const g = startConsumer(rheo, { stream, group, maxDemand: 50, concurrency: 10, pollMs: 20 }, async () => undefined);
    g.on('settled', () => settled++);
    await until('all settled', () => settled === 200);
    expect(backend.calls.settle).toBeLessThan(200);
    expect(g.stats.settleBatches).toBe(backend.calls.settle);
    expect(backend.settles).toHaveLength(200);
    expect(backend.settles.every((s) => s.kind === 'ack' && s.answered === 'ok')).toBe(true);
  });

  it('keeps consuming what is appended later', async () => {
    const { rheo, stream, group } = await setup({ partitions: 2 });
    const seen = new Set<string>();
    startConsumer(rheo, { stream, group, maxDemand: 5, concurrency: 2, pollMs: 10 }, async (l) => void seen.add(l.event.id));
    for (let round = 0; round < 5; round++) {
      await rheo.appendBatch(stream, events(7, true));
      await until(`round ${round}`, () => seen.size === (round + 1) * 7);
    }
    expect((await rheo.lag(stream, group)).lag).toBe(0);
  });

  it('a partition-ordered group is not paced by the poll interval: its own settles make it look again', async () => {
    const { rheo, stream, group } = await setup({ partitions: 2, group: { ordering: 'partition' } });
    await rheo.appendBatch(stream, events(40, true));
    const order = new Map<number, number[]>();
    let running = 0;
    let overlap = false;
    const g = startConsumer(rheo, { stream, group, maxDemand: 10, concurrency: 10, pollMs: 60_000, leaseMs: 120_000 }, async (l) => {
      running++;
      if (running > 2) overlap = true; // at most one lease per partition
      const seqs = order.get(l.event.partition) ?? [];
      seqs.push(l.event.sequence);
      order.set(l.event.partition, seqs);
      await new Promise((r) => setImmediate(r));
      running--;
    });
    await until('all consumed', async () => (await rheo.lag(stream, group)).lag === 0);
    expect(g.stats.pollTimeouts).toBe(0);
    expect(overlap).toBe(false);
    for (const seqs of order.values()) expect(seqs).toEqual(seqs.map((_, i) => i + 1));
  });

  it('only fetches its partitions', async () => {
    const { rheo, stream, group } = await setup({ partitions: 3 });
    await rheo.appendBatch(
      stream,
      [0, 1, 2, 0, 1, 2].map((partition, i) => ({ partition, payload: { i } })),
    );
    const parts: number[] = [];
    const g = startConsumer(rheo, { stream, group, partitions: [1], pollMs: 10 }, async (l) => void parts.push(l.event.partition));
    await until('partition 1 consumed, then idle', () => parts.length === 2 && g.stats.pollTimeouts >= 2);
    expect(parts).toEqual([1, 1]);
    const lag = await rheo.lag(stream, group);
    expect(lag.partitions.map((p) => p.lag)).toEqual([2, 0, 2]);
  });
});

describe('Consumer: settle by outcome', () => {
  it('a throw is retried, then dead-lettered at maxAttempts with the message as reason', async () => {
    const { rheo, stream, group } = await setup({ group: { maxAttempts: 3, retry: { initialMs: 0 } } });
    const [e] = await rheo.appendBatch(stream, events(1));
    const attempts: number[] = [];
    const handlerErrors: unknown[] = [];
    const g = startConsumer(rheo, { stream, group, pollMs: 10 }, async (l) => {
      attempts.push(l.attempt);
      throw new Error('boom');
    });
    g.on('handler_error', ({ error }) => handlerErrors.push(error));
    await until('dead-lettered', async () => (await rheo.deadLetters(stream, group)).length === 1);
    const [dl] = await rheo.deadLetters(stream, group);
    expect(dl).toMatchObject({ eventId: e.id, reason: 'boom', attempt: 3 });
    expect(attempts).toEqual([1, 2, 3]);
    expect(handlerErrors).toHaveLength(3);
    expect((await rheo.lag(stream, group)).lag).toBe(0);
  });

  it('a plain throw nacks with the group backoff (no delay of its own): not back before the backoff elapses', async () => {
    const { rheo, stream, group, clock, backend } = await setup({ group: { retry: { initialMs: 5000 } } });
    await rheo.appendBatch(stream, events(1));
    const attempts: number[] = [];
    const g = startConsumer(rheo, { stream, group, pollMs: 5 }, async (l) => {
      attempts.push(l.attempt);
      if (l.attempt === 1) throw new Error('transient');
    });
    await until('nacked', () => backend.settles.length === 1);
    expect(backend.settles[0]).toMatchObject({ kind: 'nack', reason: 'transient', delayMs: undefined, answered: 'ok' });
    const polls = g.stats.pollTimeouts;
    clock.advance(4999);
    await until('a few idle polls', () => g.stats.pollTimeouts >= polls + 3);
    expect(attempts).toEqual([1]);
    clock.advance(1);
    await until('redelivered after the backoff', () => attempts.length === 2);
    expect(attempts).toEqual([1, 2]);
  });

  it('RheoReject dead-letters on the first attempt and is not a handler error', async () => {
    const { rheo, stream, group } = await setup({ group: { maxAttempts: 5 } });
    await rheo.appendBatch(stream, events(1));
    let calls = 0;
    let handlerErrors = 0;
    const g = startConsumer(rheo, { stream, group, pollMs: 10 }, async () => {
      calls++;
      throw new RheoReject('bad curve');
    });
    g.on('handler_error', () => handlerErrors++);
    await until('dead-lettered', async () => (await rheo.deadLetters(stream, group)).length === 1);
    expect((await rheo.deadLetters(stream, group))[0]).toMatchObject({ reason: 'bad curve', attempt: 1 });
    expect(calls).toBe(1);
    expect(handlerErrors).toBe(0);
  });

  it('RheoRetry delayMs is honoured: redelivered only once the delay has passed', async () => {
    const { rheo, stream, group, clock, backend } = await setup();
    await rheo.appendBatch(stream, events(1));
    const attempts: number[] = [];
    const g = startConsumer(rheo, { stream, group, pollMs: 5 }, async (l) => {
      attempts.push(l.attempt);
      if (l.attempt === 1) throw new RheoRetry('later', { delayMs: 60_000 });
    });
    await until('nacked', () => backend.settles.length === 1);
    expect(backend.settles[0]).toMatchObject({ kind: 'nack', reason: 'later', delayMs: 60_000 });
    clock.advance(59_999);
    const polls = g.stats.pollTimeouts;
    await until('a few idle polls', () => g.stats.pollTimeouts >= polls + 3);
    expect(attempts).toEqual([1]);
    clock.advance(1);
    await until('redelivered', () => attempts.length === 2);
    await until('acked', async () => (await rheo.lag(stream, group)).lag === 0);
  });

  it('an Outcome resolved by the handler settles that way', async () => {
    const { rheo, stream, group, backend } = await setup({ group: { retry: { initialMs: 0 } } });
    const [a, b, c] = await rheo.appendBatch(stream, events(3));
    const plan = new Map<string, Outcome>([
      [a.id, { kind: 'ack' }],
      [b.id, { kind: 'reject', reason: 'no' }],
      [c.id, { kind: 'nack', reason: 'again', delayMs: 0 }],
    ]);
    startConsumer(rheo, { stream, group, pollMs: 10 }, async (l: Lease) => (l.attempt === 1 ? plan.get(l.event.id) : undefined));
    await until('all terminal', async () => (await rheo.lag(stream, group)).lag === 0);
    const byEvent = (id: string) => backend.settles.filter((s) => s.eventId === id).map((s) => `${s.kind}:${s.attempt}`);
    expect(byEvent(a.id)).toEqual(['ack:1']);
    expect(byEvent(b.id)).toEqual(['reject:1']);
    expect(byEvent(c.id)).toEqual(['nack:1', 'ack:2']);
    expect((await rheo.deadLetters(stream, group)).map((d) => d.reason)).toEqual(['no']);
  });

  it('a nonsense resolved value or a synchronous throw is nacked and reported', async () => {
    const { rheo, stream, group, backend } = await setup({ group: { retry: { initialMs: 0 } } });
    const [a, b] = await rheo.appendBatch(stream, events(2));
    const errors: unknown[] = [];
    const g = startConsumer(rheo, { stream, group, pollMs: 10 }, ((l: Lease) => {
      if (l.attempt > 1) return Promise.resolve();
      if (l.event.id === a.id) return Promise.resolve(42);
      throw new Error('sync');
    }) as never);
    g.on('handler_error', ({ error }) => errors.push(error));
    await until('all acked on attempt 2', async () => (await rheo.lag(stream, group)).lag === 0);
    expect(errors).toHaveLength(2);
    expect(errors).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ code: 'invalid_argument', field: 'outcome' }),
        expect.objectContaining({ message: 'sync' }),
      ]),
    );
    const nacks = backend.settles.filter((s) => s.kind === 'nack');
    expect(nacks.map((s) => s.eventId).sort()).toEqual([a.id, b.id].sort());
  });

  it('an out-of-range RheoRetry delay does not poison the other settles of its batch', async () => {
    const { rheo, stream, group, backend, clock } = await setup({ group: { retry: { initialMs: 0 } } });
    const appended = await rheo.appendBatch(stream, events(10));
    const g = startConsumer(rheo, { stream, group, maxDemand: 10, concurrency: 10, pollMs: 10 }, async (l) => {
      if (l.event.id === appended[0].id && l.attempt === 1) throw new RheoRetry('odd', { delayMs: Number.NaN });
      if (l.event.id === appended[1].id && l.attempt === 1) throw new RheoRetry('huge', { delayMs: 1e15 });
    });
    await until('first round settled', () => backend.settles.length >= 10);
    expect(backend.settles.slice(0, 10).every((s) => s.answered === 'ok')).toBe(true);
    expect(backend.settles.find((s) => s.reason === 'odd')?.delayMs).toBeUndefined();
    expect(backend.settles.find((s) => s.reason === 'huge')?.delayMs).toBe(365 * 24 * 3600 * 1000);
    await until(
      'all but the delayed one acked',
      async () => (await rheo.lag(stream, group)).partitions[0].frontier === 1 && g.inflight === 0,
    );
    clock.advance(365 * 24 * 3600 * 1000);
    await until('both come back and are acked', async () => (await rheo.lag(stream, group)).lag === 0);
  });
});
