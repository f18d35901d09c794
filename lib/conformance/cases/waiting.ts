import { MAX_BATCH, MAX_DELAY_MS } from '../../core/limits';
import type { SettleResult } from '../../backends/backend';
import type { RheoErrorCode } from '../../core/errors';
import { ConformanceContext, drain, events, expectCode, LEASE_MS, newStream, positions } from '../context';

/**
 * Skip, reschedule and cancelDelayed (docs/adr/048-skip-reschedule-cancel.md): an
 * operator's hand on deliveries waiting in a group. A skipped delivery never runs
 * again, the frontier passes it and lag drops; a delivery in flight is refused
 * (`lease_held`, naming the lease's expiry), an expired one waits; a cancelled
 * delayed event is run by no group, including groups whose cursor has not reached
 * it. Every case moves the suite's clock; nothing sleeps.
 */
export function waitingCases(ctx: ConformanceContext): void {
  const RETRY = { initialMs: 60_000, factor: 1, maxMs: 60_000 };
  const fetchAll = (stream: string, group = 'g', limit = 100) => ctx.rheo.fetch(stream, group, { limit, leaseMs: LEASE_MS });
  const codes = (results: SettleResult[]): Array<RheoErrorCode | 'ok'> => results.map((r) => (r.ok ? 'ok' : r.error.code));

  async function setup(n: number, options: { ordering?: 'partition'; maxAttempts?: number } = {}): Promise<string> {
    const stream = await newStream(ctx);
    await ctx.rheo.createGroup(stream, 'g', { maxAttempts: options.maxAttempts ?? 5, retry: RETRY, ordering: options.ordering });
    if (n > 0) await ctx.rheo.appendBatch(stream, events(n));
    return stream;
  }

  describe('skip, reschedule and cancelDelayed', () => {
    it('skips a waiting retry: no later fetch returns it, the frontier passes it, lag drops, groupInfo counts it', async () => {
      const stream = await setup(3);
      const [first, second, third] = await fetchAll(stream);
      await ctx.rheo.nack(first, { reason: 'provider down' });
      await ctx.rheo.ack(second);
      await ctx.rheo.ack(third);
      expect((await ctx.rheo.lag(stream, 'g')).lag).toBe(3);
      expect(await ctx.rheo.skip(stream, 'g', [first.event.id], { reason: 'obsolete quote' })).toEqual([{ ok: true }]);
      const lag = await ctx.rheo.lag(stream, 'g');
      expect(lag.lag).toBe(0);
      expect(lag.partitions[0].frontier).toBe(3);
      // Past its retry time, and past any lease time: nothing comes back.
      ctx.clock.advance(RETRY.maxMs * 2 + LEASE_MS);
      expect(await fetchAll(stream)).toEqual([]);
      const info = await ctx.rheo.groupInfo(stream, 'g');
      expect(info.skipped).toEqual({ count: 1, lastReason: 'obsolete quote', lastAt: expect.any(Date) });
      expect(info.deadLetters).toBe(0);
      // Settled already: a second skip is refused for that id, changing nothing.
      expect(codes(await ctx.rheo.skip(stream, 'g', [first.event.id]))).toEqual(['invalid_argument']);
      expect((await ctx.rheo.groupInfo(stream, 'g')).skipped.count).toBe(1);
      // The count belongs to the group: a reset keeps it.
      if (!ctx.caps.guarantees.replay) return;
      await ctx.rheo.reset(stream, 'g', { confirm: true, start: 'end' });
      expect((await ctx.rheo.groupInfo(stream, 'g')).skipped).toEqual(info.skipped);
    });

    it('refuses a delivery in flight with lease_held naming its expiry; an expired lease waits and is skipped, its holder answered stale_lease', async () => {
      const stream = await setup(2);
      const [held, expiring] = await fetchAll(stream);
      const [refused] = await ctx.rheo.skip(stream, 'g', [held.event.id]);
      expect(refused.ok).toBe(false);
      if (!refused.ok) {
        expect(refused.error.code).toBe('lease_held');
        expect(refused.error.message).toContain(held.expiresAt.toISOString());
      }
      const [rescheduled] = await ctx.rheo.reschedule(stream, 'g', [held.event.id], { delayMs: 1000 });
      expect(rescheduled.ok ? 'ok' : rescheduled.error.code).toBe('lease_held');
      // The holder still settles: nothing was changed.
      await ctx.rheo.ack(held);
      ctx.clock.advance(LEASE_MS);
      expect(await ctx.rheo.skip(stream, 'g', [expiring.event.id], { reason: 'holder died' })).toEqual([{ ok: true }]);
      await expectCode(ctx.rheo.ack(expiring), 'stale_lease');
      expect(await fetchAll(stream)).toEqual([]);
      expect((await ctx.rheo.lag(stream, 'g')).lag).toBe(0);
    });

    it('answers per id, in order: unknown ids, events not offered yet and settled ones are refused, the rest applied', async () => {
      const stream = await setup(4);
      const [a, b] = await fetchAll(stream, 'g', 2);
      await ctx.rheo.ack(a);
      await ctx.rheo.nack(b);
      const all = await ctx.rheo.read(stream);
      const results = await ctx.rheo.skip(stream, 'g', ['no-such-event', a.event.id, b.event.id, all[2].id]);
      expect(codes(results)).toEqual(['invalid_argument', 'invalid_argument', 'ok', 'invalid_argument']);
      for (const r of results) if (!r.ok) expect(r.error.field).toBe('ids');
      // The event not offered yet is still offered as usual.
      expect(positions(await fetchAll(stream))).toEqual(['0:3', '0:4']);
      expect(await ctx.rheo.skip(stream, 'g', [])).toEqual([]);
    });

    it('skipping the head of an ordered partition frees the partition', async () => {
      const stream = await setup(3, { ordering: 'partition' });
      const [head] = await fetchAll(stream);
      await ctx.rheo.nack(head);
      expect(await fetchAll(stream)).toEqual([]); // the head waits for its retry, and the partition with it
      expect(await ctx.rheo.skip(stream, 'g', [head.event.id])).toEqual([{ ok: true }]);
      const [next] = await fetchAll(stream);
      expect(next.event.sequence).toBe(2);
    });

    it('reschedules a waiting retry earlier or later, keeping its attempt, by the store clock', async () => {
      const stream = await setup(2);
      const [first, second] = await fetchAll(stream);
      await ctx.rheo.nack(first);
      await ctx.rheo.nack(second);
      expect(await ctx.rheo.reschedule(stream, 'g', [first.event.id], { delayMs: 0 })).toEqual([{ ok: true }]);
      const now = await fetchAll(stream);
      expect(positions(now)).toEqual(['0:1']);
      expect(now[0].attempt).toBe(2);
      await ctx.rheo.ack(now[0]);
      // Later than its backoff: not at the backoff, at the new time.
      const later = new Date(ctx.clock.now() + RETRY.maxMs * 3);
      expect(await ctx.rheo.reschedule(stream, 'g', [second.event.id], { deliverAt: later })).toEqual([{ ok: true }]);
      ctx.clock.advance(RETRY.maxMs * 3 - 1);
      expect(await fetchAll(stream)).toEqual([]);
      ctx.clock.advance(1);
      const [again] = await fetchAll(stream);
      expect(again).toMatchObject({ attempt: 2, event: { id: second.event.id } });
    });

    it('reschedules and skips a parked delayed event in one group only', async () => {
      const stream = await newStream(ctx);
      await ctx.rheo.createGroup(stream, 'g');
      await ctx.rheo.createGroup(stream, 'h');
      const e = await ctx.rheo.append(stream, { payload: 'reminder', delayMs: 60_000 });
      expect(await fetchAll(stream, 'g')).toEqual([]); // parked in g
      expect(await fetchAll(stream, 'h')).toEqual([]); // parked in h
      expect(await ctx.rheo.reschedule(stream, 'g', [e.id], { delayMs: 1000 })).toEqual([{ ok: true }]);
      expect(await ctx.rheo.skip(stream, 'h', [e.id])).toEqual([{ ok: true }]);
      ctx.clock.advance(1000);
      expect((await fetchAll(stream, 'g')).map((l) => [l.event.id, l.attempt])).toEqual([[e.id, 1]]);
      ctx.clock.advance(60_000);
      expect(await fetchAll(stream, 'h')).toEqual([]);
      expect((await ctx.rheo.lag(stream, 'h')).lag).toBe(0);
    });

    it('cancelDelayed: no group runs the event, whether parked, waiting for a retry, or not yet reached by its cursor', async () => {
      const stream = await newStream(ctx);
      await ctx.rheo.createGroup(stream, 'parked');
      await ctx.rheo.createGroup(stream, 'retrying');
      await ctx.rheo.createGroup(stream, 'behind', { ordering: 'partition', retry: RETRY });
      await ctx.rheo.createGroup(stream, 'done');
      const [blocker] = await ctx.rheo.appendBatch(stream, [{ payload: 'first' }]);
      const reminder = await ctx.rheo.append(stream, { payload: 'reminder', delayMs: 5000 });
      await ctx.rheo.append(stream, { payload: 'after' });
      // parked: the claim passed blocker and parked the reminder.
      const p = await fetchAll(stream, 'parked');
      expect(p.map((l) => l.event.sequence)).toEqual([1, 3]);
      // retrying: the reminder ran once and waits for its retry.
      await ctx.rheo.createGroup(stream, 'late', { start: 'beginning' });
      ctx.clock.advance(5000);
      const r = await fetchAll(stream, 'retrying');
      const rem = r.find((l) => l.event.id === reminder.id)!;
      await ctx.rheo.nack(rem, { delayMs: 60_000 });
      // done: ran and acked it.
      for (const l of await fetchAll(stream, 'done')) await ctx.rheo.ack(l);
      // behind: ordered, its head (blocker) waits for a retry, so its cursor has not reached the reminder.
      const [head] = await fetchAll(stream, 'behind');
      expect(head.event.id).toBe(blocker.id);
      await ctx.rheo.nack(head);
      // Every group but 'done' had it still to run ('late' too: never fetched).
      expect(await ctx.rheo.cancelDelayed(stream, reminder.id, { reason: 'order cancelled' })).toBe(4);
      expect(await ctx.rheo.cancelDelayed(stream, reminder.id)).toBe(0);
      ctx.clock.advance(RETRY.maxMs + 60_000);
      for (const group of ['parked', 'retrying', 'late', 'done']) {
        const got = await drain(ctx, stream, group);
        expect(got.map((l) => l.event.id)).not.toContain(reminder.id);
        for (const l of got) await ctx.rheo.ack(l);
      }
      // 'behind' runs its head again, then passes the reminder to the event after it.
      const again = await fetchAll(stream, 'behind');
      expect(again.map((l) => l.event.id)).toEqual([blocker.id]);
      await ctx.rheo.ack(again[0]);
      const next = await fetchAll(stream, 'behind');
      expect(next.map((l) => l.event.sequence)).toEqual([3]);
      await ctx.rheo.ack(next[0]);
      for (const group of ['parked', 'retrying', 'late', 'behind', 'done']) expect((await ctx.rheo.lag(stream, group)).lag).toBe(0);
      const info = await ctx.rheo.groupInfo(stream, 'parked');
      expect(info.skipped).toMatchObject({ count: 1, lastReason: 'order cancelled' });
      expect((await ctx.rheo.groupInfo(stream, 'done')).skipped.count).toBe(0);
      if (!ctx.caps.guarantees.replay) return;
      // A rewind reaches it again and still passes it; a replay that re-opens it by a query does not run it either.
      await ctx.rheo.replay(stream, 'parked', { afterSequence: 0 });
      expect((await drain(ctx, stream, 'parked')).map((l) => l.event.sequence)).toEqual([1, 3]);
      expect(await ctx.rheo.replay(stream, 'done', { query: {} })).toBe(3);
      const replayed = await drain(ctx, stream, 'done');
      expect(replayed.map((l) => l.event.sequence)).toEqual([1, 3]);
      for (const l of replayed) await ctx.rheo.ack(l);
      expect((await ctx.rheo.lag(stream, 'done')).lag).toBe(0);
    });

    it('cancelDelayed is refused whole while a group holds a live lease on the event, and for an event without a delay', async () => {
      const stream = await newStream(ctx);
      await ctx.rheo.createGroup(stream, 'a');
      await ctx.rheo.createGroup(stream, 'b');
      const reminder = await ctx.rheo.append(stream, { payload: 'reminder', delayMs: 1000 });
      const plain = await ctx.rheo.append(stream, { payload: 'plain' });
      ctx.clock.advance(1000);
      const [lease] = (await fetchAll(stream, 'a')).filter((l) => l.event.id === reminder.id);
      const err = await expectCode(ctx.rheo.cancelDelayed(stream, reminder.id), 'lease_held');
      expect(err.message).toContain(lease.expiresAt.toISOString());
      // Nothing changed: b still runs it.
      expect((await fetchAll(stream, 'b')).map((l) => l.event.id)).toContain(reminder.id);
      await expectCode(ctx.rheo.cancelDelayed(stream, plain.id), 'invalid_argument', 'id');
      await expectCode(ctx.rheo.cancelDelayed(stream, 'no-such-event'), 'invalid_argument', 'id');
      expect((await ctx.rheo.groupInfo(stream, 'b')).skipped.count).toBe(0);
    });

    it('a skip racing claims: each due delivery is either leased or skipped, never both, and the skipped never come back', async () => {
      const stream = await setup(20);
      const first = await fetchAll(stream);
      for (const l of first) await ctx.rheo.nack(l, { delayMs: 0 });
      const ids = first.map((l) => l.event.id);
      const [claimed, more, skipped] = await Promise.all([
        fetchAll(stream, 'g', 7),
        fetchAll(stream, 'g', 7),
        ctx.rheo.skip(stream, 'g', ids, { reason: 'race' }),
      ]);
      const leased = new Set([...claimed, ...more].map((l) => l.event.id));
      const done = new Set(ids.filter((_, i) => skipped[i].ok));
      for (const [i, r] of skipped.entries()) {
        if (r.ok) expect(leased.has(ids[i])).toBe(false);
        else {
          expect(r.error.code).toBe('lease_held');
          expect(leased.has(ids[i])).toBe(true);
        }
      }
      expect(leased.size + done.size).toBeLessThanOrEqual(20);
      ctx.clock.advance(LEASE_MS);
      const later = await drain(ctx, stream, 'g');
      for (const l of later) expect(done.has(l.event.id)).toBe(false);
      expect((await ctx.rheo.groupInfo(stream, 'g')).skipped.count).toBe(done.size);
    });

    it('refuses bad input naming the field, changing nothing', async () => {
      const stream = await setup(1);
      const [lease] = await fetchAll(stream);
      await ctx.rheo.nack(lease);
      const id = lease.event.id;
      await expectCode(ctx.rheo.skip(stream, 'g', 'x' as never), 'invalid_argument', 'ids');
      await expectCode(ctx.rheo.skip(stream, 'g', [id, id]), 'invalid_argument', 'ids[1]');
      await expectCode(ctx.rheo.skip(stream, 'g', ['']), 'invalid_argument', 'ids[0]');
      await expectCode(
        ctx.rheo.skip(
          stream,
          'g',
          Array.from({ length: MAX_BATCH + 1 }, (_, i) => `e${i}`),
        ),
        'invalid_argument',
        'ids',
      );
      await expectCode(ctx.rheo.skip(stream, 'g', [id], { reason: 'x'.repeat(1001) }), 'invalid_argument', 'reason');
      await expectCode(ctx.rheo.skip(stream, 'g', [id], { why: 'typo' } as never), 'invalid_argument', 'options.why');
      await expectCode(ctx.rheo.reschedule(stream, 'g', [id], {}), 'invalid_argument', 'options');
      await expectCode(ctx.rheo.reschedule(stream, 'g', [id], { delayMs: 1, deliverAt: new Date() }), 'invalid_argument', 'options');
      await expectCode(ctx.rheo.reschedule(stream, 'g', [id], { delayMs: MAX_DELAY_MS + 1 }), 'invalid_argument', 'delayMs');
      await expectCode(ctx.rheo.reschedule(stream, 'g', [id], { delayMs: -1 }), 'invalid_argument', 'delayMs');
      await expectCode(
        ctx.rheo.reschedule(stream, 'g', [id], { deliverAt: new Date(ctx.clock.now() + MAX_DELAY_MS + 60_000) }),
        'invalid_argument',
        'deliverAt',
      );
      await expectCode(ctx.rheo.skip(stream, 'nope', [id]), 'group_not_found');
      await expectCode(ctx.rheo.cancelDelayed(stream, id, { because: 1 } as never), 'invalid_argument', 'options.because');
      expect((await ctx.rheo.groupInfo(stream, 'g')).skipped).toEqual({ count: 0, lastReason: null, lastAt: null });
      ctx.clock.advance(RETRY.maxMs);
      expect(positions(await fetchAll(stream))).toEqual(['0:1']);
    });
  });
}
