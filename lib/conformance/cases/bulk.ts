import { ConformanceContext, drain, events, newStream } from '../context';

export function bulkCases(ctx: ConformanceContext): void {
  describe('bulk settle', () => {
    it('settles mixed ack/nack/reject with per-op results: a stale op fails alone, the good ones apply', async () => {
      const stream = await newStream(ctx);
      await ctx.rheo.appendBatch(stream, events(5));
      await ctx.rheo.createGroup(stream, 'g');
      const [a, b, c, d, e] = await ctx.rheo.fetch(stream, 'g', { leaseMs: 1000 });
      // d goes stale: expire it and let another fetch take it over.
      await ctx.rheo.renewMany([a, b, c, e], { leaseMs: 60_000 });
      ctx.clock.advance(1001);
      const [d2] = await ctx.rheo.fetch(stream, 'g', { leaseMs: 60_000 });
      expect(d2.event.id).toBe(d.event.id);

      const results = await ctx.rheo.settleMany([
        { kind: 'ack', lease: a },
        { kind: 'nack', lease: b, delayMs: 0, reason: 'again' },
        { kind: 'reject', lease: c, reason: 'bad' },
        { kind: 'ack', lease: d },
        { kind: 'ack', lease: e },
        { kind: 'ack', lease: a },
      ]);
      expect(results.map((r) => (r.ok ? 'ok' : r.error.code))).toEqual(['ok', 'ok', 'ok', 'stale_lease', 'ok', 'stale_lease']);

      expect((await ctx.rheo.deadLetters(stream, 'g')).map((x) => [x.eventId, x.reason])).toEqual([[c.event.id, 'bad']]);
      const again = await drain(ctx, stream, 'g');
      expect(again.map((l) => [l.event.id, l.attempt])).toEqual([[b.event.id, 2]]);
      // The stale ack did not settle the new holder's delivery.
      expect((await ctx.rheo.groupInfo(stream, 'g')).inflight).toBe(2);
      const last = await ctx.rheo.settleMany([
        { kind: 'ack', lease: again[0] },
        { kind: 'ack', lease: d2 },
      ]);
      expect(last.every((r) => r.ok)).toBe(true);
      expect((await ctx.rheo.lag(stream, 'g')).lag).toBe(0);
    });

    it('returns an empty result for an empty bulk', async () => {
      expect(await ctx.rheo.settleMany([])).toEqual([]);
      expect(await ctx.rheo.renewMany([])).toEqual([]);
    });
  });
}
