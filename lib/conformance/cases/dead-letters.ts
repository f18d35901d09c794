import { ConformanceContext, drain, events, expectCode, LEASE_MS, newStream } from '../context';

export function deadLetterCases(ctx: ConformanceContext): void {
  const exact = ctx.caps.guarantees.contiguousFrontier;

  describe('dead letters and redrive', () => {
    it('dead-letters at maxAttempts with the last nack reason, attempt and event', async () => {
      const stream = await newStream(ctx);
      const [event] = await ctx.rheo.appendBatch(stream, events(1));
      await ctx.rheo.createGroup(stream, 'g', { maxAttempts: 2, retry: { initialMs: 0, maxMs: 0 } });
      const [first] = await ctx.rheo.fetch(stream, 'g', { leaseMs: LEASE_MS });
      await ctx.rheo.nack(first, { reason: 'first failure' });
      expect(await ctx.rheo.deadLetters(stream, 'g')).toEqual([]);
      const [second] = await ctx.rheo.fetch(stream, 'g', { leaseMs: LEASE_MS });
      expect(second.attempt).toBe(2);
      ctx.clock.advance(5);
      await ctx.rheo.nack(second, { reason: 'boom' });
      expect(await ctx.rheo.fetch(stream, 'g')).toEqual([]);
      const dead = await ctx.rheo.deadLetters(stream, 'g');
      expect(dead).toEqual([
        {
          stream,
          group: 'g',
          eventId: event.id,
          partition: 0,
          sequence: 1,
          reason: 'boom',
          attempt: 2,
          deadLetteredAt: new Date(ctx.clock.now()),
          event,
        },
      ]);
      const info = await ctx.rheo.groupInfo(stream, 'g');
      expect(info.deadLetters).toBe(1);
      expect(info.inflight).toBe(0);
      // Dead is terminal: it no longer counts as lag.
      expect(info.lag.lag).toBe(0);
    });

    it('dead-letters on the first nack when maxAttempts is 1', async () => {
      const stream = await newStream(ctx);
      await ctx.rheo.appendBatch(stream, events(1));
      await ctx.rheo.createGroup(stream, 'g', { maxAttempts: 1 });
      const [lease] = await ctx.rheo.fetch(stream, 'g');
      await ctx.rheo.nack(lease, { delayMs: 0, reason: 'once' });
      expect((await ctx.rheo.deadLetters(stream, 'g')).map((d) => [d.reason, d.attempt])).toEqual([['once', 1]]);
      expect(await ctx.rheo.fetch(stream, 'g')).toEqual([]);
    });

    it('rejects to the dead letters at once, whatever the attempt; default reason when none given', async () => {
      const stream = await newStream(ctx);
      await ctx.rheo.appendBatch(stream, events(2));
      await ctx.rheo.createGroup(stream, 'g', { maxAttempts: 5 });
      const [a, b] = await ctx.rheo.fetch(stream, 'g', { leaseMs: LEASE_MS });
      await ctx.rheo.reject(a, { reason: 'bad curve' });
      await ctx.rheo.reject(b);
      expect(await ctx.rheo.fetch(stream, 'g')).toEqual([]);
      const dead = await ctx.rheo.deadLetters(stream, 'g');
      expect(dead.map((d) => [d.sequence, d.reason, d.attempt])).toEqual([
        [1, 'bad curve', 1],
        [2, 'rejected', 1],
      ]);
    });

    it('pages dead letters by (partition, sequence) with after; an unknown after is invalid_argument', async () => {
      const P = ctx.caps.guarantees.partitions ? 2 : 1;
      const stream = await newStream(ctx, P);
      await ctx.rheo.appendBatch(stream, events(6, P));
      await ctx.rheo.createGroup(stream, 'g');
      for (const l of await drain(ctx, stream, 'g')) await ctx.rheo.reject(l, { reason: `r${l.event.sequence}` });
      const all = await ctx.rheo.deadLetters(stream, 'g');
      const order = all.map((d) => [d.partition, d.sequence]);
      expect(order).toEqual([...order].sort((x, y) => x[0] - y[0] || x[1] - y[1]));
      expect(all).toHaveLength(6);
      const paged = [];
      let after: string | undefined;
      for (;;) {
        const page = await ctx.rheo.deadLetters(stream, 'g', { limit: 4, after });
        paged.push(...page);
        if (page.length < 4) break;
        after = page[page.length - 1].eventId;
      }
      expect(paged).toEqual(all);
      await expectCode(ctx.rheo.deadLetters(stream, 'g', { after: 'not-a-dead-letter' }), 'invalid_argument', 'after');
    });

    it('redrives chosen dead letters, then all; lag reflects them', async () => {
      const stream = await newStream(ctx);
      const evs = await ctx.rheo.appendBatch(stream, events(4));
      await ctx.rheo.createGroup(stream, 'g');
      const leases = await ctx.rheo.fetch(stream, 'g', { leaseMs: LEASE_MS });
      await ctx.rheo.ack(leases[0]);
      for (const l of leases.slice(1)) await ctx.rheo.reject(l, { reason: 'no' });
      expect((await ctx.rheo.lag(stream, 'g')).lag).toBe(0);

      expect(await ctx.rheo.redrive(stream, 'g', { eventIds: [evs[2].id, 'unknown-id'] })).toBe(1);
      expect((await ctx.rheo.deadLetters(stream, 'g')).map((d) => d.sequence)).toEqual([2, 4]);
      const lag = await ctx.rheo.lag(stream, 'g');
      expect(lag.lag).toBeGreaterThanOrEqual(1);
      if (exact) expect([lag.partitions[0].frontier, lag.lag]).toEqual([2, 2]);
      expect((await ctx.rheo.groupInfo(stream, 'g')).deadLetters).toBe(2);
      const again = await ctx.rheo.fetch(stream, 'g', { leaseMs: LEASE_MS });
      expect(again.map((l) => l.event.id)).toEqual([evs[2].id]);
      await ctx.rheo.ack(again[0]);
      expect((await ctx.rheo.lag(stream, 'g')).lag).toBe(0);

      expect(await ctx.rheo.redrive(stream, 'g', { all: true })).toBe(2);
      expect(await ctx.rheo.deadLetters(stream, 'g')).toEqual([]);
      if (exact) expect((await ctx.rheo.lag(stream, 'g')).lag).toBe(3);
      const last = await drain(ctx, stream, 'g');
      expect(last.map((l) => l.event.sequence).sort()).toEqual([2, 4]);
      for (const l of last) await ctx.rheo.ack(l);
      expect((await ctx.rheo.lag(stream, 'g')).lag).toBe(0);
      expect(await ctx.rheo.redrive(stream, 'g', { all: true })).toBe(0);
    });

    it('counts dead letters, all or those dead-lettered at or after a time; a redriven one counts at its new time', async () => {
      const stream = await newStream(ctx);
      const evs = await ctx.rheo.appendBatch(stream, events(4));
      await ctx.rheo.createGroup(stream, 'g');
      expect(await ctx.rheo.countDeadLetters(stream, 'g')).toBe(0);
      const t0 = ctx.clock.now();
      for (const l of await ctx.rheo.fetch(stream, 'g', { limit: 2, leaseMs: LEASE_MS })) await ctx.rheo.reject(l, { reason: 'early' });
      ctx.clock.advance(60_000);
      const t1 = ctx.clock.now();
      for (const l of await ctx.rheo.fetch(stream, 'g', { limit: 2, leaseMs: LEASE_MS })) await ctx.rheo.reject(l, { reason: 'late' });
      const since = async (ms: number) => ctx.rheo.countDeadLetters(stream, 'g', { since: new Date(ms) });
      expect(await ctx.rheo.countDeadLetters(stream, 'g')).toBe(4);
      // At or after: the bound itself counts, as purgeDeadLetters({ before }) keeps it.
      expect([await since(t0 - 1), await since(t0), await since(t0 + 1), await since(t1), await since(t1 + 1)]).toEqual([4, 4, 2, 2, 0]);

      // Redriven, it leaves the count; dead-lettered again, it counts at its new time.
      expect(await ctx.rheo.redrive(stream, 'g', { eventIds: [evs[0].id] })).toBe(1);
      expect([await ctx.rheo.countDeadLetters(stream, 'g'), await since(t0)]).toEqual([3, 3]);
      ctx.clock.advance(60_000);
      const t2 = ctx.clock.now();
      const [again] = await ctx.rheo.fetch(stream, 'g', { leaseMs: LEASE_MS });
      expect(again.event.id).toBe(evs[0].id);
      await ctx.rheo.reject(again, { reason: 'again' });
      expect([await ctx.rheo.countDeadLetters(stream, 'g'), await since(t1), await since(t2), await since(t2 + 1)]).toEqual([4, 3, 1, 0]);

      // A purge before a time leaves exactly the count since that time.
      expect(await ctx.rheo.purgeDeadLetters(stream, 'g', { before: new Date(t1) })).toBe(1);
      expect([await ctx.rheo.countDeadLetters(stream, 'g'), await since(t1)]).toEqual([3, 3]);

      await expectCode(ctx.rheo.countDeadLetters(stream, 'g', { since: 'yesterday' } as never), 'invalid_argument', 'options.since');
      await expectCode(ctx.rheo.countDeadLetters(stream, 'g', { since: new Date(NaN) }), 'invalid_argument', 'options.since');
      await expectCode(ctx.rheo.countDeadLetters(stream, 'nope'), 'group_not_found');
      await expectCode(ctx.rheo.countDeadLetters(ctx.name('missing'), 'g'), 'stream_not_found');
    });

    it('sends a redriven event that fails again back to the dead letters with the new reason', async () => {
      const stream = await newStream(ctx);
      await ctx.rheo.appendBatch(stream, events(1));
      await ctx.rheo.createGroup(stream, 'g', { maxAttempts: 1 });
      const [a] = await ctx.rheo.fetch(stream, 'g');
      await ctx.rheo.nack(a, { reason: 'one' });
      await ctx.rheo.redrive(stream, 'g', { all: true });
      const [b] = await ctx.rheo.fetch(stream, 'g');
      expect(b.event.id).toBe(a.event.id);
      await ctx.rheo.nack(b, { reason: 'two' });
      expect((await ctx.rheo.deadLetters(stream, 'g')).map((d) => d.reason)).toEqual(['two']);
    });
  });
}
