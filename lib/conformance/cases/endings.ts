import { ConformanceContext, events, LEASE_MS, newStream, positions } from '../context';

/**
 * Every delivery ends (docs/adr/035-every-delivery-ends.md): a caller's reason is
 * stored as every backend can keep it, and a lease that expires on the group's
 * last attempt is dead-lettered by the next claim instead of being leased again.
 */
export function endingCases(ctx: ConformanceContext): void {
  describe('every delivery ends', () => {
    it('stores reasons holding U+0000 with U+FFFD in its place, and settles the rest of their batch', async () => {
      const stream = await newStream(ctx);
      await ctx.rheo.appendBatch(stream, events(4));
      await ctx.rheo.createGroup(stream, 'g', { maxAttempts: 1 });
      const [a, b, c, d] = await ctx.rheo.fetch(stream, 'g', { limit: 4, leaseMs: LEASE_MS });
      const results = await ctx.rheo.settleMany([
        { kind: 'ack', lease: a },
        { kind: 'ack', lease: b },
        { kind: 'reject', lease: c, reason: 'bad \u0000 value' },
        { kind: 'nack', lease: d, reason: 'Unexpected token \u0000 in JSON\u0000' },
      ]);
      expect(results.map((r) => r.ok)).toEqual([true, true, true, true]);
      const dead = await ctx.rheo.deadLetters(stream, 'g');
      expect(dead.map((x) => [x.sequence, x.reason])).toEqual([
        [3, 'bad \uFFFD value'],
        [4, 'Unexpected token \uFFFD in JSON\uFFFD'],
      ]);
      expect(dead.every((x) => x.reason.isWellFormed())).toBe(true);
      expect((await ctx.rheo.lag(stream, 'g')).lag).toBe(0);
    });

    it('dead-letters a lease that expired on the last attempt at the next claim, and claims the rest', async () => {
      const stream = await newStream(ctx);
      const evs = await ctx.rheo.appendBatch(stream, events(3));
      await ctx.rheo.createGroup(stream, 'g', { maxAttempts: 2, retry: { initialMs: 0, maxMs: 0 } });
      const first = await ctx.rheo.fetch(stream, 'g', { limit: 10, leaseMs: LEASE_MS });
      expect(first.map((l) => l.attempt)).toEqual([1, 1, 1]);
      await ctx.rheo.ack(first[0]);
      ctx.clock.advance(LEASE_MS + 1);
      // Expired on attempt 1 of 2: leased again.
      const second = await ctx.rheo.fetch(stream, 'g', { limit: 10, leaseMs: LEASE_MS });
      expect(second.map((l) => [l.event.sequence, l.attempt])).toEqual([
        [2, 2],
        [3, 2],
      ]);
      // Nothing dead-lettered: nothing told.
      expect(second.deadLettered).toBeUndefined();
      const [later] = await ctx.rheo.appendBatch(stream, events(1));
      ctx.clock.advance(LEASE_MS + 1);
      // Expired on attempt 2 of 2: dead-lettered, and the claim goes on to the fresh event.
      const third = await ctx.rheo.fetch(stream, 'g', { limit: 10, leaseMs: LEASE_MS });
      expect(third.map((l) => [l.event.id, l.attempt])).toEqual([[later.id, 1]]);
      // The fetch tells which deliveries its claim dead-lettered (FetchedLeases.deadLettered), so they can be reported.
      expect(third.deadLettered).toEqual([
        { eventId: evs[1].id, partition: 0, sequence: 2, attempt: 2, reason: 'lease expired on attempt 2 of 2' },
        { eventId: evs[2].id, partition: 0, sequence: 3, attempt: 2, reason: 'lease expired on attempt 2 of 2' },
      ]);
      await ctx.rheo.ack(third[0]);
      const dead = await ctx.rheo.deadLetters(stream, 'g');
      expect(dead.map((x) => [x.eventId, x.sequence, x.attempt, x.reason])).toEqual([
        [evs[1].id, 2, 2, 'lease expired on attempt 2 of 2'],
        [evs[2].id, 3, 2, 'lease expired on attempt 2 of 2'],
      ]);
      expect(dead[0].deadLetteredAt).toEqual(new Date(ctx.clock.now()));
      expect(dead[0].event).toEqual(evs[1]);
      expect(await ctx.rheo.countDeadLetters(stream, 'g')).toBe(2);
      expect(await ctx.rheo.fetch(stream, 'g', { limit: 10, leaseMs: LEASE_MS })).toEqual([]);
      const info = await ctx.rheo.groupInfo(stream, 'g');
      expect([info.inflight, info.deadLetters, info.lag.lag]).toEqual([0, 2, 0]);

      // A settle of the expired lease comes too late, and a redrive starts the event over.
      await expect(ctx.rheo.ack(second[0])).rejects.toMatchObject({ code: 'stale_lease' });
      expect(await ctx.rheo.redrive(stream, 'g', { all: true })).toBe(2);
      const again = await ctx.rheo.fetch(stream, 'g', { limit: 10, leaseMs: LEASE_MS });
      expect(again.map((l) => [l.event.sequence, l.attempt])).toEqual([
        [2, 1],
        [3, 1],
      ]);
      for (const l of again) await ctx.rheo.ack(l);
      expect((await ctx.rheo.lag(stream, 'g')).lag).toBe(0);
    });

    it('keeps redelivering an expired lease below the last attempt, and a released one keeps its attempt', async () => {
      const stream = await newStream(ctx);
      await ctx.rheo.appendBatch(stream, events(1));
      await ctx.rheo.createGroup(stream, 'g', { maxAttempts: 2 });
      const [a] = await ctx.rheo.fetch(stream, 'g', { leaseMs: LEASE_MS });
      ctx.clock.advance(LEASE_MS + 1);
      const [b] = await ctx.rheo.fetch(stream, 'g', { leaseMs: LEASE_MS });
      expect([a.attempt, b.attempt]).toEqual([1, 2]);
      // Given back unhandled, the last attempt is not spent: the next claim leases it again as attempt 2.
      await ctx.rheo.releaseMany([b]);
      const [c] = await ctx.rheo.fetch(stream, 'g', { leaseMs: LEASE_MS });
      expect(c.attempt).toBe(2);
      await ctx.rheo.ack(c);
      expect(await ctx.rheo.deadLetters(stream, 'g')).toEqual([]);
      expect((await ctx.rheo.lag(stream, 'g')).lag).toBe(0);
    });

    if (ctx.caps.guarantees.orderedPartitions) {
      it("moves an ordered group's partition past a head whose lease expired on the last attempt, in the same fetch", async () => {
        const stream = await newStream(ctx);
        await ctx.rheo.appendBatch(stream, events(3));
        await ctx.rheo.createGroup(stream, 'g', { ordering: 'partition', maxAttempts: 1 });
        const [head] = await ctx.rheo.fetch(stream, 'g', { limit: 10, leaseMs: LEASE_MS });
        expect(positions([head])).toEqual(['0:1']);
        ctx.clock.advance(LEASE_MS + 1);
        const next = await ctx.rheo.fetch(stream, 'g', { limit: 10, leaseMs: LEASE_MS });
        expect(next.map((l) => [l.event.sequence, l.attempt])).toEqual([[2, 1]]);
        expect(next.deadLettered).toEqual([
          { eventId: head.event.id, partition: 0, sequence: 1, attempt: 1, reason: 'lease expired on attempt 1 of 1' },
        ]);
        expect((await ctx.rheo.deadLetters(stream, 'g')).map((x) => [x.sequence, x.reason])).toEqual([
          [1, 'lease expired on attempt 1 of 1'],
        ]);
        await ctx.rheo.ack(next[0]);
        const [last] = await ctx.rheo.fetch(stream, 'g', { limit: 10, leaseMs: LEASE_MS });
        await ctx.rheo.ack(last);
        expect((await ctx.rheo.lag(stream, 'g')).lag).toBe(0);
      });
    }
  });
}
