import { DEFAULT_RETRY } from '../../core/backoff';
import { NO_FLOW_LIMITS } from '../../core/flow';
import { ConformanceContext, expectCode, LEASE_MS, newStream } from '../context';

/**
 * A new stream or group may not have `/` in its name: configuration, health and
 * metrics key a consumer by `'stream/group'`, which a `/` makes ambiguous. Names
 * that already exist in the store (written before the rule, here straight through
 * the backend) keep working through the facade.
 */
export function nameCases(ctx: ConformanceContext): void {
  describe('names with /', () => {
    it("refuses a new stream or group whose name holds '/', naming the field, and creates nothing", async () => {
      const stream = await newStream(ctx);
      const slashed = `${ctx.name('s')}/eu`;
      const before = (await ctx.rheo.listStreams()).map((s) => s.name);
      await expectCode(ctx.rheo.createStream(slashed), 'invalid_argument', 'stream');
      await expectCode(ctx.rheo.createStream(slashed, { partitions: 2, ifNotExists: true }), 'invalid_argument', 'stream');
      expect((await ctx.rheo.listStreams()).map((s) => s.name)).toEqual(before);
      expect(await ctx.backend.getStream(slashed)).toBeNull();
      await expectCode(ctx.rheo.createGroup(stream, 'billing/eu'), 'invalid_argument', 'group');
      await expectCode(ctx.rheo.createGroup(stream, 'billing/eu', { ifNotExists: true }), 'invalid_argument', 'group');
      expect(await ctx.rheo.listGroups(stream)).toEqual([]);
    });

    it("keeps a stream and a group whose names hold '/', created before the rule, working through the facade", async () => {
      const stream = `${ctx.name('s')}/eu`;
      const group = 'billing/v2';
      await ctx.rheo.init();
      await ctx.backend.createStream(stream, 2);
      await ctx.backend.createGroup({
        stream,
        group,
        start: { kind: 'beginning' },
        maxAttempts: 3,
        retry: { ...DEFAULT_RETRY },
        ordering: 'none',
        ...NO_FLOW_LIMITS,
      });

      // Declaring them again (a module's streams, a consumer's group) finds them.
      expect(await ctx.rheo.createStream(stream, { partitions: 2, ifNotExists: true })).toMatchObject({ name: stream, partitions: 2 });
      expect(await ctx.rheo.createGroup(stream, group, { ifNotExists: true })).toMatchObject({ stream, group, maxAttempts: 3 });
      // A new group of such a stream is fine: only the new name is checked.
      await ctx.rheo.createGroup(stream, 'audit');

      const [a] = await ctx.rheo.appendBatch(stream, [
        { key: 'k/1', type: 'order/placed', payload: { n: 1 }, partition: 0 },
        { payload: { n: 2 }, partition: 1 },
      ]);
      expect(a).toMatchObject({ stream, key: 'k/1', type: 'order/placed' });
      expect((await ctx.rheo.lag(stream, group)).lag).toBe(2);
      const leases = await ctx.rheo.fetch(stream, group, { limit: 10, leaseMs: LEASE_MS });
      expect(leases.map((l) => [l.stream, l.group, l.event.payload])).toEqual(
        expect.arrayContaining([
          [stream, group, { n: 1 }],
          [stream, group, { n: 2 }],
        ]),
      );
      await ctx.rheo.ack(leases[0]);
      await ctx.rheo.settleMany([{ kind: 'ack', lease: leases[1] }]);
      expect((await ctx.rheo.lag(stream, group)).lag).toBe(0);
      expect((await ctx.rheo.groupInfo(stream, group)).lag.lag).toBe(0);
      expect((await ctx.rheo.lag(stream, 'audit')).lag).toBe(2);
      expect(await ctx.rheo.query({ stream, where: { key: 'k/1' } })).toEqual([a]);
      expect((await ctx.rheo.listStreams()).map((s) => s.name)).toContain(stream);
      expect((await ctx.rheo.listGroups(stream)).map((g) => g.group).sort()).toEqual(['audit', group]);
    });
  });
}
