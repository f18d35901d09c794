import { Consumer, Rheo, RheoError } from '../../lib';
import { MemoryBackend } from '../../lib/backends/memory/memory-backend';
import type { Lease } from '../../lib';
import type { RenewErrorEvent } from '../../lib/runtime/consumer-types';
import { FaultyBackend } from '../support/faulty-backend';
import { drainAll, events, gate, setup, startConsumer, unique } from './helpers';
import { until } from '../support/until';

afterEach(drainAll);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The system clock, remembering the last time it told: the runtime reads it, then
 * starts handlers in the same synchronous turn, so a handler that reads `last` at its
 * start sees the time its start was decided on, however loaded the machine is.
 */
const clock = {
  last: 0,
  now(): number {
    return (this.last = Date.now());
  },
};

/** Two consumers of one real memory backend on the system clock, each behind its own fault wrapper. */
async function twoConsumers(options: { partitions?: number; ordering?: 'none' | 'partition' } = {}) {
  const memory = new MemoryBackend({ clock });
  const a = new FaultyBackend(memory);
  const b = new FaultyBackend(memory);
  const rheoA = new Rheo(a);
  const rheoB = new Rheo(b);
  const stream = unique('s');
  const group = unique('g');
  await rheoA.createStream(stream, { partitions: options.partitions ?? 1 });
  await rheoA.createGroup(stream, group, { ordering: options.ordering ?? 'none', maxAttempts: 100 });
  return { memory, a, b, rheoA, rheoB, stream, group };
}

interface Start {
  consumer: 'A' | 'B';
  key: string | null;
  sequence: number;
  partition: number;
  /** The clock time the runtime decided the start on (clock.last at the handler's start). */
  at: number;
  /** The lease's expiry as the handler sees it when it starts (moved by renewals). */
  expiresAt: number;
}

