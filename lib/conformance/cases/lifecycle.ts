import type { Backend } from '../../backends/backend';
import { createCapabilities } from '../../backends/capabilities';
import { Rheo } from '../../core/rheo';
import { ConformanceContext, expectCode, newStream } from '../context';

export function lifecycleCases(ctx: ConformanceContext, unreachable: Backend): void {
  describe('lifecycle and errors', () => {
    it('declares validated capabilities with the invariants true, the same as its unreachable twin', () => {
      const caps = ctx.backend.capabilities;
      expect(caps.guarantees.atLeastOnce).toBe(true);
      expect(caps.guarantees.leaseFencing).toBe(true);
      for (const section of [caps.guarantees, caps.mechanisms]) {
        for (const v of Object.values(section)) expect(typeof v).toBe('boolean');
      }
      // Round-trips through the validator: every flag known, every value a boolean.
      expect(createCapabilities(caps)).toEqual(caps);
      expect(unreachable.capabilities).toEqual(caps);
      expect(typeof ctx.backend.name).toBe('string');
      expect(ctx.backend.clock).toBe(ctx.clock);
    });

    it('pings', async () => {
      await expect(ctx.rheo.ping()).resolves.toBeUndefined();
      await expect(ctx.backend.ping()).resolves.toBeUndefined();
    });

    it('reports backend_unavailable when the store is unreachable', async () => {
      await expectCode(unreachable.ping(), 'backend_unavailable');
      await expectCode(new Rheo(unreachable).ping(), 'backend_unavailable');
    });

    it('creates a stream once: a duplicate is already_exists, ifNotExists returns the existing one', async () => {
      const stream = ctx.name('s');
      const info = await ctx.rheo.createStream(stream, { partitions: 1 });
      expect(info).toMatchObject({ name: stream, partitions: 1 });
      expect(info.createdAt.getTime()).toBe(ctx.clock.now());
      await expectCode(ctx.rheo.createStream(stream), 'already_exists');
      await expect(ctx.rheo.createStream(stream, { ifNotExists: true })).resolves.toMatchObject({ name: stream, partitions: 1 });
      const listed = await ctx.rheo.listStreams();
      expect(listed.filter((s) => s.name === stream)).toHaveLength(1);
    });

    it('creates a group once: a duplicate is already_exists, ifNotExists returns the existing one', async () => {
      const stream = await newStream(ctx);
      const cfg = await ctx.rheo.createGroup(stream, 'g', { maxAttempts: 3, retry: { initialMs: 10, factor: 3, maxMs: 1000 } });
      expect(cfg).toMatchObject({ stream, group: 'g', maxAttempts: 3, ordering: 'none', retry: { initialMs: 10, factor: 3, maxMs: 1000 } });
      await expectCode(ctx.rheo.createGroup(stream, 'g'), 'already_exists');
      await expect(ctx.rheo.createGroup(stream, 'g', { ifNotExists: true, maxAttempts: 9 })).resolves.toMatchObject({ maxAttempts: 3 });
      await ctx.rheo.createGroup(stream, 'a');
      expect((await ctx.rheo.listGroups(stream)).map((g) => g.group)).toEqual(['a', 'g']);
      const info = await ctx.rheo.groupInfo(stream, 'g');
      expect(info.config).toMatchObject({ maxAttempts: 3, ordering: 'none' });
    });

    it('returns stream and group records the caller cannot use to change the store', async () => {
      const stream = ctx.name('s');
      const info = await ctx.rheo.createStream(stream, { partitions: 2 });
      const cfg = await ctx.rheo.createGroup(stream, 'g', { retry: { initialMs: 10, maxMs: 20 } });
      const created = info.createdAt.getTime();
      info.createdAt.setTime(0);
      info.partitions = 9;
      cfg.createdAt.setTime(0);
      cfg.retry.maxMs = 1;
      cfg.maxAttempts = 99;
      (await ctx.rheo.listStreams()).find((s) => s.name === stream)!.createdAt.setTime(0);
      (await ctx.rheo.listGroups(stream))[0].createdAt.setTime(0);
      const again = (await ctx.rheo.listStreams()).find((s) => s.name === stream)!;
      expect(again).toEqual({ name: stream, partitions: 2, createdAt: new Date(created) });
      const [group] = await ctx.rheo.listGroups(stream);
      expect(group).toMatchObject({ maxAttempts: 5, retry: { initialMs: 10, maxMs: 20 }, createdAt: new Date(created) });
      expect((await ctx.rheo.groupInfo(stream, 'g')).config).toEqual(group);
    });

    it('fails with stream_not_found / group_not_found on missing names', async () => {
      const missing = ctx.name('missing');
      await expectCode(ctx.rheo.createGroup(missing, 'g'), 'stream_not_found');
      await expectCode(ctx.rheo.fetch(missing, 'g'), 'stream_not_found');
      await expectCode(ctx.rheo.append(missing, { payload: 1 }), 'stream_not_found');
      await expectCode(ctx.rheo.lag(missing, 'g'), 'stream_not_found');
      const stream = await newStream(ctx);
      await expectCode(ctx.rheo.fetch(stream, 'nope'), 'group_not_found');
      await expectCode(ctx.rheo.lag(stream, 'nope'), 'group_not_found');
      await expectCode(ctx.rheo.groupInfo(stream, 'nope'), 'group_not_found');
      await expectCode(ctx.rheo.deadLetters(stream, 'nope'), 'group_not_found');
      expect((await ctx.rheo.listStreams()).some((s) => s.name === missing)).toBe(false);
    });
  });
}
