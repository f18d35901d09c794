import { ConformanceContext, events, frontiers, LEASE_MS, newStream } from '../context';

export function frontierCases(ctx: ConformanceContext): void {
  describe('frontier, lag and group info', () => {
    if (ctx.caps.guarantees.contiguousFrontier) {
      it('holds the frontier at a hole and jumps when it fills', async () => {
        const stream = await newStream(ctx);
        await ctx.rheo.appendBatch(stream, events(3));
        await ctx.rheo.createGroup(stream, 'g');
        const [one, two, three] = await ctx.rheo.fetch(stream, 'g', { leaseMs: LEASE_MS });
        await ctx.rheo.ack(one);
        await ctx.rheo.ack(three);
        let lag = await ctx.rheo.lag(stream, 'g');
        expect(lag.partitions).toEqual([{ partition: 0, frontier: 1, highWatermark: 3, lag: 2 }]);
        expect(lag.lag).toBe(2);
        await ctx.rheo.ack(two);
        lag = await ctx.rheo.lag(stream, 'g');
        expect(lag).toEqual({ stream, group: 'g', lag: 0, partitions: [{ partition: 0, frontier: 3, highWatermark: 3, lag: 0 }] });
      });

      it('never moves the frontier past a nacked, expired or unfetched event', async () => {
        const stream = await newStream(ctx);
        await ctx.rheo.appendBatch(stream, events(5));
        await ctx.rheo.createGroup(stream, 'g');
        const [l1, l2, , l4] = await ctx.rheo.fetch(stream, 'g', { limit: 4, leaseMs: 1000 });
        await ctx.rheo.nack(l1, { delayMs: 100_000 });
        await ctx.rheo.ack(l2);
        await ctx.rheo.ack(l4);
        expect(await frontiers(ctx, stream, 'g')).toEqual([0]);
        ctx.clock.advance(1001); // sequence 3 expires unsettled
        expect(await frontiers(ctx, stream, 'g')).toEqual([0]);
        ctx.clock.advance(100_000);
        const again = await ctx.rheo.fetch(stream, 'g', { limit: 10, leaseMs: LEASE_MS });
        expect(again.map((l) => [l.event.sequence, l.attempt])).toEqual([
          [1, 2],
          [3, 2],
          [5, 1],
        ]);
        await ctx.rheo.ack(again[0]);
        expect(await frontiers(ctx, stream, 'g')).toEqual([2]);
        await ctx.rheo.reject(again[1]);
        expect(await frontiers(ctx, stream, 'g')).toEqual([4]);
        await ctx.rheo.ack(again[2]);
        expect(await ctx.rheo.lag(stream, 'g')).toMatchObject({ lag: 0, partitions: [{ frontier: 5, highWatermark: 5, lag: 0 }] });
      });
    }

    if (ctx.caps.guarantees.partitions) {
      it('sums lag over partitions', async () => {
        const stream = await newStream(ctx, 3);
        await ctx.rheo.appendBatch(stream, [...events(4, 1), ...events(2, 1, () => ({ partition: 2 }))]);
        await ctx.rheo.createGroup(stream, 'g');
        let lag = await ctx.rheo.lag(stream, 'g');
        expect(lag.partitions.map((p) => [p.partition, p.highWatermark, p.frontier, p.lag])).toEqual([
          [0, 4, 0, 4],
          [1, 0, 0, 0],
          [2, 2, 0, 2],
        ]);
        expect(lag.lag).toBe(6);
        const got = await ctx.rheo.fetch(stream, 'g', { partitions: [2], leaseMs: LEASE_MS });
        for (const l of got) await ctx.rheo.ack(l);
        lag = await ctx.rheo.lag(stream, 'g');
        expect(lag.partitions.map((p) => p.lag)).toEqual([4, 0, 0]);
        expect(lag.lag).toBe(4);
      });
    }

    it('reports group info: live leases only, dead letters, the age of the oldest unsettled event', async () => {
      const stream = await newStream(ctx);
      const t0 = ctx.clock.now();
      await ctx.rheo.appendBatch(stream, events(2));
      ctx.clock.advance(3000);
      await ctx.rheo.appendBatch(stream, events(2));
      await ctx.rheo.createGroup(stream, 'g', { maxAttempts: 4 });
      ctx.clock.advance(2000);

      let info = await ctx.rheo.groupInfo(stream, 'g');
      expect(info).toMatchObject({ stream, group: 'g', inflight: 0, deadLetters: 0, oldestUnsettledAgeMs: 5000 });
      expect(info.lag.lag).toBe(4);
      expect(info.config).toMatchObject({ stream, group: 'g', maxAttempts: 4, ordering: 'none' });

      const leased = await ctx.rheo.fetch(stream, 'g', { limit: 3, leaseMs: 1000 });
      expect((await ctx.rheo.groupInfo(stream, 'g')).inflight).toBe(3);
      const [a, b] = leased; // the third expires unsettled below
      await ctx.rheo.ack(a);
      await ctx.rheo.reject(b, { reason: 'nope' });
      info = await ctx.rheo.groupInfo(stream, 'g');
      expect(info).toMatchObject({ inflight: 1, deadLetters: 1, oldestUnsettledAgeMs: ctx.clock.now() - (t0 + 3000) });
      ctx.clock.advance(1001); // the third lease expires: no longer in flight
      info = await ctx.rheo.groupInfo(stream, 'g');
      expect(info.inflight).toBe(0);
      expect(info.oldestUnsettledAgeMs).toBe(ctx.clock.now() - (t0 + 3000));

      for (const l of await ctx.rheo.fetch(stream, 'g', { leaseMs: LEASE_MS })) await ctx.rheo.ack(l);
      info = await ctx.rheo.groupInfo(stream, 'g');
      expect(info).toMatchObject({ inflight: 0, deadLetters: 1, oldestUnsettledAgeMs: null });
      expect(info.lag.lag).toBe(0);
    });
  });
}
