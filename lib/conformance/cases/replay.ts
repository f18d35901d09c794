import { ConformanceContext, drain, events, expectCode, newStream, positions } from '../context';

export function replayCases(ctx: ConformanceContext): void {
  const exact = ctx.caps.guarantees.contiguousFrontier;

  /** A stream whose group `g` has acked all `n` events (and group `other` has acked none). */
  async function consumed(n: number, partitions = 1): Promise<{ stream: string; times: number[] }> {
    const stream = await newStream(ctx, partitions);
    const times: number[] = [];
    for (let i = 0; i < n; i++) {
      times.push(ctx.clock.now());
      await ctx.rheo.append(stream, { partition: i % partitions, type: i % 2 ? 'odd' : 'even', payload: { i } });
      ctx.clock.advance(1000);
    }
    await ctx.rheo.createGroup(stream, 'g');
    await ctx.rheo.createGroup(stream, 'other');
    for (const l of await drain(ctx, stream, 'g')) await ctx.rheo.ack(l);
    expect((await ctx.rheo.lag(stream, 'g')).lag).toBe(0);
    return { stream, times };
  }

  describe('replay and reset', () => {
    it('replays after a sequence: the later events are delivered again, the group only', async () => {
      const { stream } = await consumed(4);
      const other = await ctx.rheo.groupInfo(stream, 'other');
      expect(await ctx.rheo.replay(stream, 'g', { afterSequence: 1 })).toBe(3);
      if (exact) expect((await ctx.rheo.lag(stream, 'g')).partitions[0]).toMatchObject({ frontier: 1, lag: 3 });
      const again = await drain(ctx, stream, 'g');
      expect(positions(again)).toEqual(['0:2', '0:3', '0:4']);
      for (const l of again) await ctx.rheo.ack(l);
      expect((await ctx.rheo.lag(stream, 'g')).lag).toBe(0);
      expect(await ctx.rheo.groupInfo(stream, 'other')).toEqual(other);
      expect(await ctx.rheo.replay(stream, 'g', { afterSequence: 0 })).toBe(4);
      expect(positions(await drain(ctx, stream, 'g'))).toEqual(['0:1', '0:2', '0:3', '0:4']);
    });

    if (ctx.caps.guarantees.partitions) {
      it('replays only the chosen partitions', async () => {
        const { stream } = await consumed(6, 2);
        expect(await ctx.rheo.replay(stream, 'g', { afterSequence: 0, partitions: [1] })).toBe(3);
        expect(positions(await drain(ctx, stream, 'g'))).toEqual(['1:1', '1:2', '1:3']);
      });
    }

    it('replays from a time', async () => {
      const { stream, times } = await consumed(4);
      expect(await ctx.rheo.replay(stream, 'g', { from: new Date(times[2]) })).toBe(2);
      expect(positions(await drain(ctx, stream, 'g'))).toEqual(['0:3', '0:4']);
    });

    it('replays the events a query matches, and only those', async () => {
      const { stream } = await consumed(6);
      expect(await ctx.rheo.replay(stream, 'g', { query: { where: { type: 'odd' } } })).toBe(3);
      if (exact) expect((await ctx.rheo.lag(stream, 'g')).partitions[0]).toMatchObject({ frontier: 1, lag: 5 });
      const again = await drain(ctx, stream, 'g');
      expect(positions(again)).toEqual(['0:2', '0:4', '0:6']);
      for (const l of again) await ctx.rheo.ack(l);
      expect((await ctx.rheo.lag(stream, 'g')).lag).toBe(0);
    });

    it('replays dead letters too: they are delivered again and leave the dead-letter list', async () => {
      const stream = await newStream(ctx);
      await ctx.rheo.appendBatch(stream, events(2));
      await ctx.rheo.createGroup(stream, 'g');
      for (const l of await drain(ctx, stream, 'g')) await ctx.rheo.reject(l, { reason: 'x' });
      expect(await ctx.rheo.replay(stream, 'g', { afterSequence: 0 })).toBe(2);
      expect(await ctx.rheo.deadLetters(stream, 'g')).toEqual([]);
      expect(positions(await drain(ctx, stream, 'g'))).toEqual(['0:1', '0:2']);
    });

    it('refuses reset without confirm and changes nothing', async () => {
      const { stream } = await consumed(2);
      const before = await ctx.rheo.groupInfo(stream, 'g');
      await expectCode(ctx.rheo.reset(stream, 'g', { confirm: false }), 'confirm_required', 'confirm');
      await expectCode(ctx.rheo.reset(stream, 'g', {} as never), 'confirm_required', 'confirm');
      await expectCode(ctx.rheo.reset(stream, 'g', undefined as never), 'confirm_required', 'confirm');
      expect(await ctx.rheo.groupInfo(stream, 'g')).toEqual(before);
      expect(await ctx.rheo.fetch(stream, 'g')).toEqual([]);
    });

    it('resets a group to a start position; events survive; other groups are untouched', async () => {
      const { stream } = await consumed(3);
      const [l] = await ctx.rheo.fetch(stream, 'other');
      await ctx.rheo.reject(l, { reason: 'other group' });
      const other = await ctx.rheo.groupInfo(stream, 'other');
      const log = await ctx.rheo.read(stream);

      await ctx.rheo.reset(stream, 'g', { confirm: true });
      expect((await ctx.rheo.lag(stream, 'g')).partitions[0]).toMatchObject({ frontier: 0, lag: 3 });
      const again = await drain(ctx, stream, 'g');
      expect(again.map((x) => [x.event.sequence, x.attempt])).toEqual([
        [1, 1],
        [2, 1],
        [3, 1],
      ]);
      for (const x of again.slice(0, 2)) await ctx.rheo.reject(x, { reason: 'r' });

      await ctx.rheo.reset(stream, 'g', { confirm: true, start: { afterSequence: 2 } });
      expect(await ctx.rheo.deadLetters(stream, 'g')).toEqual([]);
      expect((await ctx.rheo.groupInfo(stream, 'g')).inflight).toBe(0);
      // The lease taken before the reset is forgotten: it can no longer settle.
      await expectCode(ctx.rheo.ack(again[2]), 'stale_lease');
      expect(positions(await drain(ctx, stream, 'g'))).toEqual(['0:3']);

      await ctx.rheo.reset(stream, 'g', { confirm: true, start: 'end' });
      expect((await ctx.rheo.lag(stream, 'g')).lag).toBe(0);
      expect(await ctx.rheo.fetch(stream, 'g')).toEqual([]);

      expect(await ctx.rheo.read(stream)).toEqual(log);
      expect(await ctx.rheo.groupInfo(stream, 'other')).toEqual(other);
    });
  });
}