describe('Consumer: leases in the buffer and under failing renewals', () => {
  async function expiredStarts(ordering: 'none' | 'partition') {
    const partitions = ordering === 'partition' ? 3 : 1;
    const { a, rheoA, rheoB, stream, group } = await twoConsumers({ partitions, ordering });
    a.failRenewCall(Number.POSITIVE_INFINITY);
    await rheoA.appendBatch(
      stream,
      // Key k<n> pinned to partition n, so each partition is one key's ordered history.
      Array.from({ length: ordering === 'partition' ? 12 : 5 }, (_, i) => ({
        key: `k${i % partitions}`,
        partition: i % partitions,
        payload: { i },
      })),
    );
    const starts: Start[] = [];
    const handler = (consumer: 'A' | 'B') => async (l: Lease) => {
      starts.push({
        consumer,
        key: l.event.key,
        sequence: l.event.sequence,
        partition: l.event.partition,
        at: clock.last,
        expiresAt: l.expiresAt.getTime(),
      });
      // A is slow, B quick: B gets through several events of a key while A still has one buffered.
      await sleep(consumer === 'A' ? 300 : 20);
    };
    const options = { stream, group, maxDemand: 10, leaseMs: 400, pollMs: 20 };
    const gA = startConsumer(rheoA, { ...options, concurrency: 1, consumerId: 'A' }, handler('A'));
    await until('A started its first handler', () => starts.length > 0);
    const gB = startConsumer(rheoB, { ...options, concurrency: 3, consumerId: 'B' }, handler('B'));
    await until('every event acked', async () => (await rheoB.lag(stream, group)).lag === 0, 20_000);
    await until('handlers finished', () => gA.running === 0 && gB.running === 0);
    return { starts, gA, gB };
  }

  it('never starts a handler on a lease whose current expiry has passed (renewals of one consumer always fail)', async () => {
    const { starts, gA } = await expiredStarts('none');
    // The start margin of a 400 ms lease: max(10%, 100 ms) = 100 ms left at least when a handler starts.
    for (const s of starts) expect(s.expiresAt - s.at).toBeGreaterThanOrEqual(100);
    // A's buffered leases expired under it: dropped, counted, never handled by A.
    expect(gA.stats.dropped).toBeGreaterThan(0);
  });

  it("with ordering 'partition', every key's handled order is ascending across both consumers", async () => {
    const { starts } = await expiredStarts('partition');
    // The start margin of a 400 ms lease (see above), against the time the start was decided on.
    for (const s of starts) expect(s.expiresAt - s.at).toBeGreaterThanOrEqual(100);
    const byKey = new Map<string, number[]>();
    for (const s of starts) byKey.set(s.key!, [...(byKey.get(s.key!) ?? []), s.sequence]);
    expect(byKey.size).toBe(3);
    for (const [, seqs] of byKey) expect(seqs).toEqual([...seqs].sort((x, y) => x - y));
  });

  it('drops buffered leases that expired and gives them back with the attempt they had', async () => {
    const { rheo, stream, group, backend, clock } = await setup();
    await rheo.appendBatch(stream, events(3));
    backend.failRenewCall(Number.POSITIVE_INFINITY);
    const hold = gate();
    const gA = startConsumer(
      rheo,
      { stream, group, maxDemand: 3, concurrency: 1, leaseMs: 1000, pollMs: 10, consumerId: 'A' },
      () => hold.promise,
    );
    await until('one running, two buffered', () => gA.running === 1 && gA.inflight === 3);
    backend.failFetch(Number.POSITIVE_INFINITY); // A takes nothing more: what it gives back goes to B
    clock.advance(1001);
    await until(
      `the two buffered leases are dropped after a renewal round (${JSON.stringify(gA.stats)} ${gA.inflight})`,
      () => gA.stats.dropped === 2,
    );
    await until('and given back', () => gA.stats.released === 2);
    expect(backend.released.map((l) => l.event.sequence)).toEqual([2, 3]);
    const seen: Array<[number, number]> = [];
    const other = new Rheo(new FaultyBackend(backend.inner));
    const gB = startConsumer(
      other,
      { stream, group, maxDemand: 3, concurrency: 3, leaseMs: 1000, pollMs: 10, consumerId: 'B' },
      async (l) => void seen.push([l.event.sequence, l.attempt]),
    );
    // Event 1 expired under A's running handler (nobody gave it back): attempt 2. Events 2 and 3: attempt 1 again.
    await until('B handles all three', () => seen.length === 3);
    expect(seen.sort((x, y) => x[0] - y[0])).toEqual([
      [1, 2],
      [2, 1],
      [3, 1],
    ]);
    hold.open();
    await gB.drain(1000);
  });

  it('shows the renewed expiry on the lease the handler holds', async () => {
    const { rheo, stream, group, clock } = await setup();
    await rheo.appendBatch(stream, events(1));
    let seen: Lease | null = null;
    const hold = gate();
    const g = startConsumer(rheo, { stream, group, leaseMs: 100, pollMs: 10 }, async (l) => {
      seen = l;
      await hold.promise;
    });
    await until('handler started', () => seen !== null);
    const first = seen!.expiresAt.getTime();
    clock.advance(40);
    const rounds = g.stats.renewRounds;
    await until('renewed', () => g.stats.renewRounds > rounds + 1);
    expect(seen!.expiresAt.getTime()).toBe(clock.now() + 100);
    expect(seen!.expiresAt.getTime()).toBeGreaterThan(first);
    hold.open();
  });

  it('aborts the handler signal when a renewal finds the lease lost', async () => {
    const { rheo, stream, group, backend } = await setup();
    const [e] = await rheo.appendBatch(stream, events(1));
    backend.loseOnRenew(e.id, 1);
    let reason: unknown = null;
    const g = startConsumer(rheo, { stream, group, leaseMs: 60, pollMs: 10 }, (l, { signal }) => {
      return new Promise<void>((resolve) => {
        signal.addEventListener('abort', () => {
          reason = signal.reason;
          resolve();
        });
      });
    });
    await until('signal aborted', () => reason !== null);
    expect(reason).toBeInstanceOf(RheoError);
    expect((reason as RheoError).code).toBe('stale_lease');
    await until('handler returned', () => g.running === 0);
  });

  it('aborts running handler signals when a drain times out', async () => {
    const { rheo, stream, group } = await setup();
    await rheo.appendBatch(stream, events(1));
    let signal: AbortSignal | null = null;
    const g = startConsumer(rheo, { stream, group, leaseMs: 1000, pollMs: 10 }, (l, control) => {
      signal = control.signal;
      return new Promise<void>((resolve) => control.signal.addEventListener('abort', () => resolve()));
    });
    await until('handler started', () => signal !== null);
    expect(signal!.aborted).toBe(false);
    expect(await g.drain(20)).toBe('timeout');
    expect(signal!.aborted).toBe(true);
    expect((signal!.reason as RheoError).message).toMatch(/drain timed out/);
  });

  it('reports a late settle after a drain timeout, and writes nothing', async () => {
    const { rheo, stream, group, backend } = await setup();
    await rheo.appendBatch(stream, events(1));
    const stuck = gate();
    const g = startConsumer(rheo, { stream, group, leaseMs: 1000, pollMs: 10 }, () => stuck.promise);
    const late: Lease[] = [];
    g.on('late_settle', ({ lease, outcome }) => {
      expect(outcome).toEqual({ kind: 'ack' });
      late.push(lease);
    });
    await until('running', () => g.running === 1);
    expect(await g.drain(10)).toBe('timeout');
    const settles = backend.calls.settle;
    stuck.open();
    await until('late settle reported', () => late.length === 1);
    expect(g.stats.lateSettles).toBe(1);
    expect(backend.calls.settle).toBe(settles);
  });

  it('retries a renewal error that is not a lost lease on the fetch backoff, reports it once per burst, then recovers', async () => {
    const { rheo, stream, group, backend } = await setup();
    const [e] = await rheo.appendBatch(stream, events(1));
    backend.loseOnRenew(e.id, 3, 'backend_unavailable'); // per-lease failures, not "lost"
    const hold = gate();
    const errors: RenewErrorEvent[] = [];
    let recovered = 0;
    const g = startConsumer(rheo, { stream, group, leaseMs: 400, pollMs: 10 }, () => hold.promise);
    g.on('renew_error', (ev) => errors.push(ev));
    g.on('renew_recovered', () => recovered++);
    await until('first renewal error', () => errors.length >= 1);
    expect(g.renewalError?.code).toBe('backend_unavailable');
    await until('renewals recover', () => recovered === 1);
    expect(errors.map((x) => x.consecutive)).toEqual([1, 2, 3]);
    expect(errors.every((x) => x.leases === 1 && x.error.code === 'backend_unavailable')).toBe(true);
    expect(g.renewalError).toBeNull();
    expect(g.inflight).toBe(1); // kept throughout: the lease was never lost
    hold.open();
    await until('acked', async () => (await rheo.lag(stream, group)).lag === 0);
  });
});

