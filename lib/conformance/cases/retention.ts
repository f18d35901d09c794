import type { Lease } from '../../core/types';
import { ConformanceContext, drain, events, expectCode, frontiers, LEASE_MS, newStream } from '../context';

/** Fetch everything claimable and ack it: the group finishes what is there now. */
async function finish(ctx: ConformanceContext, stream: string, group: string): Promise<void> {
  for (const l of await drain(ctx, stream, group, LEASE_MS, 500)) await ctx.rheo.ack(l);
}

/** Ack exactly the first `n` events of partition 0 (fetching in order, one at a time). */
async function ackFirst(ctx: ConformanceContext, stream: string, group: string, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const [l] = await ctx.rheo.fetch(stream, group, { limit: 1, leaseMs: LEASE_MS });
    await ctx.rheo.ack(l);
  }
}

export function retentionCases(ctx: ConformanceContext): void {
  const P = ctx.caps.guarantees.partitions ? 3 : 1;

  describe('retention and trim', () => {
    it('stores a retention, shows it on the stream, changes it with setRetention and clears it with {}', async () => {
      const stream = ctx.name('s');
      const created = await ctx.rheo.createStream(stream, { partitions: 1, retention: { maxEvents: 100, maxAgeMs: 60_000 } });
      expect(created.retention).toEqual({ maxEvents: 100, maxAgeMs: 60_000 });
      expect((await ctx.rheo.backend.getStream(stream))?.retention).toEqual({ maxEvents: 100, maxAgeMs: 60_000 });

      const changed = await ctx.rheo.setRetention(stream, { deadLetterMaxAgeMs: 5000 });
      expect(changed.retention).toEqual({ deadLetterMaxAgeMs: 5000 });
      expect((await ctx.rheo.backend.getStream(stream))?.retention).toEqual({ deadLetterMaxAgeMs: 5000 });
      expect((await ctx.rheo.listStreams()).find((s) => s.name === stream)?.retention).toEqual({ deadLetterMaxAgeMs: 5000 });

      const cleared = await ctx.rheo.setRetention(stream, {});
      expect(cleared.retention).toBeUndefined();
      expect((await ctx.rheo.backend.getStream(stream))?.retention).toBeUndefined();
      // A stream created without one keeps everything.
      expect((await ctx.rheo.createStream(ctx.name('s'))).retention).toBeUndefined();
    });

    it('refuses a bad retention naming the field, and changes nothing', async () => {
      const stream = ctx.name('s');
      await expectCode(ctx.rheo.createStream(stream, { retention: { maxEvents: 0 } }), 'invalid_argument', 'retention.maxEvents');
      expect(await ctx.rheo.backend.getStream(stream)).toBeNull();
      await ctx.rheo.createStream(stream, { retention: { maxEvents: 10 } });
      await expectCode(ctx.rheo.setRetention(stream, { maxAge: 5 } as never), 'invalid_argument', 'retention.maxAge');
      await expectCode(ctx.rheo.setRetention(stream, { maxAgeMs: 1.5 }), 'invalid_argument', 'retention.maxAgeMs');
      await expectCode(ctx.rheo.setRetention(stream, null as never), 'invalid_argument', 'retention');
      await expectCode(ctx.rheo.trim(stream, { force: 'yes' } as never), 'invalid_argument', 'options.force');
      await expectCode(ctx.rheo.setRetention(ctx.name('missing'), {}), 'stream_not_found');
      await expectCode(ctx.rheo.trim(ctx.name('missing')), 'stream_not_found');
      expect((await ctx.rheo.backend.getStream(stream))?.retention).toEqual({ maxEvents: 10 });
    });

    it('keeps everything when the stream has no retention', async () => {
      const stream = await newStream(ctx, P);
      await ctx.rheo.appendBatch(stream, events(9, P));
      await ctx.rheo.createGroup(stream, 'g');
      await finish(ctx, stream, 'g');
      const result = await ctx.rheo.trim(stream);
      expect(result).toEqual({
        stream,
        removed: 0,
        partitions: Array.from({ length: P }, (_, partition) => ({ partition, trimmedTo: 0 })),
        skipped: { g: 0 },
      });
      expect(await ctx.rheo.query({ stream, limit: 1000 })).toHaveLength(9);
    });

    it('trims to maxEvents per partition once every group has finished; reads and queries start after the trim point', async () => {
      const stream = await newStream(ctx);
      const evs = await ctx.rheo.appendBatch(stream, events(10));
      await ctx.rheo.createGroup(stream, 'g');
      await finish(ctx, stream, 'g');
      await ctx.rheo.setRetention(stream, { maxEvents: 4 });

      const result = await ctx.rheo.trim(stream);
      expect(result).toEqual({ stream, removed: 6, partitions: [{ partition: 0, trimmedTo: 6 }], skipped: { g: 0 } });
      expect((await ctx.rheo.read(stream)).map((e) => e.sequence)).toEqual([7, 8, 9, 10]);
      expect((await ctx.rheo.read(stream, { afterSequence: 2 })).map((e) => e.sequence)).toEqual([7, 8, 9, 10]);
      expect((await ctx.rheo.query({ stream })).map((e) => e.id)).toEqual(evs.slice(6).map((e) => e.id));
      expect((await ctx.rheo.query({ stream, order: 'desc' })).map((e) => e.id)).toEqual(
        evs
          .slice(6)
          .map((e) => e.id)
          .reverse(),
      );
      // Nothing more to do: a second trim removes nothing and keeps the point.
      expect(await ctx.rheo.trim(stream)).toEqual({ ...result, removed: 0 });
      // Appends carry on after the high watermark; the lag of a finished group is 0.
      const [next] = await ctx.rheo.appendBatch(stream, events(1));
      expect(next.sequence).toBe(11);
      expect((await ctx.rheo.lag(stream, 'g')).lag).toBe(1);
    });

    it('never trims an event some group has not finished, whatever the retention says', async () => {
      const stream = await newStream(ctx);
      await ctx.rheo.appendBatch(stream, events(10));
      await ctx.rheo.createGroup(stream, 'fast');
      await ctx.rheo.createGroup(stream, 'slow');
      await finish(ctx, stream, 'fast');
      await ackFirst(ctx, stream, 'slow', 3);
      // slow holds a lease on 4: leased is not finished.
      const [held] = await ctx.rheo.fetch(stream, 'slow', { limit: 1, leaseMs: LEASE_MS });
      expect(held.event.sequence).toBe(4);
      await ctx.rheo.setRetention(stream, { maxEvents: 2 });

      const result = await ctx.rheo.trim(stream);
      expect(result).toEqual({ stream, removed: 3, partitions: [{ partition: 0, trimmedTo: 3 }], skipped: { fast: 0, slow: 0 } });
      // The lease is untouched and settles; the group carries on in order.
      await ctx.rheo.ack(held);
      const rest = await drain(ctx, stream, 'slow');
      expect(rest.map((l) => l.event.sequence)).toEqual([5, 6, 7, 8, 9, 10]);
      for (const l of rest) await ctx.rheo.ack(l);
      expect((await ctx.rheo.trim(stream)).partitions).toEqual([{ partition: 0, trimmedTo: 8 }]);
    });

    it('trims dead-lettered events (they are finished): the dead letter stays, with no event, and redrive skips it', async () => {
      const stream = await newStream(ctx);
      const evs = await ctx.rheo.appendBatch(stream, events(6));
      await ctx.rheo.createGroup(stream, 'g');
      const leases = await ctx.rheo.fetch(stream, 'g', { limit: 6, leaseMs: LEASE_MS });
      await ctx.rheo.reject(leases[1], { reason: 'poison' }); // event 2
      await ctx.rheo.reject(leases[4], { reason: 'late poison' }); // event 5
      for (const l of leases.filter((_, i) => i !== 1 && i !== 4)) await ctx.rheo.ack(l);
      await ctx.rheo.setRetention(stream, { maxEvents: 3 });

      expect((await ctx.rheo.trim(stream)).partitions).toEqual([{ partition: 0, trimmedTo: 3 }]);
      const dead = await ctx.rheo.deadLetters(stream, 'g');
      expect(dead.map((d) => [d.eventId, d.sequence, d.reason, d.event?.id ?? null])).toEqual([
        [evs[1].id, 2, 'poison', null],
        [evs[4].id, 5, 'late poison', evs[4].id],
      ]);
      expect(await ctx.rheo.redrive(stream, 'g', { all: true })).toBe(1);
      expect((await ctx.rheo.deadLetters(stream, 'g')).map((d) => d.sequence)).toEqual([2]);
      const again = await ctx.rheo.fetch(stream, 'g', { leaseMs: LEASE_MS });
      expect(again.map((l) => l.event.sequence)).toEqual([5]);
      await ctx.rheo.ack(again[0]);
      expect(await ctx.rheo.fetch(stream, 'g')).toEqual([]);
      expect((await ctx.rheo.lag(stream, 'g')).lag).toBe(0);
    });

    it('forced, moves lagging groups to the trim point and reports what each skipped; their old leases go stale', async () => {
      const stream = await newStream(ctx);
      await ctx.rheo.appendBatch(stream, events(10));
      await ctx.rheo.createGroup(stream, 'done');
      await ctx.rheo.createGroup(stream, 'behind');
      await finish(ctx, stream, 'done');
      await ackFirst(ctx, stream, 'behind', 3);
      // behind: 4 leased, 5 dead-lettered (finished), 6 leased then nacked (waiting to retry), 7.. never offered.
      const [four, five, six] = await ctx.rheo.fetch(stream, 'behind', { limit: 3, leaseMs: LEASE_MS });
      await ctx.rheo.reject(five, { reason: 'dead' });
      await ctx.rheo.nack(six, { delayMs: 60_000 });
      await ctx.rheo.setRetention(stream, { maxEvents: 3 });

      expect((await ctx.rheo.trim(stream)).partitions).toEqual([{ partition: 0, trimmedTo: 3 }]);
      const forced = await ctx.rheo.trim(stream, { force: true });
      // Skipped by behind: 4 (leased), 6 (waiting), 7 (never offered); 5 was dead, so finished.
      expect(forced).toEqual({ stream, removed: 4, partitions: [{ partition: 0, trimmedTo: 7 }], skipped: { done: 0, behind: 3 } });
      await expectCode(ctx.rheo.ack(four), 'stale_lease');
      expect(await frontiers(ctx, stream, 'behind')).toEqual([7]);
      const rest = await drain(ctx, stream, 'behind');
      expect(rest.map((l) => l.event.sequence)).toEqual([8, 9, 10]);
      for (const l of rest) await ctx.rheo.ack(l);
      expect((await ctx.rheo.lag(stream, 'behind')).lag).toBe(0);
      // The dead letter of 5 is still listed, without its event.
      expect((await ctx.rheo.deadLetters(stream, 'behind')).map((d) => [d.sequence, d.event])).toEqual([[5, null]]);
    });

    it('trims by maxAgeMs: the events before the first one stamped inside the age go', async () => {
      const stream = await newStream(ctx);
      const t0 = ctx.clock.now();
      for (let i = 0; i < 5; i++) {
        await ctx.rheo.append(stream, { payload: { i }, timestamp: new Date(t0 + i * 1000) });
      }
      await ctx.rheo.createGroup(stream, 'g');
      await finish(ctx, stream, 'g');
      ctx.clock.set(t0 + 4000);
      // Cut-off t0 + 1500: events stamped t0 and t0 + 1000 go.
      await ctx.rheo.setRetention(stream, { maxAgeMs: 2500 });
      expect((await ctx.rheo.trim(stream)).partitions).toEqual([{ partition: 0, trimmedTo: 2 }]);
      // Both limits: whichever lets more go wins.
      await ctx.rheo.setRetention(stream, { maxAgeMs: 2500, maxEvents: 1 });
      expect((await ctx.rheo.trim(stream)).partitions).toEqual([{ partition: 0, trimmedTo: 4 }]);
      ctx.clock.set(t0 + 100_000);
      await ctx.rheo.setRetention(stream, { maxAgeMs: 2500, maxEvents: 3 });
      expect((await ctx.rheo.trim(stream)).partitions).toEqual([{ partition: 0, trimmedTo: 5 }]);
      expect(await ctx.rheo.read(stream)).toEqual([]);
    });

    it('trims each partition to its own point', async () => {
      const stream = await newStream(ctx, P);
      await ctx.rheo.appendBatch(stream, events(6 * P, P));
      // Partition 0 gets 4 more.
      await ctx.rheo.appendBatch(stream, events(4, 1));
      await ctx.rheo.createGroup(stream, 'g');
      await finish(ctx, stream, 'g');
      await ctx.rheo.setRetention(stream, { maxEvents: 5 });
      const result = await ctx.rheo.trim(stream);
      const expected = Array.from({ length: P }, (_, partition) => ({ partition, trimmedTo: partition === 0 ? 5 : 1 }));
      expect(result.partitions).toEqual(expected);
      expect(result.removed).toBe(5 + (P - 1));
      const left = await ctx.rheo.query({ stream, limit: 1000 });
      expect(left).toHaveLength(5 * P);
    });

    it('starts groups, replays and resets after the trim point; lag counts only what is left', async () => {
      const stream = await newStream(ctx);
      await ctx.rheo.appendBatch(stream, events(10));
      await ctx.rheo.createGroup(stream, 'g');
      await finish(ctx, stream, 'g');
      await ctx.rheo.setRetention(stream, { maxEvents: 4 });
      await ctx.rheo.trim(stream);

      await ctx.rheo.createGroup(stream, 'late', { start: 'beginning' });
      const lag = await ctx.rheo.lag(stream, 'late');
      expect([lag.partitions[0].frontier, lag.lag]).toEqual([6, 4]);
      expect((await drain(ctx, stream, 'late')).map((l) => l.event.sequence)).toEqual([7, 8, 9, 10]);

      await ctx.rheo.createGroup(stream, 'mid', { start: { afterSequence: 2 } });
      expect((await ctx.rheo.lag(stream, 'mid')).lag).toBe(4);
      expect((await drain(ctx, stream, 'mid')).map((l) => l.event.sequence)).toEqual([7, 8, 9, 10]);

      if (ctx.caps.guarantees.replay) {
        expect(await ctx.rheo.replay(stream, 'g', { afterSequence: 0 })).toBe(4);
        expect((await drain(ctx, stream, 'g')).map((l) => l.event.sequence)).toEqual([7, 8, 9, 10]);
        await ctx.rheo.reset(stream, 'g', { confirm: true, start: 'beginning' });
        expect((await ctx.rheo.lag(stream, 'g')).lag).toBe(4);
        const again = await drain(ctx, stream, 'g');
        expect(again.map((l) => l.event.sequence)).toEqual([7, 8, 9, 10]);
        for (const l of again) await ctx.rheo.ack(l);
        expect((await ctx.rheo.lag(stream, 'g')).lag).toBe(0);
      }
    });

    it('lets a trimmed id be appended again as a new event (the idempotency window is the retention)', async () => {
      const stream = await newStream(ctx);
      const first = await ctx.rheo.append(stream, { id: 'order-1', payload: { v: 1 } });
      expect((await ctx.rheo.append(stream, { id: 'order-1', payload: { v: 2 } })).sequence).toBe(first.sequence);
      await ctx.rheo.appendBatch(stream, events(3));
      await ctx.rheo.setRetention(stream, { maxEvents: 1 });
      await ctx.rheo.trim(stream);
      const again = await ctx.rheo.append(stream, { id: 'order-1', payload: { v: 3 } });
      expect(again.sequence).toBe(5);
      expect(again.payload).toEqual({ v: 3 });
      expect((await ctx.rheo.append(stream, { id: 'order-1', payload: { v: 4 } })).sequence).toBe(5);
    });

    it('trims thousands of events in one call, and concurrent trims agree', async () => {
      const stream = await newStream(ctx, P);
      const n = 3000;
      for (let i = 0; i < n; i += 1000) await ctx.rheo.appendBatch(stream, events(1000, P));
      await ctx.rheo.createGroup(stream, 'g');
      await finish(ctx, stream, 'g');
      await ctx.rheo.setRetention(stream, { maxEvents: 10 });
      const [a, b] = await Promise.all([ctx.rheo.trim(stream), ctx.rheo.trim(stream)]);
      expect(a.removed + b.removed).toBe(n - 10 * P);
      expect(a.partitions).toEqual(b.partitions);
      expect(await ctx.rheo.query({ stream, limit: 1000 })).toHaveLength(10 * P);
    });

    it('keeps leases and settles of a live group correct while a trim runs', async () => {
      const stream = await newStream(ctx);
      await ctx.rheo.appendBatch(stream, events(1000));
      await ctx.rheo.createGroup(stream, 'g');
      await finish(ctx, stream, 'g');
      await ctx.rheo.appendBatch(stream, events(200));
      await ctx.rheo.setRetention(stream, { maxEvents: 1 });
      const handled: number[] = [];
      const consume = (async () => {
        for (;;) {
          const got: Lease[] = await ctx.rheo.fetch(stream, 'g', { limit: 20, leaseMs: LEASE_MS });
          if (got.length === 0) return;
          for (const l of got) {
            await ctx.rheo.ack(l);
            handled.push(l.event.sequence);
          }
        }
      })();
      const [result] = await Promise.all([ctx.rheo.trim(stream), consume]);
      expect(handled).toEqual(Array.from({ length: 200 }, (_, i) => 1001 + i));
      expect(result.partitions[0].trimmedTo).toBeGreaterThanOrEqual(1000);
      expect((await ctx.rheo.lag(stream, 'g')).lag).toBe(0);
    });
  });

  describe('purging dead letters', () => {
    it('purges dead letters dead-lettered before a time, then all; refuses bad options', async () => {
      const stream = await newStream(ctx);
      await ctx.rheo.appendBatch(stream, events(3));
      await ctx.rheo.createGroup(stream, 'g');
      await ctx.rheo.createGroup(stream, 'other');
      for (const l of await ctx.rheo.fetch(stream, 'other', { limit: 3, leaseMs: LEASE_MS })) await ctx.rheo.reject(l);
      // g's three dead letters are dead-lettered at t0, t0 + 10 and t0 + 20.
      const t0 = ctx.clock.now();
      for (const [i, l] of (await ctx.rheo.fetch(stream, 'g', { limit: 3, leaseMs: LEASE_MS })).entries()) {
        ctx.clock.set(t0 + i * 10);
        await ctx.rheo.reject(l, { reason: `r${i}` });
      }
      await expectCode(ctx.rheo.purgeDeadLetters(stream, 'g', {} as never), 'invalid_argument', 'options');
      await expectCode(ctx.rheo.purgeDeadLetters(stream, 'g', { before: 'yesterday' } as never), 'invalid_argument', 'options.before');
      await expectCode(ctx.rheo.purgeDeadLetters(stream, 'nope', { all: true }), 'group_not_found');

      expect(await ctx.rheo.purgeDeadLetters(stream, 'g', { before: new Date(t0 + 15) })).toBe(2);
      expect((await ctx.rheo.deadLetters(stream, 'g')).map((d) => d.reason)).toEqual(['r2']);
      expect((await ctx.rheo.groupInfo(stream, 'g')).deadLetters).toBe(1);
      expect(await ctx.rheo.purgeDeadLetters(stream, 'g', { all: true })).toBe(1);
      expect(await ctx.rheo.deadLetters(stream, 'g')).toEqual([]);
      expect(await ctx.rheo.redrive(stream, 'g', { all: true })).toBe(0);
      // Purged events stay finished; the other group keeps its own.
      expect((await ctx.rheo.lag(stream, 'g')).lag).toBe(0);
      expect(await ctx.rheo.fetch(stream, 'g')).toEqual([]);
      expect(await ctx.rheo.deadLetters(stream, 'other')).toHaveLength(3);
    });

    it('purges thousands of dead letters in one call', async () => {
      const stream = await newStream(ctx);
      await ctx.rheo.appendBatch(stream, events(2500));
      await ctx.rheo.createGroup(stream, 'g');
      for (;;) {
        const leases = await ctx.rheo.fetch(stream, 'g', { limit: 1000, leaseMs: LEASE_MS });
        if (leases.length === 0) break;
        await ctx.rheo.settleMany(leases.map((lease) => ({ kind: 'reject' as const, lease })));
      }
      expect((await ctx.rheo.groupInfo(stream, 'g')).deadLetters).toBe(2500);
      expect(await ctx.rheo.purgeDeadLetters(stream, 'g', { all: true })).toBe(2500);
      expect((await ctx.rheo.groupInfo(stream, 'g')).deadLetters).toBe(0);
    });
  });

  describe('turns for background work', () => {
    it('gives a job to one holder at a time until its turn expires', async () => {
      const job = ctx.name('job');
      expect(await ctx.rheo.backend.claimTurn(job, 'a', 1000)).toBe(true);
      expect(await ctx.rheo.backend.claimTurn(job, 'b', 1000)).toBe(false);
      ctx.clock.advance(600);
      // The holder renews its own turn.
      expect(await ctx.rheo.backend.claimTurn(job, 'a', 1000)).toBe(true);
      ctx.clock.advance(600);
      expect(await ctx.rheo.backend.claimTurn(job, 'b', 1000)).toBe(false);
      ctx.clock.advance(500);
      expect(await ctx.rheo.backend.claimTurn(job, 'b', 1000)).toBe(true);
      expect(await ctx.rheo.backend.claimTurn(job, 'a', 1000)).toBe(false);
      // Jobs are independent.
      expect(await ctx.rheo.backend.claimTurn(ctx.name('job'), 'a', 1000)).toBe(true);
    });
  });
}
