import { ManualClock } from '../../core/clock';
import { heldOf } from '../../core/fetched';
import type { AppendInput, GroupOptions, Lease } from '../../core/types';
import { ConformanceContext, expectCode, LEASE_MS, newStream, otherProcesses } from '../context';

/**
 * Flow limits (docs/adr/049-flow-control.md): `ordering: 'key'`, `keyConcurrency`,
 * `groupConcurrency` and `rateLimit`, judged by the store at each claim, the same
 * for every process. Only for backends that declare `guarantees.flowControl`.
 */
export function flowCases(ctx: ConformanceContext): void {
  if (!ctx.caps.guarantees.flowControl) return;
  const otherProcess = otherProcesses(ctx);

  /** Events named like `a1` (key a, first of its key) or `-1` (no key), all in partition 0 unless the stream has more. */
  function named(...names: string[]): AppendInput[] {
    return names.map((n) => ({
      ...(n[0] === '-' ? {} : { key: n.replace(/\d+$/, '') }),
      type: 'test',
      payload: { name: n },
    }));
  }

  function names(leases: Lease[]): string[] {
    return leases.map((l) => (l.event.payload as { name: string }).name);
  }

  async function setup(options: GroupOptions, appended: AppendInput[], partitions = 1): Promise<string> {
    const stream = await newStream(ctx, partitions);
    await ctx.rheo.createGroup(stream, 'g', { maxAttempts: 3, retry: { initialMs: 1000, factor: 1, maxMs: 1000 }, ...options });
    if (appended.length) await ctx.rheo.appendBatch(stream, appended);
    return stream;
  }

  const take = (stream: string, limit = 10, rheo = ctx.rheo) => rheo.fetch(stream, 'g', { limit, leaseMs: LEASE_MS });
  const ack = (leases: Lease[], name: string) => ctx.rheo.ack(leases.find((l) => names([l])[0] === name)!);

  describe("ordering: 'key'", () => {
    it("claims only each key's head, runs other keys of the partition beside it, and leaves keyless events unordered", async () => {
      const stream = await setup({ ordering: 'key' }, named('a1', 'a2', 'b1', '-1', 'a3', 'b2', '-2'));
      const first = await take(stream);
      expect(names(first).sort()).toEqual(['-1', '-2', 'a1', 'b1']);
      expect(heldOf(first)?.waitingForKey).toBe(3);
      expect((await ctx.rheo.groupInfo(stream, 'g')).waitingForKey).toBe(3);
      expect(await take(stream)).toEqual([]);
      await ack(first, 'a1');
      const second = await take(stream);
      expect(names(second)).toEqual(['a2']);
      await ack(second, 'a2');
      await ack(first, 'b1');
      expect(names(await take(stream)).sort()).toEqual(['a3', 'b2']);
      expect((await ctx.rheo.groupInfo(stream, 'g')).waitingForKey).toBe(0);
    });

    it('holds another process to the same rule: a key leased by one is not claimed by the other', async () => {
      const stream = await setup({ ordering: 'key' }, named('a1', 'a2', 'b1', 'b2'));
      const other = await otherProcess();
      const mine = await take(stream, 1);
      expect(names(mine)).toEqual(['a1']);
      expect(names(await take(stream, 10, other))).toEqual(['b1']);
      expect(await take(stream, 10, other)).toEqual([]);
      await ctx.rheo.ack(mine[0]);
      expect(names(await take(stream, 10, other))).toEqual(['a2']);
    });

    it('a head waiting for its retry holds only its key; a dead-lettered head gives its key to the next event', async () => {
      const stream = await setup({ ordering: 'key', maxAttempts: 2 }, named('a1', 'a2', 'b1', 'b2'));
      const first = await take(stream);
      expect(names(first).sort()).toEqual(['a1', 'b1']);
      await ctx.rheo.nack(
        first.find((l) => names([l])[0] === 'a1')!,
        { delayMs: 5000 },
      );
      await ack(first, 'b1');
      expect(names(await take(stream))).toEqual(['b2']);
      ctx.clock.advance(5000);
      const retried = await take(stream);
      expect(names(retried)).toEqual(['a1']);
      expect(retried[0].attempt).toBe(2);
      await ctx.rheo.reject(retried[0], { reason: 'bad' });
      const next = await take(stream);
      expect(names(next)).toEqual(['a2']);
      expect(next[0].attempt).toBe(1);
    });

    it('an expired head is claimed again, its key still held: the later event waits', async () => {
      const stream = await setup({ ordering: 'key' }, named('a1', 'a2'));
      expect(names(await take(stream))).toEqual(['a1']);
      ctx.clock.advance(LEASE_MS);
      const again = await take(stream);
      expect(names(again)).toEqual(['a1']);
      expect(again[0].attempt).toBe(2);
      await ctx.rheo.ack(again[0]);
      expect(names(await take(stream))).toEqual(['a2']);
    });

    it("passes a hot key's long run to reach the heads of other keys: one claim takes many keys", async () => {
      const hot = Array.from({ length: 300 }, (_, i) => `h${i + 1}`);
      const cold = Array.from({ length: 20 }, (_, i) => `c${i}x1`);
      const stream = await setup({ ordering: 'key' }, named(...hot, ...cold));
      const got = names(await take(stream, 21));
      expect(got).toHaveLength(21);
      expect(got.filter((n) => n.startsWith('h'))).toEqual(['h1']);
      expect((await ctx.rheo.groupInfo(stream, 'g')).waitingForKey).toBe(299);
    });

    it('a delayed head holds its key until its time; the key goes on after it', async () => {
      const stream = await setup({ ordering: 'key' }, []);
      await ctx.rheo.append(stream, { key: 'a', payload: { name: 'a1' }, delayMs: 5000 });
      await ctx.rheo.appendBatch(stream, named('a2', 'b1'));
      expect(names(await take(stream))).toEqual(['b1']);
      ctx.clock.advance(5000);
      const head = await take(stream);
      expect(names(head)).toEqual(['a1']);
      await ctx.rheo.ack(head[0]);
      expect(names(await take(stream))).toEqual(['a2']);
    });

    it('replay, redrive and skip keep the rule', async () => {
      const stream = await setup({ ordering: 'key', maxAttempts: 1 }, named('a1', 'a2', 'a3', 'b1'));
      // Reject a1 (dead letter), a2 runs; redrive a1: it waits for a2, then runs before a3.
      const first = await take(stream);
      expect(names(first).sort()).toEqual(['a1', 'b1']);
      const a1 = first.find((l) => names([l])[0] === 'a1')!;
      await ctx.rheo.reject(a1, { reason: 'bad' });
      const second = await take(stream);
      expect(names(second)).toEqual(['a2']);
      expect(await ctx.rheo.redrive(stream, 'g', { eventIds: [a1.event.id] })).toBe(1);
      expect(await take(stream)).toEqual([]);
      await ctx.rheo.ack(second[0]);
      const redriven = await take(stream);
      expect(names(redriven)).toEqual(['a1']);
      // a3 waits; a reschedule of it is refused, a skip ends it.
      const a3 = (await ctx.rheo.read(stream, { partition: 0 })).find((e) => (e.payload as { name: string }).name === 'a3')!;
      const [refused] = await ctx.rheo.reschedule(stream, 'g', [a3.id], { delayMs: 0 });
      expect(refused.ok).toBe(false);
      const [skipped] = await ctx.rheo.skip(stream, 'g', [a3.id], { reason: 'not needed' });
      expect(skipped).toEqual({ ok: true });
      await ctx.rheo.ack(redriven[0]);
      await ack(first, 'b1');
      expect(await take(stream)).toEqual([]);
      // Replay from the start: each key's head only, again.
      await ctx.rheo.replay(stream, 'g', { afterSequence: 0 });
      expect(names(await take(stream)).sort()).toEqual(['a1', 'b1']);
      expect((await ctx.rheo.groupInfo(stream, 'g')).waitingForKey).toBe(2);
    });
  });

  describe('keyConcurrency', () => {
    it('runs at most N of one key at once, the rest in order as places free; other keys unaffected', async () => {
      const stream = await setup({ keyConcurrency: 2 }, named('a1', 'a2', 'a3', 'a4', 'b1'));
      const first = await take(stream);
      expect(names(first).sort()).toEqual(['a1', 'a2', 'b1']);
      await ack(first, 'a2');
      expect(names(await take(stream))).toEqual(['a3']);
      await ack(first, 'a1');
      expect(names(await take(stream))).toEqual(['a4']);
    });

    it('is refused beside an ordering, and cannot be added in place; its number can change', async () => {
      const stream = await newStream(ctx, 1);
      await expectCode(ctx.rheo.createGroup(stream, 'x', { ordering: 'key', keyConcurrency: 2 }), 'invalid_argument', 'keyConcurrency');
      await ctx.rheo.createGroup(stream, 'plain');
      await expectCode(ctx.rheo.updateGroup(stream, 'plain', { keyConcurrency: 2 }), 'invalid_argument', 'keyConcurrency');
      await ctx.rheo.createGroup(stream, 'g', { keyConcurrency: 1 });
      await ctx.rheo.appendBatch(stream, named('a1', 'a2', 'a3'));
      expect(names(await take(stream))).toEqual(['a1']);
      expect((await ctx.rheo.updateGroup(stream, 'g', { keyConcurrency: 3 })).keyConcurrency).toBe(3);
      expect(names(await take(stream)).sort()).toEqual(['a2', 'a3']);
    });
  });

  describe('groupConcurrency', () => {
    it('holds the live leases of the group, across processes, to N; an expired lease frees its place', async () => {
      const stream = await setup({ groupConcurrency: 3 }, named('-1', '-2', '-3', '-4', '-5', '-6'), 2);
      const other = await otherProcess();
      const first = await take(stream, 2);
      expect(first).toHaveLength(2);
      const second = await take(stream, 10, other);
      expect(second).toHaveLength(1);
      expect(heldOf(second)).toEqual({ limit: 'group_concurrency' });
      const none = await take(stream);
      expect(none).toEqual([]);
      expect(heldOf(none)?.limit).toBe('group_concurrency');
      await ctx.rheo.ack(first[0]);
      expect(await take(stream, 10, other)).toHaveLength(1);
      ctx.clock.advance(LEASE_MS);
      expect(await take(stream)).toHaveLength(3);
      expect((await ctx.rheo.groupInfo(stream, 'g')).inflight).toBe(3);
    });
  });

  describe('rateLimit', () => {
    it('starts at most max per window of the store clock, says when the next may start, and burns no attempt', async () => {
      const stream = await setup({ rateLimit: { max: 5, perMs: 1000 } }, named(...Array.from({ length: 12 }, (_, i) => `-${i}`)));
      const other = await otherProcess();
      expect(await take(stream, 3)).toHaveLength(3);
      ctx.clock.advance(400);
      const second = await take(stream, 10, other);
      expect(second).toHaveLength(2);
      expect(heldOf(second)?.limit).toBe('rate_limit');
      const held = await take(stream);
      expect(held).toEqual([]);
      expect(heldOf(held)).toEqual({ limit: 'rate_limit', retryInMs: 600 });
      ctx.clock.advance(600);
      // The first three left the window; the two of 400 ms in stay.
      const third = await take(stream, 10, other);
      expect(third).toHaveLength(3);
      expect(third.every((l) => l.attempt === 1)).toBe(true);
      expect(heldOf(await take(stream))).toEqual({ limit: 'rate_limit', retryInMs: 400 });
    });
  });

  describe('rateLimit across clocks', () => {
    // Distributed backends: a second process whose clock reads 300 ms behind the first's.
    if (!ctx.open) return;
    it("counts a claim whose clock is behind the last claim at that claim's time: no window holds more than max", async () => {
      const stream = await setup({ rateLimit: { max: 4, perMs: 1000 } }, named(...Array.from({ length: 12 }, (_, i) => `-${i}`)));
      const behind = new ManualClock(ctx.clock.now() - 300);
      const other = await otherProcess(behind);
      expect(await take(stream, 2)).toHaveLength(2);
      ctx.clock.advance(1000);
      behind.advance(1000);
      const mine = await take(stream, 2);
      expect(mine).toHaveLength(2);
      const theirs = await take(stream, 10, other);
      expect(theirs).toHaveLength(2);
      // Stamped no earlier than the claim before it, whatever its own clock said.
      expect(theirs[0].leasedAt.getTime()).toBeGreaterThanOrEqual(mine[0].leasedAt.getTime());
      ctx.clock.advance(700);
      behind.advance(700);
      const held = await take(stream);
      expect(held).toEqual([]);
      expect(heldOf(held)?.limit).toBe('rate_limit');
    });
  });

  describe('flow settings', () => {
    it('are stored, shown to every process, changed in place, and refused naming the field when wrong', async () => {
      const stream = await newStream(ctx, 1);
      const created = await ctx.rheo.createGroup(stream, 'g', {
        ordering: 'key',
        groupConcurrency: 8,
        rateLimit: { max: 200, perMs: 1000 },
      });
      expect(created).toMatchObject({ ordering: 'key', keyConcurrency: null, groupConcurrency: 8, rateLimit: { max: 200, perMs: 1000 } });
      const other = await otherProcess();
      expect((await other.groupInfo(stream, 'g')).config).toMatchObject({ groupConcurrency: 8, rateLimit: { max: 200, perMs: 1000 } });
      const changed = await ctx.rheo.updateGroup(stream, 'g', { groupConcurrency: null, rateLimit: { max: 1, perMs: 60_000 } });
      expect(changed).toMatchObject({ groupConcurrency: null, rateLimit: { max: 1, perMs: 60_000 } });
      expect((await other.groupInfo(stream, 'g')).config).toMatchObject({ groupConcurrency: null, rateLimit: { max: 1, perMs: 60_000 } });
      await ctx.rheo.appendBatch(stream, named('a1', 'b1'));
      expect(await take(stream, 10, other)).toHaveLength(1);
      await expectCode(ctx.rheo.createGroup(stream, 'bad', { groupConcurrency: 0 }), 'invalid_argument', 'groupConcurrency');
      await expectCode(ctx.rheo.createGroup(stream, 'bad', { rateLimit: { max: 5 } as never }), 'invalid_argument', 'rateLimit.perMs');
      await expectCode(
        ctx.rheo.createGroup(stream, 'bad', { rateLimit: { max: 5, perMs: 10, by: 'key' } as never }),
        'invalid_argument',
        'rateLimit.by',
      );
      await expectCode(ctx.rheo.createGroup(stream, 'bad', { ordering: 'keys' as never }), 'invalid_argument', 'ordering');
      expect((await ctx.rheo.listGroups(stream)).map((g) => g.group)).toEqual(['g']);
    });
  });
}
