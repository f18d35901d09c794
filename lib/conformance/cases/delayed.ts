import { MAX_DELAY_MS } from '../../core/limits';
import { Rheo } from '../../core/rheo';
import type { AppendInput, Lease } from '../../core/types';
import { ConformanceContext, drain, expectCode, frontiers, highWatermarks, LEASE_MS, newStream, positions } from '../context';

/**
 * Delayed events (`deliverAt` / `delayMs`, docs/adr/028-delayed-events.md): no
 * group is offered one before its time by the backend's clock, and it keeps its
 * sequence (lag counts it, an ordered partition waits for it, the frontier stays
 * below it until it is settled). Every case moves the suite's clock; nothing sleeps.
 */
export function delayedCases(ctx: ConformanceContext): void {
  const P = ctx.caps.guarantees.partitions ? 2 : 1;
  const fetchAll = (stream: string, group = 'g', limit = 100) => ctx.rheo.fetch(stream, group, { limit, leaseMs: LEASE_MS });
  const at = (ms: number) => new Date(ctx.clock.now() + ms);
  const sequencesOf = (leases: Lease[]) => leases.map((l) => l.event.sequence);

  describe('delayed events', () => {
    it('offers an event with deliverAt at that time, not before, and shows deliverAt wherever the event is read', async () => {
      const stream = await newStream(ctx);
      await ctx.rheo.createGroup(stream, 'g');
      const when = at(5000);
      const stored = await ctx.rheo.append(stream, { type: 't', payload: { n: 1 }, deliverAt: when });
      expect(stored).toMatchObject({ sequence: 1, deliverAt: when });
      expect(await fetchAll(stream)).toEqual([]);
      ctx.clock.advance(4999);
      expect(await fetchAll(stream)).toEqual([]);
      ctx.clock.advance(1);
      const [lease] = await fetchAll(stream);
      expect(lease).toMatchObject({ attempt: 1, event: { id: stored.id, sequence: 1, deliverAt: when } });
      expect((await ctx.rheo.read(stream))[0].deliverAt).toEqual(when);
      expect((await ctx.rheo.query({ stream }))[0].deliverAt).toEqual(when);
      await ctx.rheo.ack(lease);
      expect((await ctx.rheo.lag(stream, 'g')).lag).toBe(0);
    });

    it('offers an event with delayMs that long after the append, by the backend clock', async () => {
      const stream = await newStream(ctx);
      await ctx.rheo.createGroup(stream, 'g');
      const appendedAt = ctx.clock.now();
      const stored = await ctx.rheo.append(stream, { payload: 1, delayMs: 3000 });
      expect(stored.deliverAt).toEqual(new Date(appendedAt + 3000));
      ctx.clock.advance(2999);
      expect(await fetchAll(stream)).toEqual([]);
      ctx.clock.advance(1);
      expect(sequencesOf(await fetchAll(stream))).toEqual([1]);
    });

    it('an event without a delay has no deliverAt; delayMs 0 and a deliverAt already past are offered at once', async () => {
      const stream = await newStream(ctx);
      await ctx.rheo.createGroup(stream, 'g');
      const plain = await ctx.rheo.append(stream, { payload: 0 });
      expect('deliverAt' in plain).toBe(false);
      await ctx.rheo.append(stream, { payload: 1, delayMs: 0 });
      await ctx.rheo.append(stream, { payload: 2, deliverAt: at(-60_000) });
      const got = await fetchAll(stream);
      expect(sequencesOf(got)).toEqual([1, 2, 3]);
      expect('deliverAt' in got[0].event).toBe(false);
      expect(got.map((l) => l.attempt)).toEqual([1, 1, 1]);
    });

    it('appendBatch with mixed delays: each event is offered at its own time, in its partition order', async () => {
      const stream = await newStream(ctx, P);
      await ctx.rheo.createGroup(stream, 'g');
      const batch: AppendInput[] = [
        { partition: 0, payload: 'now' },
        { partition: 0, payload: 'in 3s', delayMs: 3000 },
        { partition: P - 1, payload: 'in 1s', deliverAt: at(1000) },
        { partition: 0, payload: 'now too' },
        { partition: P - 1, payload: 'in 3s too', delayMs: 3000 },
      ];
      const stored = await ctx.rheo.appendBatch(stream, batch);
      expect(stored.map((e) => e.deliverAt?.getTime() ?? null)).toEqual([
        null,
        ctx.clock.now() + 3000,
        ctx.clock.now() + 1000,
        null,
        ctx.clock.now() + 3000,
      ]);
      const payloads = (leases: Lease[]) => leases.map((l) => l.event.payload).sort();
      const now = await fetchAll(stream);
      expect(payloads(now)).toEqual(['now', 'now too']);
      ctx.clock.advance(1000);
      expect(payloads(await fetchAll(stream))).toEqual(['in 1s']);
      ctx.clock.advance(1999);
      expect(await fetchAll(stream)).toEqual([]);
      ctx.clock.advance(1);
      expect(payloads(await fetchAll(stream))).toEqual(['in 3s', 'in 3s too']);
    });

    it('keeps its sequence: lag counts it, and the frontier stays below it until it is acked while later events flow', async () => {
      const stream = await newStream(ctx);
      await ctx.rheo.createGroup(stream, 'g');
      await ctx.rheo.append(stream, { payload: 1 });
      await ctx.rheo.append(stream, { payload: 2, delayMs: 10_000 });
      await ctx.rheo.append(stream, { payload: 3 });
      await ctx.rheo.append(stream, { payload: 4 });
      expect((await ctx.rheo.lag(stream, 'g')).lag).toBe(4);
      // An unordered group gets the later events meanwhile.
      const early = await fetchAll(stream);
      expect(sequencesOf(early)).toEqual([1, 3, 4]);
      for (const l of early) await ctx.rheo.ack(l);
      expect(await frontiers(ctx, stream, 'g')).toEqual([1]);
      expect((await ctx.rheo.lag(stream, 'g')).lag).toBe(3);
      expect(await ctx.rheo.groupInfo(stream, 'g')).toMatchObject({ inflight: 0, deadLetters: 0 });
      ctx.clock.advance(10_000);
      const [late] = await fetchAll(stream);
      expect([late.event.sequence, late.attempt]).toEqual([2, 1]);
      expect(await frontiers(ctx, stream, 'g')).toEqual([1]);
      await ctx.rheo.ack(late);
      expect(await frontiers(ctx, stream, 'g')).toEqual([4]);
      expect((await ctx.rheo.lag(stream, 'g')).lag).toBe(0);
    });

    it('counts attempts from 1 when first offered: a nack retries it as attempt 2, an expired lease comes back as attempt 2', async () => {
      const stream = await newStream(ctx);
      await ctx.rheo.createGroup(stream, 'g', { maxAttempts: 3 });
      await ctx.rheo.append(stream, { payload: 1, delayMs: 2000 });
      expect(await fetchAll(stream)).toEqual([]);
      ctx.clock.advance(2000);
      const [first] = await fetchAll(stream);
      expect(first.attempt).toBe(1);
      await ctx.rheo.nack(first, { delayMs: 0 });
      const [second] = await ctx.rheo.fetch(stream, 'g', { limit: 1, leaseMs: 1000 });
      expect(second.attempt).toBe(2);
      ctx.clock.advance(1000);
      const [third] = await fetchAll(stream);
      expect(third.attempt).toBe(3);
      // Released unhandled: back at once (never delayed again), with the same attempt.
      await ctx.rheo.releaseMany([third]);
      const [again] = await fetchAll(stream);
      expect(again.attempt).toBe(3);
    });

    if (ctx.caps.guarantees.orderedPartitions) {
      it("with ordering 'partition', the later events of its partition wait for it; other partitions flow", async () => {
        const stream = await newStream(ctx, P);
        await ctx.rheo.createGroup(stream, 'g', { ordering: 'partition' });
        await ctx.rheo.appendBatch(stream, [
          { partition: 0, payload: 'a1' },
          { partition: 0, payload: 'a2', delayMs: 5000 },
          { partition: 0, payload: 'a3' },
          ...(P > 1 ? [{ partition: 1, payload: 'b1' }] : []),
        ]);
        const first = await fetchAll(stream);
        expect(positions(first).sort()).toEqual(P > 1 ? ['0:1', '1:1'] : ['0:1']);
        for (const l of first) await ctx.rheo.ack(l);
        // a2 is the head of partition 0 and not due: a3 waits behind it.
        expect(await fetchAll(stream)).toEqual([]);
        ctx.clock.advance(4999);
        expect(await fetchAll(stream)).toEqual([]);
        expect((await ctx.rheo.lag(stream, 'g')).lag).toBe(2);
        ctx.clock.advance(1);
        const [a2] = await fetchAll(stream);
        expect([positions([a2]), a2.attempt]).toEqual([['0:2'], 1]);
        expect(await fetchAll(stream)).toEqual([]);
        await ctx.rheo.ack(a2);
        expect(positions(await fetchAll(stream))).toEqual(['0:3']);
      });
    }

    it('an unordered group passes a long run of delayed events: the event after them comes within a few fetches', async () => {
      const stream = await newStream(ctx);
      await ctx.rheo.createGroup(stream, 'g');
      const run: AppendInput[] = Array.from({ length: 40 }, (_, i) => ({ payload: i, delayMs: 60_000 }));
      await ctx.rheo.appendBatch(stream, [...run, { payload: 'plain' }]);
      let got: Lease[] = [];
      for (let i = 0; i < 10 && got.length === 0; i++) got = await fetchAll(stream, 'g', 2);
      expect(got.map((l) => [l.event.sequence, l.event.payload])).toEqual([[41, 'plain']]);
      await ctx.rheo.ack(got[0]);
      expect(await frontiers(ctx, stream, 'g')).toEqual([0]);
      ctx.clock.advance(60_000);
      const due = await drain(ctx, stream, 'g');
      expect(sequencesOf(due).sort((a, b) => a - b)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
      expect(due.every((l) => l.attempt === 1)).toBe(true);
    });

    it('racing fetches (and a second process, when durable) lease every event once, none before its time', async () => {
      const stream = await newStream(ctx, P);
      await ctx.rheo.createGroup(stream, 'g');
      const n = 60;
      await ctx.rheo.appendBatch(
        stream,
        Array.from({ length: n }, (_, i) => ({ partition: i % P, payload: i, ...(i % 3 === 1 ? { delayMs: 1000 + (i % 2) * 1000 } : {}) })),
      );
      const other = ctx.reopen ? new Rheo(await ctx.reopen()) : null;
      try {
        const fetchers = [ctx.rheo, ...(other ? [other] : [])];
        const seen = new Map<number, number>();
        const race = async () => {
          for (let round = 0; round < 20; round++) {
            const batches = await Promise.all(
              Array.from({ length: 6 }, (_, i) => fetchers[i % fetchers.length].fetch(stream, 'g', { limit: 3, leaseMs: 60_000 })),
            );
            const got = batches.flat();
            if (got.length === 0 && round > 0) return;
            for (const l of got) {
              const i = l.event.payload as number;
              expect(l.attempt).toBe(1);
              if (l.event.deliverAt) expect(l.event.deliverAt.getTime()).toBeLessThanOrEqual(ctx.clock.now());
              seen.set(i, (seen.get(i) ?? 0) + 1);
            }
          }
        };
        await race();
        expect([...seen.keys()].sort((a, b) => a - b)).toEqual(Array.from({ length: n }, (_, i) => i).filter((i) => i % 3 !== 1));
        ctx.clock.advance(1000);
        await race();
        ctx.clock.advance(1000);
        await race();
        expect(seen.size).toBe(n);
        expect([...seen.values()].every((times) => times === 1)).toBe(true);
      } finally {
        await other?.close();
      }
    });

    it("is not seen by a group created at 'end' after the append, and is by one created at 'beginning'", async () => {
      const stream = await newStream(ctx);
      await ctx.rheo.append(stream, { payload: 1, delayMs: 1000 });
      await ctx.rheo.createGroup(stream, 'late', { start: 'end' });
      await ctx.rheo.createGroup(stream, 'all', { start: 'beginning' });
      ctx.clock.advance(1000);
      expect(await fetchAll(stream, 'late')).toEqual([]);
      expect((await ctx.rheo.lag(stream, 'late')).lag).toBe(0);
      expect(sequencesOf(await fetchAll(stream, 'all'))).toEqual([1]);
    });

    it('counts its unsettled age from its deliverAt, not from its timestamp', async () => {
      const stream = await newStream(ctx);
      await ctx.rheo.createGroup(stream, 'g');
      await ctx.rheo.append(stream, { payload: 1, delayMs: 10_000 });
      expect(await fetchAll(stream)).toEqual([]);
      expect((await ctx.rheo.groupInfo(stream, 'g')).oldestUnsettledAgeMs).toBe(0);
      ctx.clock.advance(12_000);
      expect((await ctx.rheo.groupInfo(stream, 'g')).oldestUnsettledAgeMs).toBe(2000);
    });

    it('an idempotent append of a delayed event returns the stored event, deliverAt included', async () => {
      const stream = await newStream(ctx);
      const first = await ctx.rheo.append(stream, { id: 'delayed-1', payload: 1, delayMs: 5000 });
      const again = await ctx.rheo.append(stream, { id: 'delayed-1', payload: 1, delayMs: 9000 });
      expect(again).toEqual(first);
      const [batch] = await ctx.rheo.appendBatch(stream, [{ id: 'delayed-1', payload: 1 }]);
      expect(batch.deliverAt).toEqual(first.deliverAt);
      expect(await highWatermarks(ctx, stream)).toEqual([1]);
    });

    if (ctx.caps.guarantees.replay) {
      it('a replay never offers a delayed event before its time: by query (parked), by sequence, and after a reset', async () => {
        const stream = await newStream(ctx);
        await ctx.rheo.createGroup(stream, 'g');
        await ctx.rheo.append(stream, { type: 'late', payload: 1, delayMs: 5000 });
        await ctx.rheo.append(stream, { payload: 2 });
        const [plain] = await fetchAll(stream);
        expect(plain.event.sequence).toBe(2);
        await ctx.rheo.ack(plain);
        await ctx.rheo.replay(stream, 'g', { query: { where: { type: 'late' } } });
        expect(await fetchAll(stream)).toEqual([]);
        await ctx.rheo.replay(stream, 'g', { afterSequence: 0 });
        expect(sequencesOf(await fetchAll(stream))).toEqual([2]);
        await ctx.rheo.reset(stream, 'g', { confirm: true, start: 'beginning' });
        expect(sequencesOf(await fetchAll(stream))).toEqual([2]);
        ctx.clock.advance(5000);
        const [due] = await fetchAll(stream);
        expect([due.event.sequence, due.attempt]).toEqual([1, 1]);
        // Once offered, a replay re-opens it at once, as any other event.
        await ctx.rheo.ack(due);
        await ctx.rheo.replay(stream, 'g', { query: { where: { type: 'late' } } });
        expect(sequencesOf(await fetchAll(stream))).toEqual([1]);
      });
    }

    if (ctx.reopen) {
      const reopen = ctx.reopen;
      it('survives a restart of the backend: passed over or not yet reached, it is offered at its time by a new process', async () => {
        const stream = await newStream(ctx);
        await ctx.rheo.createGroup(stream, 'g');
        await ctx.rheo.appendBatch(stream, [
          { payload: 'parked', delayMs: 4000 },
          { payload: 'plain' },
          { payload: 'plain too' },
          { payload: 'unreached', delayMs: 4000 },
        ]);
        // The first is passed over (parked) by this fetch, which fills up before it reaches the last.
        const plain = await fetchAll(stream, 'g', 2);
        expect(plain.map((l) => l.event.payload)).toEqual(['plain', 'plain too']);
        for (const l of plain) await ctx.rheo.ack(l);
        const restarted = new Rheo(await reopen());
        try {
          await restarted.init();
          const fetchThere = () => restarted.fetch(stream, 'g', { limit: 10, leaseMs: LEASE_MS });
          expect(await fetchThere()).toEqual([]);
          ctx.clock.advance(3999);
          expect(await fetchThere()).toEqual([]);
          ctx.clock.advance(1);
          const due = await fetchThere();
          expect(due.map((l) => [l.event.payload, l.attempt, l.event.deliverAt?.getTime()]).sort()).toEqual([
            ['parked', 1, ctx.clock.now()],
            ['unreached', 1, ctx.clock.now()],
          ]);
          for (const l of due) await restarted.ack(l);
          expect((await restarted.lag(stream, 'g')).lag).toBe(0);
        } finally {
          await restarted.close();
        }
      });
    }

    it('refuses bad delays, naming the field, and writes nothing', async () => {
      const stream = await newStream(ctx);
      const bad: Array<[Record<string, unknown>, string]> = [
        [{ deliverAt: at(1000), delayMs: 1000 }, 'event.delayMs'],
        [{ delayMs: -1 }, 'event.delayMs'],
        [{ delayMs: 1.5 }, 'event.delayMs'],
        [{ delayMs: MAX_DELAY_MS + 1 }, 'event.delayMs'],
        [{ delayMs: '1000' }, 'event.delayMs'],
        [{ delayMs: null }, 'event.delayMs'],
        [{ deliverAt: new Date(NaN) }, 'event.deliverAt'],
        [{ deliverAt: at(1000).toISOString() }, 'event.deliverAt'],
        [{ deliverAt: null }, 'event.deliverAt'],
      ];
      for (const [extra, field] of bad) {
        await expectCode(ctx.rheo.append(stream, { payload: 1, ...extra } as AppendInput), 'invalid_argument', field);
      }
      await expectCode(
        ctx.rheo.appendBatch(stream, [
          { payload: 1, delayMs: 10 },
          { payload: 2, delayMs: -5 },
        ]),
        'invalid_argument',
        'events[1].delayMs',
      );
      expect(await highWatermarks(ctx, stream)).toEqual([0]);
      // The largest delay is accepted.
      expect((await ctx.rheo.append(stream, { payload: 1, delayMs: MAX_DELAY_MS })).deliverAt).toEqual(at(MAX_DELAY_MS));
    });
  });
}
