// A delivery whose settle fails still ends (docs/adr/035-every-delivery-ends.md):
// one bad op never fails the other ops of its batch, a definitely failed settle
// is followed by a nack that carries its error, and a lease that keeps expiring
// is dead-lettered after maxAttempts.
import type { Lease } from '../../lib';
import { drainAll, events, setup, startConsumer } from './helpers';
import { until } from '../support/until';

afterEach(drainAll);

describe('settleMany: one bad op in a batch', () => {
  it('a batch the backend fails as a whole (a definite error) is settled op by op: only the bad op fails', async () => {
    const { rheo, stream, group, backend } = await setup();
    const evs = await rheo.appendBatch(stream, events(3));
    const leases = await rheo.fetch(stream, group, { limit: 3 });
    backend.failSettleCall({ code: 'failed', eventId: evs[2].id });
    const results = await rheo.settleMany([
      { kind: 'ack', lease: leases[0] },
      { kind: 'ack', lease: leases[1] },
      { kind: 'reject', lease: leases[2], reason: 'poison' },
    ]);
    expect(results.map((r) => (r.ok ? 'ok' : r.error.code))).toEqual(['ok', 'ok', 'failed']);
    const lag = await rheo.lag(stream, group);
    expect([lag.partitions[0].frontier, lag.lag]).toEqual([2, 1]);
    expect(await rheo.deadLetters(stream, group)).toEqual([]);
  });

  it('an outcome unknown for the whole batch (backend_unavailable) is not settled again op by op', async () => {
    const { rheo, stream, group, backend } = await setup();
    await rheo.appendBatch(stream, events(2));
    const leases: Lease[] = await rheo.fetch(stream, group, { limit: 2 });
    backend.failSettleCall({ code: 'backend_unavailable', times: 1 });
    await expect(rheo.settleMany(leases.map((lease) => ({ kind: 'ack' as const, lease })))).rejects.toMatchObject({
      code: 'backend_unavailable',
    });
    expect(backend.calls.settle).toBe(1);
    expect((await rheo.lag(stream, group)).lag).toBe(2);
  });
});

describe('Consumer: a delivery whose settle keeps failing still ends', () => {
  const maxAttempts = 2;
  const leaseMs = 1000;

  it('a reject that always fails is nacked with the settle error, and dead-lettered at maxAttempts with it', async () => {
    const { rheo, stream, group, backend } = await setup({ group: { maxAttempts, retry: { initialMs: 0, maxMs: 0 } } });
    const [bad, good] = await rheo.appendBatch(stream, events(2));
    backend.failSettle({ kind: 'reject', eventId: bad.id, code: 'failed', applied: false, times: Number.POSITIVE_INFINITY });
    const handled: string[] = [];
    startConsumer(rheo, { stream, group, leaseMs: 60_000, pollMs: 5 }, async (l) => {
      handled.push(`${l.event.id === bad.id ? 'bad' : 'good'}:${l.attempt}`);
      if (l.event.id === bad.id) return { kind: 'reject', reason: 'cannot parse' };
    });
    await until('both events ended', async () => (await rheo.lag(stream, group)).lag === 0);
    const dead = await rheo.deadLetters(stream, group);
    expect(dead.map((d) => [d.eventId, d.attempt])).toEqual([[bad.id, maxAttempts]]);
    expect(dead[0].reason).toMatch(/^settle failed: failed: injected fault: reject answered failed/);
    expect(handled.sort()).toEqual(['bad:1', 'bad:2', 'good:1']);
    expect(backend.settles.filter((s) => s.eventId === good.id).map((s) => `${s.kind}:${s.answered}`)).toEqual(['ack:ok']);
  });

  it('a delivery whose every settle fails is dead-lettered by the claim after its last lease expires', async () => {
    const { rheo, stream, group, backend, clock } = await setup({ group: { maxAttempts, retry: { initialMs: 0, maxMs: 0 } } });
    const [bad, good] = await rheo.appendBatch(stream, events(2));
    backend.failSettle({ eventId: bad.id, code: 'failed', applied: false, times: Number.POSITIVE_INFINITY });
    const attempts: number[] = [];
    const g = startConsumer(rheo, { stream, group, leaseMs, pollMs: 5 }, async (l) => {
      if (l.event.id === bad.id) attempts.push(l.attempt);
    });
    for (let attempt = 1; attempt <= maxAttempts; attempt++) {
      await until(`attempt ${attempt} given up`, () => attempts.length === attempt && g.inflight === 0);
      // Its ack failed, then the nack that followed it: nothing more to try but the lease's expiry.
      const mine = backend.settles.filter((s) => s.eventId === bad.id && s.attempt === attempt);
      expect(mine.map((s) => `${s.kind}:${s.answered}`)).toEqual(['ack:failed', 'nack:failed']);
      expect(mine[1].reason).toMatch(/^settle failed: failed: injected fault: ack answered failed/);
      clock.advance(leaseMs);
    }
    await until('dead-lettered by the claim', async () => (await rheo.lag(stream, group)).lag === 0);
    const dead = await rheo.deadLetters(stream, group);
    expect(dead.map((d) => [d.eventId, d.attempt, d.reason])).toEqual([[bad.id, maxAttempts, `lease expired on attempt 2 of 2`]]);
    expect(attempts).toEqual([1, 2]);
    expect(backend.settles.filter((s) => s.eventId === good.id).map((s) => `${s.kind}:${s.answered}`)).toEqual(['ack:ok']);
  });

  it('the other settles of a batch the backend fails as a whole are applied once, their events handled once', async () => {
    const { rheo, stream, group, backend } = await setup({ group: { maxAttempts, retry: { initialMs: 0, maxMs: 0 } } });
    const evs = await rheo.appendBatch(stream, events(5));
    const bad = evs[2];
    // Every settle call carrying the bad event fails whole, as one statement does.
    backend.failSettleCall({ code: 'failed', eventId: bad.id });
    const handled = new Map<string, number>();
    startConsumer(rheo, { stream, group, leaseMs: 60_000, pollMs: 5 }, async (l) => {
      handled.set(l.event.id, (handled.get(l.event.id) ?? 0) + 1);
    });
    await until('every event handled', () => handled.size === 5);
    const goods = evs.filter((e) => e !== bad);
    await until('the events before the bad one acked', async () => (await rheo.lag(stream, group)).partitions[0].frontier >= 2);
    for (const e of goods) expect(handled.get(e.id)).toBe(1);
    const acked = backend.settles.filter((s) => s.eventId !== bad.id && s.answered === 'ok').map((s) => s.eventId);
    expect(acked.sort()).toEqual(goods.map((e) => e.id).sort());
  });
});
