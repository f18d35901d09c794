import type { Lease } from '../../core/types';
import { ConformanceContext, events, LEASE_MS, newStream, positions } from '../context';

export function orderingCases(ctx: ConformanceContext): void {
  const P = ctx.caps.guarantees.partitions ? 2 : 1;

  describe("ordering: 'partition'", () => {
    async function setup(perPartition: number): Promise<string> {
      const stream = await newStream(ctx, P);
      await ctx.rheo.appendBatch(stream, events(perPartition * P, P));
      await ctx.rheo.createGroup(stream, 'g', { ordering: 'partition', maxAttempts: 100, retry: { initialMs: 0, maxMs: 0 } });
      return stream;
    }

    const fetchAll = (stream: string, leaseMs = LEASE_MS) => ctx.rheo.fetch(stream, 'g', { limit: 100, leaseMs });

    it('holds at most one lease per partition while the other partitions proceed', async () => {
      const stream = await setup(3);
      const first = await fetchAll(stream);
      expect(positions(first).sort()).toEqual(P > 1 ? ['0:1', '1:1'] : ['0:1']);
      expect(await fetchAll(stream)).toEqual([]);
      const p0 = first.find((l) => l.event.partition === 0)!;
      await ctx.rheo.ack(p0);
      expect(positions(await fetchAll(stream))).toEqual(['0:2']);
      expect(await fetchAll(stream)).toEqual([]);
      expect(await ctx.rheo.groupInfo(stream, 'g')).toMatchObject({ inflight: P });
    });

    it('redelivers an expired lease before any later event of its partition', async () => {
      const stream = await setup(3);
      const [lease] = (await fetchAll(stream, 1000)).filter((l) => l.event.partition === 0);
      ctx.clock.advance(1001);
      const next = (await fetchAll(stream, 1000)).filter((l) => l.event.partition === 0);
      expect(next.map((l) => [l.event.sequence, l.attempt])).toEqual([[1, 2]]);
      expect(next[0].leaseId).not.toBe(lease.leaseId);
    });

    it('makes later events of a partition wait out a nack delay', async () => {
      const stream = await setup(3);
      const first = await fetchAll(stream);
      const p0 = first.find((l) => l.event.partition === 0)!;
      await ctx.rheo.nack(p0, { delayMs: 5000 });
      const during = await fetchAll(stream);
      expect(during.filter((l) => l.event.partition === 0)).toEqual([]);
      // Other partitions keep going.
      for (const l of first.filter((x) => x.event.partition !== 0)) await ctx.rheo.ack(l);
      const others = await fetchAll(stream);
      expect(others.every((l) => l.event.partition !== 0)).toBe(true);
      expect(others).toHaveLength(P - 1);
      ctx.clock.advance(5001);
      const after = (await fetchAll(stream)).filter((l) => l.event.partition === 0);
      expect(after.map((l) => [l.event.sequence, l.attempt])).toEqual([[1, 2]]);
    });

    if (ctx.caps.guarantees.replay) {
      it('keeps one lease per partition when a replay re-opens an earlier event under a live lease', async () => {
        const stream = await setup(3);
        for (let i = 0; i < 2; i++) {
          const got = (await fetchAll(stream)).filter((l) => l.event.partition === 0);
          await ctx.rheo.ack(got[0]);
        }
        const [third] = (await fetchAll(stream)).filter((l) => l.event.partition === 0);
        expect(third.event.sequence).toBe(3);
        expect(await ctx.rheo.replay(stream, 'g', { query: { where: { partition: 0 }, untilSequence: 1 } })).toBe(1);
        expect((await fetchAll(stream)).filter((l) => l.event.partition === 0)).toEqual([]);
        await ctx.rheo.ack(third);
        expect(positions((await fetchAll(stream)).filter((l) => l.event.partition === 0))).toEqual(['0:1']);
      });
    }

    it('delivers each partition strictly in order under random settles and expiries, every event acked once in the end', async () => {
      const stream = await setup(6);
      const acked: string[][] = Array.from({ length: P }, () => []);
      let step = 0;
      for (let guard = 0; guard < 500 && acked.flat().length < 6 * P; guard++) {
        const got: Lease[] = await fetchAll(stream, 1000);
        const perPartition = new Map<number, number>();
        for (const l of got) perPartition.set(l.event.partition, (perPartition.get(l.event.partition) ?? 0) + 1);
        for (const n of perPartition.values()) expect(n).toBe(1);
        for (const l of got) {
          // The offered event is always the one after the last acked of its partition.
          expect(l.event.sequence).toBe(acked[l.event.partition].length + 1);
          switch (step++ % 4) {
            case 0:
            case 3:
              await ctx.rheo.ack(l);
              acked[l.event.partition].push(l.event.id);
              break;
            case 1:
              await ctx.rheo.nack(l, { delayMs: 10 });
              break;
            default:
              break; // left to expire
          }
        }
        ctx.clock.advance(1001);
      }
      expect(acked.flat()).toHaveLength(6 * P);
      expect((await ctx.rheo.lag(stream, 'g')).lag).toBe(0);
    });
  });
}
