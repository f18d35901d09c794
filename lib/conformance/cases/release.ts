import type { Lease } from '../../core/types';
import { ConformanceContext, events, expectCode, newStream } from '../context';

/** Giving leases back unhandled: claimable at once, with the attempt they had; fenced by lease id. */
export function releaseCases(ctx: ConformanceContext): void {
  async function setup(n: number, group: Parameters<typeof ctx.rheo.createGroup>[2] = {}): Promise<string> {
    const stream = await newStream(ctx);
    await ctx.rheo.appendBatch(stream, events(n));
    await ctx.rheo.createGroup(stream, 'g', group);
    return stream;
  }

  describe('release', () => {
    it('makes released events claimable at once, with the attempt they had', async () => {
      const stream = await setup(3);
      const first = await ctx.rheo.fetch(stream, 'g', { limit: 3, leaseMs: 1000 });
      expect(first.map((l) => l.attempt)).toEqual([1, 1, 1]);
      const results = await ctx.rheo.releaseMany(first.slice(0, 2));
      expect(results).toEqual([{ ok: true }, { ok: true }]);
      // No clock advance: released deliveries are due now.
      const again = await ctx.rheo.fetch(stream, 'g', { limit: 3, leaseMs: 1000 });
      expect(again.map((l) => l.event.sequence).sort()).toEqual([1, 2]);
      expect(again.map((l) => l.attempt)).toEqual([1, 1]);
      for (const l of [...again, first[2]]) await ctx.rheo.ack(l);
      expect((await ctx.rheo.lag(stream, 'g')).lag).toBe(0);
    });

    it('keeps a retried attempt count: release after a nack gives back only the last delivery', async () => {
      const stream = await setup(1);
      const [a] = await ctx.rheo.fetch(stream, 'g', { limit: 1, leaseMs: 1000 });
      await ctx.rheo.nack(a, { delayMs: 0 });
      const [b] = await ctx.rheo.fetch(stream, 'g', { limit: 1, leaseMs: 1000 });
      expect(b.attempt).toBe(2);
      await ctx.rheo.releaseMany([b]);
      const [c] = await ctx.rheo.fetch(stream, 'g', { limit: 1, leaseMs: 1000 });
      expect(c.attempt).toBe(2);
      await ctx.rheo.ack(c);
    });

    it('releases an expired lease nobody claimed since, and refuses one another consumer holds', async () => {
      const stream = await setup(2);
      const [a, b] = await ctx.rheo.fetch(stream, 'g', { limit: 2, leaseMs: 1000 });
      ctx.clock.advance(1001);
      // a: expired, unclaimed -> still ours to give back.
      expect(await ctx.rheo.releaseMany([a])).toEqual([{ ok: true }]);
      const taken = await ctx.rheo.fetch(stream, 'g', { limit: 2, leaseMs: 1000 });
      const byPos = new Map(taken.map((l) => [l.event.sequence, l]));
      expect(byPos.get(1)?.attempt).toBe(1);
      // b expired and was claimed again (attempt 2): the old lease id no longer fences anything.
      expect(byPos.get(2)?.attempt).toBe(2);
      const [stale] = await ctx.rheo.releaseMany([b]);
      expect(stale.ok).toBe(false);
      if (!stale.ok) expect(stale.error.code).toBe('stale_lease');
      // The new holder is untouched: it still acks.
      for (const l of taken) await ctx.rheo.ack(l);
      expect((await ctx.rheo.lag(stream, 'g')).lag).toBe(0);
    });

    it('refuses to release a settled lease and changes nothing', async () => {
      const stream = await setup(1);
      const [a] = await ctx.rheo.fetch(stream, 'g', { limit: 1, leaseMs: 1000 });
      await ctx.rheo.ack(a);
      const [r] = await ctx.rheo.releaseMany([a]);
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.error.code).toBe('stale_lease');
      expect(await ctx.rheo.fetch(stream, 'g', { limit: 1 })).toEqual([]);
      expect((await ctx.rheo.lag(stream, 'g')).lag).toBe(0);
    });

    if (ctx.caps.guarantees.orderedPartitions) {
      it('frees a partition-ordered head at once, for the next consumer', async () => {
        const stream = await setup(2, { ordering: 'partition' });
        const [head] = await ctx.rheo.fetch(stream, 'g', { limit: 2, leaseMs: 1000 });
        expect(head.event.sequence).toBe(1);
        expect(await ctx.rheo.fetch(stream, 'g', { limit: 2 })).toEqual([]);
        await ctx.rheo.releaseMany([head]);
        const [again] = await ctx.rheo.fetch(stream, 'g', { limit: 2, leaseMs: 1000 });
        expect(again.event.sequence).toBe(1);
        expect(again.attempt).toBe(1);
        await ctx.rheo.ack(again);
      });
    }

    it('refuses more than the batch limit before touching the backend', async () => {
      const stream = await setup(1);
      const [a] = await ctx.rheo.fetch(stream, 'g', { limit: 1, leaseMs: 1000 });
      const many: Lease[] = Array.from({ length: 10_001 }, () => a);
      await expectCode(ctx.rheo.releaseMany(many), 'invalid_argument', 'leases');
      await expectCode(ctx.rheo.renewMany(many), 'invalid_argument', 'leases');
      await ctx.rheo.ack(a);
    });
  });
}
