import type { RheoErrorCode } from '../../core/errors';
import type { SettleResult } from '../../backends/backend';
import { ConformanceContext, drain, events, expectCode, LEASE_MS, newStream } from '../context';

/** Codes a lease of a deleted group may answer: its delivery is gone, or (where the store knows it) its group. */
const GONE: RheoErrorCode[] = ['stale_lease', 'group_not_found'];

function refusedAsGone(result: SettleResult): void {
  expect(result.ok).toBe(false);
  if (!result.ok) expect(GONE).toContain(result.error.code);
}

/** Deleting a group: everything of it goes, nothing of the others; a name used again starts fresh. */
export function deleteGroupCases(ctx: ConformanceContext): void {
  const confirm = { confirm: true };

  /** A group holding a live lease, a retry due later, an ack, and a dead letter. */
  async function busyGroup(stream: string, group: string): Promise<void> {
    await ctx.rheo.createGroup(stream, group, { maxAttempts: 3 });
    const [acked, dead, retried, held] = await ctx.rheo.fetch(stream, group, { limit: 4, leaseMs: LEASE_MS });
    await ctx.rheo.ack(acked);
    await ctx.rheo.reject(dead, { reason: 'bad' });
    await ctx.rheo.nack(retried, { delayMs: 60_000 });
    expect(held.attempt).toBe(1);
  }

  describe('deleteGroup', () => {
    it('removes the group with its leases, retries and dead letters, and leaves the other groups as they were', async () => {
      const stream = await newStream(ctx, 2);
      await ctx.rheo.appendBatch(stream, events(6, 2));
      await busyGroup(stream, 'doomed');
      await busyGroup(stream, 'kept');
      const before = await ctx.rheo.groupInfo(stream, 'kept');

      await ctx.rheo.deleteGroup(stream, 'doomed', confirm);

      expect(await ctx.rheo.backend.getGroup(stream, 'doomed')).toBeNull();
      expect((await ctx.rheo.listGroups(stream)).map((g) => g.group)).toEqual(['kept']);
      await expectCode(ctx.rheo.lag(stream, 'doomed'), 'group_not_found');
      await expectCode(ctx.rheo.groupInfo(stream, 'doomed'), 'group_not_found');
      await expectCode(ctx.rheo.deadLetters(stream, 'doomed'), 'group_not_found');
      await expectCode(ctx.rheo.countDeadLetters(stream, 'doomed'), 'group_not_found');
      await expectCode(ctx.rheo.fetch(stream, 'doomed', { limit: 10 }), 'group_not_found');
      await expectCode(ctx.rheo.deleteGroup(stream, 'doomed', confirm), 'group_not_found');

      const after = await ctx.rheo.groupInfo(stream, 'kept');
      expect(after).toEqual(before);
      expect((await ctx.rheo.deadLetters(stream, 'kept')).map((d) => d.reason)).toEqual(['bad']);
      // The kept group's retry still comes back when due, and its live lease still settles.
      ctx.clock.advance(60_001);
      const due = await ctx.rheo.fetch(stream, 'kept', { limit: 10, leaseMs: LEASE_MS });
      // The retry and the expired live lease come back as attempt 2, beside the two never offered.
      expect(due.map((l) => l.attempt).sort()).toEqual([1, 1, 2, 2]);
      expect(await ctx.rheo.read(stream, { partition: 0 })).toHaveLength(3);
    });

    it("refuses the deleted group's leases: settle, renew and release change nothing", async () => {
      const stream = await newStream(ctx);
      await ctx.rheo.appendBatch(stream, events(4));
      await ctx.rheo.createGroup(stream, 'g');
      const leases = await ctx.rheo.fetch(stream, 'g', { limit: 4, leaseMs: LEASE_MS });
      await ctx.rheo.deleteGroup(stream, 'g', confirm);

      const settled = await ctx.rheo.settleMany([
        { kind: 'ack', lease: leases[0] },
        { kind: 'nack', lease: leases[1], delayMs: 0 },
        { kind: 'reject', lease: leases[2], reason: 'late' },
      ]);
      settled.forEach(refusedAsGone);
      (await ctx.rheo.renewMany([leases[3]], { leaseMs: LEASE_MS })).forEach(refusedAsGone);
      (await ctx.rheo.releaseMany([leases[3]])).forEach(refusedAsGone);
      // Nothing they did brought the group (or any of its state) back.
      expect(await ctx.rheo.backend.getGroup(stream, 'g')).toBeNull();
      expect(await ctx.rheo.listGroups(stream)).toEqual([]);
    });

    it('starts a group created again under the name fresh, and fences the old leases out of it', async () => {
      const stream = await newStream(ctx);
      await ctx.rheo.appendBatch(stream, events(3));
      await ctx.rheo.createGroup(stream, 'g', { maxAttempts: 3 });
      const [dead, ...old] = await ctx.rheo.fetch(stream, 'g', { limit: 3, leaseMs: LEASE_MS });
      await ctx.rheo.reject(dead, { reason: 'bad' });
      await ctx.rheo.deleteGroup(stream, 'g', confirm);

      await ctx.rheo.createGroup(stream, 'g', { maxAttempts: 7 });
      const info = await ctx.rheo.groupInfo(stream, 'g');
      expect(info).toMatchObject({ inflight: 0, deadLetters: 0, lag: { lag: 3 }, config: { maxAttempts: 7 } });
      expect(await ctx.rheo.deadLetters(stream, 'g')).toEqual([]);
      const fresh = await ctx.rheo.fetch(stream, 'g', { limit: 10, leaseMs: LEASE_MS });
      expect(fresh.map((l) => [l.event.sequence, l.attempt])).toEqual([
        [1, 1],
        [2, 1],
        [3, 1],
      ]);
      // A lease of the old group, on the same event, cannot settle the new group's delivery.
      for (const lease of old) refusedAsGone((await ctx.rheo.settleMany([{ kind: 'ack', lease }]))[0]);
      expect((await ctx.rheo.groupInfo(stream, 'g')).inflight).toBe(3);
      for (const lease of fresh) await ctx.rheo.ack(lease);
      expect((await ctx.rheo.lag(stream, 'g')).lag).toBe(0);
    });

    it('starts a group created again at the end after nothing of the old one', async () => {
      const stream = await newStream(ctx);
      await ctx.rheo.appendBatch(stream, events(2));
      await ctx.rheo.createGroup(stream, 'g', { start: 'beginning' });
      await ctx.rheo.deleteGroup(stream, 'g', confirm);
      await ctx.rheo.createGroup(stream, 'g', { start: 'end' });
      expect(await ctx.rheo.fetch(stream, 'g', { limit: 10 })).toEqual([]);
      const [e] = await ctx.rheo.appendBatch(stream, events(1));
      expect((await ctx.rheo.fetch(stream, 'g', { limit: 10 })).map((l) => l.event.id)).toEqual([e.id]);
    });

    it('leaves nothing behind when claims and settles race the delete: a group created again shows none of it', async () => {
      const stream = await newStream(ctx, 2);
      await ctx.rheo.appendBatch(stream, events(40, 2));
      for (let round = 0; round < 4; round++) {
        await ctx.rheo.createGroup(stream, 'g', { maxAttempts: 1 });
        const first = await ctx.rheo.fetch(stream, 'g', { limit: 6, leaseMs: LEASE_MS });
        const raced = await Promise.allSettled([
          ctx.rheo.fetch(stream, 'g', { limit: 10, leaseMs: LEASE_MS }),
          // maxAttempts 1: each nack dead-letters, so the settle writes dead letters as the delete runs.
          ctx.rheo.settleMany(first.map((lease, i) => (i % 2 ? { kind: 'nack', lease, delayMs: 0 } : { kind: 'reject', lease }))),
          ctx.rheo.deleteGroup(stream, 'g', confirm),
          ctx.rheo.fetch(stream, 'g', { limit: 10, leaseMs: LEASE_MS }),
        ]);
        expect(raced[2].status).toBe('fulfilled');
        expect(await ctx.rheo.backend.getGroup(stream, 'g')).toBeNull();
        await ctx.rheo.createGroup(stream, 'g');
        expect(await ctx.rheo.groupInfo(stream, 'g')).toMatchObject({ inflight: 0, deadLetters: 0, lag: { lag: 40 } });
        const all = await drain(ctx, stream, 'g', LEASE_MS, 50);
        expect(all).toHaveLength(40);
        expect(all.every((l) => l.attempt === 1)).toBe(true);
        await ctx.rheo.deleteGroup(stream, 'g', confirm);
      }
    });

    it('answers group_not_found for a missing group and stream_not_found for a missing stream', async () => {
      const stream = await newStream(ctx);
      await expectCode(ctx.rheo.deleteGroup(stream, 'never', confirm), 'group_not_found');
      await expectCode(ctx.rheo.deleteGroup(ctx.name('no-stream'), 'g', confirm), 'stream_not_found');
    });

    it('refuses without confirm: true, naming the field, and deletes nothing', async () => {
      const stream = await newStream(ctx);
      await ctx.rheo.createGroup(stream, 'g');
      await expectCode(ctx.rheo.deleteGroup(stream, 'g', {} as never), 'confirm_required', 'confirm');
      await expectCode(ctx.rheo.deleteGroup(stream, 'g', { confirm: 'yes' } as never), 'confirm_required', 'confirm');
      await expectCode(ctx.rheo.deleteGroup(stream, '', confirm), 'invalid_argument', 'group');
      expect((await ctx.rheo.listGroups(stream)).map((g) => g.group)).toEqual(['g']);
    });
  });
}
