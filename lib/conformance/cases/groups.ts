import type { Lease } from '../../core/types';
import { ConformanceContext, drain, events, LEASE_MS, newStream, positions } from '../context';

export function groupCases(ctx: ConformanceContext): void {
  const multi = ctx.caps.guarantees.partitions;

  describe('consumer groups', () => {
    it('delivers every event to every group; an ack in one group changes nothing in another', async () => {
      const stream = await newStream(ctx);
      await ctx.rheo.appendBatch(stream, events(3));
      await ctx.rheo.createGroup(stream, 'a');
      await ctx.rheo.createGroup(stream, 'b');
      const a = await ctx.rheo.fetch(stream, 'a', { leaseMs: LEASE_MS });
      expect(positions(a)).toEqual(['0:1', '0:2', '0:3']);
      const before = await ctx.rheo.groupInfo(stream, 'b');
      for (const l of a) await ctx.rheo.ack(l);
      expect((await ctx.rheo.lag(stream, 'a')).lag).toBe(0);
      expect(await ctx.rheo.groupInfo(stream, 'b')).toEqual(before);
      const b = await ctx.rheo.fetch(stream, 'b', { leaseMs: LEASE_MS });
      expect(b.map((l) => l.event)).toEqual(a.map((l) => l.event));
      expect(b.every((l) => l.attempt === 1 && l.group === 'b')).toBe(true);
    });

    it('issues well-formed leases', async () => {
      const stream = await newStream(ctx);
      const [event] = await ctx.rheo.appendBatch(stream, events(1));
      await ctx.rheo.createGroup(stream, 'g');
      const [lease] = await ctx.rheo.fetch(stream, 'g', { leaseMs: 5000, consumerId: 'worker-1' });
      expect(lease).toMatchObject({ stream, group: 'g', consumerId: 'worker-1', attempt: 1, event });
      expect(typeof lease.leaseId).toBe('string');
      expect(lease.leaseId.length).toBeGreaterThan(0);
      expect(typeof lease.receipt).toBe('string');
      expect(lease.receipt.length).toBeGreaterThan(0);
      expect(lease.leasedAt.getTime()).toBe(ctx.clock.now());
      expect(lease.expiresAt.getTime()).toBe(ctx.clock.now() + 5000);
      expect(await ctx.rheo.fetch(stream, 'g')).toEqual([]);
    });

    it('respects the fetch limit', async () => {
      const stream = await newStream(ctx);
      await ctx.rheo.appendBatch(stream, events(5));
      await ctx.rheo.createGroup(stream, 'g');
      const sizes: number[] = [];
      for (let i = 0; i < 4; i++) sizes.push((await ctx.rheo.fetch(stream, 'g', { limit: 2 })).length);
      expect(sizes).toEqual([2, 2, 1, 0]);
    });

    it('offers leases in sequence order within a partition', async () => {
      const stream = await newStream(ctx);
      await ctx.rheo.appendBatch(stream, events(6));
      await ctx.rheo.createGroup(stream, 'g');
      const got = await drain(ctx, stream, 'g', LEASE_MS, 2);
      expect(positions(got)).toEqual(['0:1', '0:2', '0:3', '0:4', '0:5', '0:6']);
    });

    it('lets 8 concurrent fetchers share a group: no event held twice, every event once, before any ack', async () => {
      const P = multi ? 3 : 1;
      const stream = await newStream(ctx, P);
      const N = 120;
      for (let i = 0; i < N; i += 40)
        await ctx.rheo.appendBatch(
          stream,
          events(40, P, (j) => ({ id: `e${i + j}` })),
        );
      await ctx.rheo.createGroup(stream, 'g');
      const held: Lease[][] = await Promise.all(
        Array.from({ length: 8 }, async (_, w) => {
          const mine: Lease[] = [];
          for (;;) {
            const got = await ctx.rheo.fetch(stream, 'g', { limit: 1 + (w % 4), leaseMs: LEASE_MS, consumerId: `w${w}` });
            if (got.length === 0) return mine;
            expect(got.every((l) => l.consumerId === `w${w}`)).toBe(true);
            mine.push(...got);
          }
        }),
      );
      const ids = held.flat().map((l) => l.event.id);
      expect(ids).toHaveLength(N);
      expect(new Set(ids).size).toBe(N);
      expect(new Set(held.flat().map((l) => l.leaseId)).size).toBe(N);
      expect((await ctx.rheo.groupInfo(stream, 'g')).inflight).toBe(N);
      for (const l of held.flat()) await ctx.rheo.ack(l);
      expect((await ctx.rheo.lag(stream, 'g')).lag).toBe(0);
    });

    if (multi) {
      it('interleaves partitions in one fetch: no partition starves', async () => {
        const P = 4;
        const stream = await newStream(ctx, P);
        // Partition 0 is far ahead of the others.
        await ctx.rheo.appendBatch(stream, events(40, 1));
        await ctx.rheo.appendBatch(
          stream,
          [1, 2, 3].flatMap((p) => events(3, 1, () => ({ partition: p }))),
        );
        await ctx.rheo.createGroup(stream, 'g');
        const got = await ctx.rheo.fetch(stream, 'g', { limit: 2 * P });
        expect(got).toHaveLength(2 * P);
        expect(new Set(got.map((l) => l.event.partition))).toEqual(new Set([0, 1, 2, 3]));
        for (let p = 0; p < P; p++) {
          const seqs = got.filter((l) => l.event.partition === p).map((l) => l.event.sequence);
          expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
          expect(seqs[0]).toBe(1);
        }
      });

      it('serves every partition across small fetches while one partition still has a backlog', async () => {
        const P = 4;
        const stream = await newStream(ctx, P);
        await ctx.rheo.appendBatch(stream, events(40, 1));
        await ctx.rheo.appendBatch(
          stream,
          [1, 2, 3].flatMap((p) => events(3, 1, () => ({ partition: p }))),
        );
        await ctx.rheo.createGroup(stream, 'g');
        const served = new Set<number>();
        for (let i = 0; i < 2 * P; i++) {
          const got = await ctx.rheo.fetch(stream, 'g', { limit: 1, leaseMs: LEASE_MS });
          expect(got).toHaveLength(1);
          served.add(got[0].event.partition);
          if (i % 2 === 1) await ctx.rheo.ack(got[0]);
        }
        expect(served).toEqual(new Set([0, 1, 2, 3]));
      });

      it('fetches only the requested partitions', async () => {
        const stream = await newStream(ctx, 3);
        await ctx.rheo.appendBatch(stream, events(9, 3));
        await ctx.rheo.createGroup(stream, 'g');
        const got = await ctx.rheo.fetch(stream, 'g', { partitions: [1, 2], limit: 100 });
        expect(positions(got).sort()).toEqual(['1:1', '1:2', '1:3', '2:1', '2:2', '2:3']);
        expect(positions(await ctx.rheo.fetch(stream, 'g', { limit: 100 })).sort()).toEqual(['0:1', '0:2', '0:3']);
      });
    }

    describe('start positions', () => {
      const P = multi ? 2 : 1;
      let stream: string;
      let tMid: number;

      beforeAll(async () => {
        stream = await newStream(ctx, P);
        // Partition 0: sequences 1..3, partition 1: 1..2 (when there are two). The last ones are later in time.
        await ctx.rheo.appendBatch(stream, [{ partition: 0, payload: 'p0s1' }, ...(P > 1 ? [{ partition: 1, payload: 'p1s1' }] : [])]);
        ctx.clock.advance(1000);
        tMid = ctx.clock.now();
        await ctx.rheo.appendBatch(stream, [
          { partition: 0, payload: 'p0s2' },
          { partition: 0, payload: 'p0s3' },
          ...(P > 1 ? [{ partition: 1, payload: 'p1s2' }] : []),
        ]);
        ctx.clock.advance(1000);
      });

      const payloads = async (group: string) => (await drain(ctx, stream, group)).map((l) => l.event.payload).sort();

      it('beginning (the default) delivers everything', async () => {
        await ctx.rheo.createGroup(stream, 'default');
        await ctx.rheo.createGroup(stream, 'beginning', { start: 'beginning' });
        const all = P > 1 ? ['p0s1', 'p0s2', 'p0s3', 'p1s1', 'p1s2'] : ['p0s1', 'p0s2', 'p0s3'];
        expect(await payloads('default')).toEqual(all);
        expect(await payloads('beginning')).toEqual(all);
      });

      it('end delivers only what is appended later, with no lag', async () => {
        const s = await newStream(ctx, P);
        await ctx.rheo.appendBatch(s, events(4, P));
        await ctx.rheo.createGroup(s, 'end', { start: 'end' });
        expect((await ctx.rheo.lag(s, 'end')).lag).toBe(0);
        expect(await ctx.rheo.fetch(s, 'end')).toEqual([]);
        await ctx.rheo.append(s, { partition: 0, payload: 'new' });
        expect((await ctx.rheo.lag(s, 'end')).lag).toBe(1);
        expect((await drain(ctx, s, 'end')).map((l) => l.event.payload)).toEqual(['new']);
      });

      it('afterSequence as a number applies to every partition', async () => {
        await ctx.rheo.createGroup(stream, 'after2', { start: { afterSequence: 2 } });
        expect(await payloads('after2')).toEqual(['p0s3']);
        expect((await ctx.rheo.lag(stream, 'after2')).partitions.map((p) => p.frontier)).toEqual(P > 1 ? [2, 2] : [2]);
      });

      if (multi) {
        it('afterSequence as a per-partition map (missing partitions start at the beginning)', async () => {
          await ctx.rheo.createGroup(stream, 'map', { start: { afterSequence: { 0: 1 } } });
          expect(await payloads('map')).toEqual(['p0s2', 'p0s3', 'p1s1', 'p1s2']);
          await ctx.rheo.createGroup(stream, 'map2', { start: { afterSequence: { 0: 3, 1: 1 } } });
          expect(await payloads('map2')).toEqual(['p1s2']);
        });
      }

      it('at a time delivers the events at or after it', async () => {
        await ctx.rheo.createGroup(stream, 'at', { start: { at: new Date(tMid) } });
        expect(await payloads('at')).toEqual(P > 1 ? ['p0s2', 'p0s3', 'p1s2'] : ['p0s2', 'p0s3']);
        await ctx.rheo.createGroup(stream, 'future', { start: { at: new Date(ctx.clock.now() + 60_000) } });
        expect(await payloads('future')).toEqual([]);
      });
    });
  });
}
