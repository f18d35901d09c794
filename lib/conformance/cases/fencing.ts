import type { Lease } from '../../core/types';
import { ConformanceContext, events, expectCode, newStream } from '../context';

export function fencingCases(ctx: ConformanceContext): void {
  /** A stream with `n` events and a group `g` on it. */
  async function setup(n = 1, group: Parameters<typeof ctx.rheo.createGroup>[2] = {}): Promise<string> {
    const stream = await newStream(ctx);
    await ctx.rheo.appendBatch(stream, events(n));
    await ctx.rheo.createGroup(stream, 'g', group);
    return stream;
  }

  async function fetchOne(stream: string, leaseMs: number): Promise<Lease> {
    const got = await ctx.rheo.fetch(stream, 'g', { limit: 1, leaseMs });
    expect(got).toHaveLength(1);
    return got[0];
  }

  describe('leases, expiry and fencing', () => {
    it('redelivers an expired lease with attempt + 1 and a new leaseId, not before it expires', async () => {
      const stream = await setup();
      const first = await fetchOne(stream, 1000);
      ctx.clock.advance(999);
      expect(await ctx.rheo.fetch(stream, 'g')).toEqual([]);
      ctx.clock.advance(2);
      const second = await fetchOne(stream, 1000);
      expect(second.event).toEqual(first.event);
      expect(second.attempt).toBe(2);
      expect(second.leaseId).not.toBe(first.leaseId);
      ctx.clock.advance(1001);
      const third = await fetchOne(stream, 1000);
      expect(third.attempt).toBe(3);
      expect(new Set([first.leaseId, second.leaseId, third.leaseId]).size).toBe(3);
      await ctx.rheo.ack(third);
      expect((await ctx.rheo.lag(stream, 'g')).lag).toBe(0);
    });

    it('fences a stale lease: ack, nack, reject and renew fail with stale_lease while the new holder acks', async () => {
      const stream = await setup();
      const old = await fetchOne(stream, 1000);
      ctx.clock.advance(1001);
      const current = await fetchOne(stream, 1000);
      await expectCode(ctx.rheo.ack(old), 'stale_lease');
      await expectCode(ctx.rheo.nack(old, { delayMs: 0 }), 'stale_lease');
      await expectCode(ctx.rheo.reject(old, { reason: 'stale' }), 'stale_lease');
      await expectCode(ctx.rheo.renew(old, { leaseMs: 1000 }), 'stale_lease');
      // None of that touched the current holder's delivery.
      const info = await ctx.rheo.groupInfo(stream, 'g');
      expect(info.inflight).toBe(1);
      expect(info.deadLetters).toBe(0);
      expect(await ctx.rheo.fetch(stream, 'g')).toEqual([]);
      await ctx.rheo.ack(current);
      expect((await ctx.rheo.lag(stream, 'g')).lag).toBe(0);
      await expectCode(ctx.rheo.ack(old), 'stale_lease');
    });

    it('treats a double ack, and any settle after a settle, as stale', async () => {
      const stream = await setup(3);
      const [a, b, c] = await ctx.rheo.fetch(stream, 'g', { leaseMs: 1000 });
      await ctx.rheo.ack(a);
      await expectCode(ctx.rheo.ack(a), 'stale_lease');
      await expectCode(ctx.rheo.nack(a), 'stale_lease');
      await expectCode(ctx.rheo.reject(a), 'stale_lease');
      await expectCode(ctx.rheo.renew(a), 'stale_lease');
      await ctx.rheo.reject(b, { reason: 'bad' });
      await expectCode(ctx.rheo.ack(b), 'stale_lease');
      expect((await ctx.rheo.deadLetters(stream, 'g')).map((d) => d.reason)).toEqual(['bad']);
      // A nacked lease is spent too, even before its event is redelivered.
      await ctx.rheo.nack(c, { delayMs: 60_000 });
      await expectCode(ctx.rheo.ack(c), 'stale_lease');
      await expectCode(ctx.rheo.renew(c), 'stale_lease');
      await expectCode(ctx.rheo.nack(c), 'stale_lease');
      ctx.clock.advance(60_001);
      const [again] = await ctx.rheo.fetch(stream, 'g');
      expect(again).toMatchObject({ attempt: 2, event: c.event });
    });

    it('treats an expired lease as stale even when nobody reclaimed it', async () => {
      const stream = await setup(1);
      const lease = await fetchOne(stream, 1000);
      ctx.clock.advance(1001);
      await expectCode(ctx.rheo.ack(lease), 'stale_lease');
      await expectCode(ctx.rheo.renew(lease), 'stale_lease');
      await expectCode(ctx.rheo.nack(lease), 'stale_lease');
      await expectCode(ctx.rheo.reject(lease), 'stale_lease');
      expect((await ctx.rheo.groupInfo(stream, 'g')).inflight).toBe(0);
      // Not lost: the event is claimable again.
      const again = await fetchOne(stream, 1000);
      expect(again).toMatchObject({ attempt: 2, event: lease.event });
    });

    it('rejects a lease whose receipt does not match with receipt_mismatch, and leaves it live', async () => {
      const stream = await setup(1);
      const lease = await fetchOne(stream, 1000);
      const forged = { ...lease, receipt: `${lease.receipt}-forged` };
      await expectCode(ctx.rheo.ack(forged), 'receipt_mismatch');
      await expectCode(ctx.rheo.reject(forged), 'receipt_mismatch');
      await expectCode(ctx.rheo.renew(forged), 'receipt_mismatch');
      expect((await ctx.rheo.groupInfo(stream, 'g')).inflight).toBe(1);
      await ctx.rheo.ack(lease);
    });

    it("trusts its own records over the lease object's copies (attempt, event id)", async () => {
      const stream = await setup(2, { maxAttempts: 3, retry: { initialMs: 0, maxMs: 0 } });
      const [a, b] = await ctx.rheo.fetch(stream, 'g', { leaseMs: 1000 });
      // A caller-edited attempt must not dead-letter early: this is the first delivery.
      await ctx.rheo.nack({ ...a, attempt: 99 }, { reason: 'edited' });
      expect(await ctx.rheo.deadLetters(stream, 'g')).toEqual([]);
      const [again] = await ctx.rheo.fetch(stream, 'g', { leaseMs: 1000 });
      expect(again).toMatchObject({ attempt: 2, event: a.event });
      // An edited event id either fails as not ours, or files the dead letter under the true id.
      const forged = { ...b, event: { ...b.event, id: 'forged-id' } };
      const result = await ctx.rheo.settleMany([{ kind: 'reject', lease: forged, reason: 'forged' }]);
      const dead = await ctx.rheo.deadLetters(stream, 'g');
      if (result[0].ok) expect(dead.map((d) => d.eventId)).toEqual([b.event.id]);
      else expect(['stale_lease', 'receipt_mismatch']).toContain(result[0].error.code);
      expect(dead.some((d) => d.eventId === 'forged-id')).toBe(false);
    });

    it('renews: the lease outlives its original TTL and expires after the renewed one', async () => {
      const stream = await setup(1);
      const lease = await fetchOne(stream, 1000);
      ctx.clock.advance(800);
      const renewed = await ctx.rheo.renew(lease, { leaseMs: 1000 });
      expect(renewed.expiresAt.getTime()).toBe(ctx.clock.now() + 1000);
      expect(renewed.leaseId).toBe(lease.leaseId);
      ctx.clock.advance(400); // 1200 ms after the fetch: past the original TTL
      expect(await ctx.rheo.fetch(stream, 'g')).toEqual([]);
      expect((await ctx.rheo.groupInfo(stream, 'g')).inflight).toBe(1);
      ctx.clock.advance(601); // past the renewed TTL
      const next = await fetchOne(stream, 1000);
      expect(next.attempt).toBe(2);
      await expectCode(ctx.rheo.renew(lease), 'stale_lease');
      await ctx.rheo.ack(next);
    });

    it('renews many leases with per-lease results', async () => {
      const stream = await setup(3);
      const [a, b, c] = await ctx.rheo.fetch(stream, 'g', { leaseMs: 1000 });
      await ctx.rheo.ack(b);
      const results = await ctx.rheo.renewMany([a, b, c], { leaseMs: 5000 });
      expect(results.map((r) => r.ok)).toEqual([true, false, true]);
      const failed = results[1];
      expect(!failed.ok && failed.error.code).toBe('stale_lease');
      ctx.clock.advance(2000);
      expect(await ctx.rheo.fetch(stream, 'g')).toEqual([]);
      await ctx.rheo.ack(a);
      await ctx.rheo.ack(c);
    });
  });
}