describe('Consumer: drain gives back what no handler started', () => {
  it('releases a full buffer at once: the next consumer gets those events within pollMs, with the attempt they had', async () => {
    const { rheo, stream, group, backend, clock } = await setup();
    await rheo.appendBatch(stream, events(20));
    const hold = gate();
    const g1 = startConsumer(
      rheo,
      { stream, group, maxDemand: 20, concurrency: 4, leaseMs: 30_000, pollMs: 10, consumerId: 'one' },
      () => hold.promise,
    );
    await until('four running, sixteen buffered', () => g1.running === 4 && g1.inflight === 20);
    const drained = g1.drain(5000);
    await until('sixteen given back', () => g1.stats.released === 16);
    expect(g1.inflight).toBe(4);
    const seen: Array<{ sequence: number; attempt: number }> = [];
    const g2 = startConsumer(
      new Rheo(backend.inner),
      { stream, group, maxDemand: 20, concurrency: 20, leaseMs: 30_000, pollMs: 10, consumerId: 'two' },
      async (l) => {
        seen.push({ sequence: l.event.sequence, attempt: l.attempt });
      },
    );
    // The clock never moves: nothing expires, so only a release can hand these over.
    await until('the second consumer handles the sixteen', () => seen.length === 16);
    expect(clock.now()).toBe(clock.now());
    expect(seen.every((s) => s.attempt === 1)).toBe(true);
    expect(seen.map((s) => s.sequence).sort((a, b) => a - b)).toEqual(Array.from({ length: 16 }, (_, i) => i + 5));
    hold.open();
    expect(await drained).toBe('drained');
    await until('all acked', async () => (await rheo.lag(stream, group)).lag === 0);
    await g2.drain(1000);
  });

  it('gives back leases fetched while the drain began instead of running them', async () => {
    const { rheo, stream, group, backend } = await setup();
    await rheo.appendBatch(stream, events(5));
    const handled: number[] = [];
    const g = new Consumer(
      rheo,
      { stream, group, maxDemand: 5, concurrency: 5, leaseMs: 10_000, pollMs: 10 },
      async (l) => void handled.push(l.event.sequence),
    );
    g.start(); // the first fetch is in flight now
    expect(await g.drain(1000)).toBe('drained');
    expect(handled).toEqual([]);
    expect(backend.released.map((l) => l.event.sequence)).toEqual([1, 2, 3, 4, 5]);
    const again = await rheo.fetch(stream, group, { limit: 5 });
    expect(again.map((l) => l.attempt)).toEqual([1, 1, 1, 1, 1]);
  });
});
