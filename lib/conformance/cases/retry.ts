import type { GroupOptions, Lease } from '../../core/types';
import { backoffDelay } from '../../core/backoff';
import { ConformanceContext, events, LEASE_MS, newStream } from '../context';

export function retryCases(ctx: ConformanceContext): void {
  async function setup(n: number, group: GroupOptions): Promise<string> {
    const stream = await newStream(ctx);
    await ctx.rheo.appendBatch(stream, events(n));
    await ctx.rheo.createGroup(stream, 'g', group);
    return stream;
  }

  async function fetchOne(stream: string): Promise<Lease> {
    const got = await ctx.rheo.fetch(stream, 'g', { limit: 1, leaseMs: LEASE_MS });
    expect(got).toHaveLength(1);
    return got[0];
  }

  describe('retry', () => {
    it('redelivers a nacked event at once with delayMs 0, with attempt + 1', async () => {
      const stream = await setup(1, {});
      const first = await fetchOne(stream);
      await ctx.rheo.nack(first, { delayMs: 0, reason: 'try again' });
      expect((await ctx.rheo.groupInfo(stream, 'g')).inflight).toBe(0);
      const second = await fetchOne(stream);
      expect(second).toMatchObject({ attempt: 2, event: first.event });
      expect(second.leaseId).not.toBe(first.leaseId);
      await ctx.rheo.ack(second);
      expect((await ctx.rheo.lag(stream, 'g')).lag).toBe(0);
    });

    it('honours a nack delay: not fetchable before delayMs, fetchable after', async () => {
      const stream = await setup(1, {});
      const lease = await fetchOne(stream);
      await ctx.rheo.nack(lease, { delayMs: 5000 });
      expect(await ctx.rheo.fetch(stream, 'g')).toEqual([]);
      ctx.clock.advance(4999);
      expect(await ctx.rheo.fetch(stream, 'g')).toEqual([]);
      ctx.clock.advance(2);
      expect((await fetchOne(stream)).attempt).toBe(2);
    });

    it("uses the group's retry backoff when nack gives no delay", async () => {
      const retry = { initialMs: 1000, factor: 3, maxMs: 5000 };
      const stream = await setup(1, { retry, maxAttempts: 10 });
      for (let attempt = 1; attempt <= 4; attempt++) {
        const lease = await fetchOne(stream);
        expect(lease.attempt).toBe(attempt);
        await ctx.rheo.nack(lease);
        const delay = backoffDelay(retry, attempt); // 1000, 3000, 5000 (capped), 5000
        ctx.clock.advance(delay - 1);
        expect(await ctx.rheo.fetch(stream, 'g')).toEqual([]);
        ctx.clock.advance(2);
      }
      expect((await fetchOne(stream)).attempt).toBe(5);
    });

    // The store computes a nack's backoff from the group's stored retry settings (the
    // settle reads them when it decides: ADR 047); core's backoffDelay is the rule it
    // must answer alike, rounding and cap included.
    it.each([
      ['half-up rounding', { initialMs: 333, factor: 1.5, maxMs: 100_000 }, 6],
      ['a small base', { initialMs: 5, factor: 1.5, maxMs: 1000 }, 6],
      ['the largest factor, capped', { initialMs: 1, factor: 100, maxMs: 3_600_000 }, 6],
      ['a factor of 1', { initialMs: 250, factor: 1, maxMs: 250 }, 3],
      ['no delay at all', { initialMs: 0, factor: 2, maxMs: 0 }, 3],
    ])("computes the group's backoff as core's backoffDelay does (%s)", async (_what, retry, attempts) => {
      const stream = await setup(1, { retry, maxAttempts: attempts + 1 });
      for (let attempt = 1; attempt <= attempts; attempt++) {
        const lease = await fetchOne(stream);
        expect(lease.attempt).toBe(attempt);
        await ctx.rheo.nack(lease);
        const delay = backoffDelay(retry, attempt);
        if (delay > 0) {
          ctx.clock.advance(delay - 1);
          expect(await ctx.rheo.fetch(stream, 'g')).toEqual([]);
        }
        ctx.clock.advance(1);
      }
      expect((await fetchOne(stream)).attempt).toBe(attempts + 1);
    });

    it("caps the backoff of a late attempt of the largest factor at maxMs (the exponent beyond a double's range)", async () => {
      const retry = { initialMs: 1, factor: 100, maxMs: 5000 };
      const stream = await setup(1, { retry, maxAttempts: 1000 });
      // Attempt by attempt to 180 (100^179 is past a double): every delay from the 3rd on is maxMs.
      for (let attempt = 1; attempt <= 180; attempt++) {
        const lease = await fetchOne(stream);
        await ctx.rheo.nack(lease);
        const delay = backoffDelay(retry, attempt);
        if (attempt >= 170) {
          expect(delay).toBe(5000);
          ctx.clock.advance(delay - 1);
          expect(await ctx.rheo.fetch(stream, 'g')).toEqual([]);
          ctx.clock.advance(1);
        } else ctx.clock.advance(delay);
      }
      expect((await fetchOne(stream)).attempt).toBe(181);
    });

    it('keeps other events flowing while one waits out its delay', async () => {
      const stream = await setup(3, {});
      const [a] = await ctx.rheo.fetch(stream, 'g', { limit: 1, leaseMs: LEASE_MS });
      await ctx.rheo.nack(a, { delayMs: 60_000 });
      const rest = await ctx.rheo.fetch(stream, 'g', { limit: 10, leaseMs: LEASE_MS });
      expect(rest.map((l) => l.event.sequence)).toEqual([2, 3]);
    });
  });
}
