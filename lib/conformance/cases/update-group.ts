import { Rheo } from '../../core/rheo';
import type { Lease } from '../../core/types';
import { ConformanceContext, events, expectCode, LEASE_MS, newStream, otherProcesses } from '../context';

/**
 * `updateGroup` (docs/adr/047-changing-a-group-in-place.md): a group's settings
 * changed in place decide every later claim and settle, in every process. The
 * other process is a second backend on the same store where there is one (a
 * durable backend: `reopen`), else a second Rheo over the same backend; it reads
 * the group before the change, so whatever it remembers of it is the old config.
 */
export function updateGroupCases(ctx: ConformanceContext): void {
  const RETRY = { initialMs: 1000, factor: 1, maxMs: 1000 };
  const otherProcess = otherProcesses(ctx);

  async function setup(n: number, maxAttempts: number): Promise<{ stream: string; other: Rheo }> {
    const stream = await newStream(ctx);
    await ctx.rheo.createGroup(stream, 'g', { maxAttempts, retry: RETRY });
    await ctx.rheo.appendBatch(stream, events(n));
    const other = await otherProcess();
    expect((await other.backend.getGroup(stream, 'g'))?.maxAttempts).toBe(maxAttempts);
    return { stream, other };
  }

  async function fetchAll(rheo: Rheo, stream: string, n: number): Promise<Lease[]> {
    const got = await rheo.fetch(stream, 'g', { limit: 10, leaseMs: LEASE_MS });
    expect(got).toHaveLength(n);
    return got.sort((a, b) => a.event.sequence - b.event.sequence);
  }

  /** Nack every lease with no delay given (the group's backoff), then let the retries fall due. */
  async function failAll(rheo: Rheo, leases: Lease[]): Promise<void> {
    await rheo.settleMany(leases.map((lease) => ({ kind: 'nack' as const, lease, reason: 'still down' })));
    ctx.clock.advance(RETRY.maxMs + 1);
  }

  describe('updateGroup: a group changed in place', () => {
    it('raises maxAttempts from 5 to 10 while deliveries wait for their last retry: they are retried, not dead-lettered', async () => {
      const { stream, other } = await setup(3, 5);
      let leases = await fetchAll(other, stream, 3);
      for (let attempt = 1; attempt < 4; attempt++) {
        await failAll(other, leases);
        leases = await fetchAll(other, stream, 3);
      }
      await failAll(other, leases); // nacked at attempt 4: each waits for attempt 5, the last of 5
      const updated = await ctx.rheo.updateGroup(stream, 'g', { maxAttempts: 10 });
      expect(updated).toMatchObject({ stream, group: 'g', maxAttempts: 10, retry: RETRY, ordering: 'none' });
      // The other process remembered maxAttempts 5: the store's 10 decides its settles and claims.
      const [nacked, expiring, acked] = await fetchAll(other, stream, 3);
      expect([nacked.attempt, expiring.attempt, acked.attempt]).toEqual([5, 5, 5]);
      await other.nack(nacked, { reason: 'still down' });
      await other.ack(acked);
      ctx.clock.advance(LEASE_MS + 1); // the lease of `expiring` expires on attempt 5
      const again = await fetchAll(other, stream, 2);
      expect(again.map((l) => [l.event.sequence, l.attempt])).toEqual([
        [nacked.event.sequence, 6],
        [expiring.event.sequence, 6],
      ]);
      const info = await other.groupInfo(stream, 'g');
      expect(info.deadLetters).toBe(0);
      expect(info.config.maxAttempts).toBe(10);
      await other.settleMany(again.map((lease) => ({ kind: 'ack' as const, lease })));
      expect((await ctx.rheo.lag(stream, 'g')).lag).toBe(0);
    });

    it("a settle's result tells what the store did after another process changed maxAttempts", async () => {
      const { stream, other } = await setup(4, 5);
      let leases = await fetchAll(other, stream, 4);
      for (let attempt = 1; attempt < 5; attempt++) {
        await failAll(other, leases);
        leases = await fetchAll(other, stream, 4);
      }
      const [raised, lowered, rejected, acked] = leases;
      expect(leases.map((l) => l.attempt)).toEqual([5, 5, 5, 5]);
      // The other process remembered maxAttempts 5; the store's 10 decided its nack at attempt 5.
      await ctx.rheo.updateGroup(stream, 'g', { maxAttempts: 10 });
      expect(await other.settleMany([{ kind: 'nack', lease: raised, reason: 'still down' }])).toEqual([
        { ok: true, outcome: 'retry', maxAttempts: 10, delayMs: RETRY.initialMs },
      ]);
      // Lowered back to 5: the same process's nack at attempt 5 dead-letters, and says so.
      await ctx.rheo.updateGroup(stream, 'g', { maxAttempts: 5 });
      expect(await other.settleMany([{ kind: 'nack', lease: lowered, reason: 'still down', delayMs: 0 }])).toEqual([
        { ok: true, outcome: 'dead_letter', maxAttempts: 5 },
      ]);
      // A reject is the handler's decision, whatever the setting; an ack tells nothing more.
      expect(
        await other.settleMany([
          { kind: 'reject', lease: rejected, reason: 'bad payload' },
          { kind: 'ack', lease: acked },
        ]),
      ).toEqual([{ ok: true, outcome: 'reject' }, { ok: true }]);
      const info = await ctx.rheo.groupInfo(stream, 'g');
      expect(info.deadLetters).toBe(2);
    });

    it('lowers maxAttempts: what waits is left alone and dead-lettered at its next failure, never retroactively', async () => {
      const { stream, other } = await setup(3, 5);
      let leases = await fetchAll(other, stream, 3);
      for (let attempt = 1; attempt < 3; attempt++) {
        await failAll(other, leases);
        leases = await fetchAll(other, stream, 3);
      }
      const [inFlight] = leases.splice(0, 1); // leased at attempt 3
      await failAll(other, leases); // the other two wait for attempt 4
      await ctx.rheo.updateGroup(stream, 'g', { maxAttempts: 2 });
      expect((await ctx.rheo.groupInfo(stream, 'g')).deadLetters).toBe(0);
      expect(await ctx.rheo.deadLetters(stream, 'g')).toEqual([]);
      // The lease held through the change still settles; its nack is a failure at attempt 3 >= 2.
      await other.nack(inFlight, { reason: 'after the change' });
      const waiting = await fetchAll(other, stream, 2);
      expect(waiting.map((l) => l.attempt)).toEqual([4, 4]);
      await other.nack(waiting[0], { reason: 'failed again' });
      await other.ack(waiting[1]);
      const dead = await ctx.rheo.deadLetters(stream, 'g');
      expect(dead.map((d) => [d.sequence, d.attempt, d.reason])).toEqual([
        [inFlight.event.sequence, 3, 'after the change'],
        [waiting[0].event.sequence, 4, 'failed again'],
      ]);
      expect((await ctx.rheo.lag(stream, 'g')).lag).toBe(0);
    });

    it('lowers maxAttempts under a lease that then expires: the claim dead-letters it at once', async () => {
      const { stream, other } = await setup(1, 5);
      const [first] = await fetchAll(other, stream, 1);
      await failAll(other, [first]);
      const [second] = await fetchAll(other, stream, 1);
      expect(second.attempt).toBe(2);
      await ctx.rheo.updateGroup(stream, 'g', { maxAttempts: 2 });
      ctx.clock.advance(LEASE_MS + 1);
      expect(await other.fetch(stream, 'g', { limit: 10, leaseMs: LEASE_MS })).toEqual([]);
      const dead = await ctx.rheo.deadLetters(stream, 'g');
      expect(dead.map((d) => [d.sequence, d.attempt, d.reason])).toEqual([[second.event.sequence, 2, 'lease expired on attempt 2 of 2']]);
    });

    it('changes the retry backoff for retries scheduled after it; one already scheduled keeps its due time', async () => {
      const { stream, other } = await setup(2, 5);
      const [early, late] = await fetchAll(other, stream, 2);
      await other.nack(early, { reason: 'before the change' }); // due after the old 1000 ms
      const updated = await ctx.rheo.updateGroup(stream, 'g', { retry: { initialMs: 5000, maxMs: 5000 } });
      expect(updated.retry).toEqual({ initialMs: 5000, factor: 1, maxMs: 5000 });
      await other.nack(late, { reason: 'after the change' }); // by the other process: due after the new 5000 ms
      ctx.clock.advance(1001);
      const due = await other.fetch(stream, 'g', { limit: 10, leaseMs: LEASE_MS });
      expect(due.map((l) => [l.event.sequence, l.attempt])).toEqual([[early.event.sequence, 2]]);
      ctx.clock.advance(5000 - 1001 - 1);
      expect(await other.fetch(stream, 'g', { limit: 10, leaseMs: LEASE_MS })).toEqual([]);
      ctx.clock.advance(2);
      const later = await other.fetch(stream, 'g', { limit: 10, leaseMs: LEASE_MS });
      expect(later.map((l) => [l.event.sequence, l.attempt])).toEqual([[late.event.sequence, 2]]);
    });

    it('is what getGroup, listGroups and groupInfo return, here and from another process', async () => {
      const { stream, other } = await setup(1, 5);
      const before = await ctx.rheo.backend.getGroup(stream, 'g');
      await ctx.rheo.updateGroup(stream, 'g', { maxAttempts: 7 });
      const updated = await other.updateGroup(stream, 'g', { retry: { factor: 3, maxMs: 9000 } });
      const expected = { ...before, maxAttempts: 7, retry: { initialMs: 1000, factor: 3, maxMs: 9000 } };
      expect(updated).toEqual(expected);
      for (const rheo of [ctx.rheo, other, await otherProcess()]) {
        expect(await rheo.backend.getGroup(stream, 'g')).toEqual(expected);
        expect((await rheo.listGroups(stream)).find((g) => g.group === 'g')).toEqual(expected);
        expect((await rheo.groupInfo(stream, 'g')).config).toEqual(expected);
      }
    });

    it('keeps the deliveries, positions and dead letters of the group', async () => {
      const stream = await newStream(ctx);
      await ctx.rheo.createGroup(stream, 'g', { maxAttempts: 1 });
      await ctx.rheo.appendBatch(stream, events(3));
      const [a, b] = await ctx.rheo.fetch(stream, 'g', { limit: 2, leaseMs: LEASE_MS });
      await ctx.rheo.nack(a, { reason: 'dead' });
      await ctx.rheo.updateGroup(stream, 'g', { maxAttempts: 3 });
      await ctx.rheo.ack(b); // the lease taken before the change still holds
      expect((await ctx.rheo.deadLetters(stream, 'g')).map((d) => d.sequence)).toEqual([a.event.sequence]);
      const [c] = await ctx.rheo.fetch(stream, 'g', { limit: 10, leaseMs: LEASE_MS });
      expect([c.event.sequence, c.attempt]).toEqual([3, 1]);
    });

    it('refuses start, ordering, unknown keys and bad values, naming the field, and changes nothing', async () => {
      const { stream } = await setup(1, 5);
      const before = await ctx.rheo.backend.getGroup(stream, 'g');
      const refused = async (changes: unknown, field: string, says: RegExp) => {
        const err = await expectCode(ctx.rheo.updateGroup(stream, 'g', changes as never), 'invalid_argument', field);
        expect(err.message).toMatch(says);
      };
      await refused({ start: 'end' }, 'start', /reset/);
      await refused({ ordering: 'partition' }, 'ordering', /cannot change in place/);
      await refused({ maxAttempts: 9, maxattempts: 9 }, 'changes.maxattempts', /use maxAttempts, retry/);
      await refused({ retry: { initial: 5 } }, 'retry.initial', /use initialMs, factor, maxMs/);
      await refused({ maxAttempts: 0 }, 'maxAttempts', /between 1 and 1000/);
      await refused({ maxAttempts: 2.5 }, 'maxAttempts', /integer/);
      await refused({ maxAttempts: 9, retry: { factor: 0.5 } }, 'retry.factor', /between 1 and 100/);
      await refused({ maxAttempts: 9, retry: { maxMs: 10 } }, 'retry.maxMs', /retry.initialMs/);
      await refused(null, 'changes', /object/);
      expect(await ctx.rheo.backend.getGroup(stream, 'g')).toEqual(before);
    });

    it('answers group_not_found for a group that does not exist, and stream_not_found for a stream', async () => {
      const stream = await newStream(ctx);
      await expectCode(ctx.rheo.updateGroup(stream, 'missing', { maxAttempts: 3 }), 'group_not_found');
      await expectCode(ctx.rheo.updateGroup(ctx.name('nostream'), 'g', { maxAttempts: 3 }), 'stream_not_found');
      await ctx.rheo.createGroup(stream, 'gone');
      await ctx.rheo.deleteGroup(stream, 'gone', { confirm: true });
      await expectCode(ctx.rheo.updateGroup(stream, 'gone', { maxAttempts: 3 }), 'group_not_found');
    });
  });
}
