import type { Lease, RheoEvent } from '../../core/types';
import { MAX_BATCH } from '../../core/limits';
import { ConformanceContext, drain, events, LEASE_MS, newStream } from '../context';

/**
 * Concurrency: what a multi-process deployment does to a backend. On the memory
 * backend these calls interleave at every await; on a database they race for real.
 */
export function raceCases(ctx: ConformanceContext): void {
  const multi = ctx.caps.guarantees.partitions;

  describe('races', () => {
    it('keeps sequences contiguous and readers gap-free under concurrent appends, and consumers miss nothing', async () => {
      const P = multi ? 2 : 1;
      const stream = await newStream(ctx, P);
      await ctx.rheo.createGroup(stream, 'g');
      const writers = 6;
      const perWriter = 15;
      let writing = true;
      const delivered: Lease[] = [];

      const write = Promise.all(
        Array.from({ length: writers }, async (_, w) => {
          for (let i = 0; i < perWriter; i++) {
            if (i % 3 === 0)
              await ctx.rheo.appendBatch(
                stream,
                events(2, P, (j) => ({ id: `w${w}-${i}-b${j}` })),
              );
            else await ctx.rheo.append(stream, { id: `w${w}-${i}`, partition: (w + i) % P, payload: { w, i } });
          }
        }),
      ).finally(() => {
        writing = false;
      });
      // A reader never sees sequence n+1 without n.
      const read = (async () => {
        while (writing) {
          for (let p = 0; p < P; p++) {
            const seen = await ctx.rheo.read(stream, { partition: p, limit: 1000 });
            seen.forEach((e, i) => expect(e.sequence).toBe(i + 1));
          }
        }
      })();
      // Consumers fetching while events commit must not skip any of them.
      const consume = Promise.all(
        Array.from({ length: 3 }, async () => {
          while (writing) delivered.push(...(await ctx.rheo.fetch(stream, 'g', { limit: 5, leaseMs: LEASE_MS })));
        }),
      );
      await Promise.all([write, read, consume]);
      delivered.push(...(await drain(ctx, stream, 'g')));

      const total = writers * (perWriter + Math.ceil(perWriter / 3));
      const all: RheoEvent[] = [];
      for (let p = 0; p < P; p++) all.push(...(await ctx.rheo.read(stream, { partition: p, limit: 1000 })));
      expect(all).toHaveLength(total);
      for (let p = 0; p < P; p++) {
        const seqs = all.filter((e) => e.partition === p).map((e) => e.sequence);
        expect(seqs).toEqual(seqs.map((_, i) => i + 1));
      }
      const ids = delivered.map((l) => l.event.id);
      expect(new Set(ids).size).toBe(ids.length);
      expect(ids.length).toBe(total);
    });

    it('stores one event when the same id is appended concurrently', async () => {
      const stream = await newStream(ctx);
      const results = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          i % 2
            ? ctx.rheo.append(stream, { id: 'dup', payload: i })
            : ctx.rheo.appendBatch(stream, [{ id: 'dup', payload: i }]).then(([e]) => e),
        ),
      );
      expect(new Set(results.map((e) => e.sequence))).toEqual(new Set([1]));
      expect(new Set(results.map((e) => JSON.stringify(e.payload))).size).toBe(1);
      expect(await ctx.rheo.read(stream)).toHaveLength(1);
    });

    it('lets exactly one of many concurrent settles of a lease win', async () => {
      const stream = await newStream(ctx);
      await ctx.rheo.appendBatch(stream, events(1));
      await ctx.rheo.createGroup(stream, 'g');
      const [lease] = await ctx.rheo.fetch(stream, 'g', { leaseMs: LEASE_MS });
      const attempts = [
        ctx.rheo.ack(lease),
        ctx.rheo.ack(lease),
        ctx.rheo.reject(lease, { reason: 'r' }),
        ctx.rheo.nack(lease, { delayMs: 0 }),
        ctx.rheo.ack(lease),
        ctx.rheo.reject(lease, { reason: 'r' }),
      ];
      const outcomes = await Promise.allSettled(attempts);
      expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
      for (const o of outcomes) if (o.status === 'rejected') expect(o.reason).toMatchObject({ code: 'stale_lease' });
    });

    it('gives an expired event to exactly one of many concurrent fetchers', async () => {
      const stream = await newStream(ctx);
      await ctx.rheo.appendBatch(stream, events(1));
      await ctx.rheo.createGroup(stream, 'g');
      const [first] = await ctx.rheo.fetch(stream, 'g', { leaseMs: 1000 });
      ctx.clock.advance(1001);
      const got = (await Promise.all(Array.from({ length: 8 }, () => ctx.rheo.fetch(stream, 'g', { leaseMs: LEASE_MS })))).flat();
      expect(got).toHaveLength(1);
      expect(got[0]).toMatchObject({ attempt: 2, event: first.event });
      await expect(ctx.rheo.ack(first)).rejects.toMatchObject({ code: 'stale_lease' });
      await ctx.rheo.ack(got[0]);
    });

    it('handles the largest batches: MAX_BATCH appended, fetched by 1000, settled in one call', async () => {
      const stream = await newStream(ctx);
      const stored = await ctx.rheo.appendBatch(
        stream,
        Array.from({ length: MAX_BATCH }, (_, i) => ({ payload: i })),
      );
      expect(stored[MAX_BATCH - 1].sequence).toBe(MAX_BATCH);
      await ctx.rheo.createGroup(stream, 'g');
      const leases: Lease[] = [];
      for (;;) {
        const got = await ctx.rheo.fetch(stream, 'g', { limit: 1000, leaseMs: 600_000 });
        if (got.length === 0) break;
        leases.push(...got);
      }
      expect(leases).toHaveLength(MAX_BATCH);
      const results = await ctx.rheo.settleMany(leases.map((lease) => ({ kind: 'ack' as const, lease })));
      expect(results.every((r) => r.ok)).toBe(true);
      expect((await ctx.rheo.lag(stream, 'g')).lag).toBe(0);
    }, 120_000);
  });
}
