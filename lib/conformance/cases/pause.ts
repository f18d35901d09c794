import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { CHANNELS, type GroupPauseMessage } from '../../core/diagnostics';
import { isPausedAnswer } from '../../core/fetched';
import { Rheo } from '../../core/rheo';
import { ConformanceContext, events, expectCode, LEASE_MS, newStream, positions, otherProcesses } from '../context';

/**
 * `pauseGroup` / `resumeGroup` (docs/adr/046-pausing-a-group.md): a pause is
 * stored, so every process obeys it from the moment it is set; held leases still
 * renew and settle; the store's clock ends an `until`; a resume wakes waiters.
 * The other process is a second backend on the same store where there is one,
 * else a second Rheo over the same backend.
 */
export function pauseCases(ctx: ConformanceContext): void {
  const otherProcess = otherProcesses(ctx);

  async function setup(n: number, options: { partitions?: number; ordering?: 'partition' } = {}): Promise<string> {
    const stream = await newStream(ctx, options.partitions ?? 1);
    await ctx.rheo.createGroup(stream, 'g', {
      maxAttempts: 3,
      retry: { initialMs: 1000, factor: 1, maxMs: 1000 },
      ordering: options.ordering,
    });
    if (n > 0) await ctx.rheo.appendBatch(stream, events(n, options.partitions ?? 1));
    return stream;
  }

  async function fetchFrom(rheo: Rheo, stream: string, limit = 10) {
    return rheo.fetch(stream, 'g', { limit, leaseMs: LEASE_MS });
  }

  describe('pauseGroup and resumeGroup', () => {
    it('holds every process back from claiming, answers marked paused, and claims again at resume', async () => {
      const stream = await setup(4, { partitions: 2 });
      const other = await otherProcess();
      const pause = await ctx.rheo.pauseGroup(stream, 'g', { reason: 'provider down', by: 'ops@example.com' });
      expect(pause).toEqual({ pausedAt: new Date(ctx.clock.now()), until: null, reason: 'provider down', by: 'ops@example.com' });
      for (const rheo of [ctx.rheo, other]) {
        const answer = await fetchFrom(rheo, stream);
        expect(answer).toEqual([]);
        expect(isPausedAnswer(answer)).toBe(true);
        expect((await rheo.groupInfo(stream, 'g')).paused).toEqual(pause);
      }
      // Appends go on and lag grows.
      await ctx.rheo.appendBatch(stream, events(2, 2));
      expect((await other.lag(stream, 'g')).lag).toBe(6);
      expect(await other.resumeGroup(stream, 'g')).toBe(true);
      expect((await ctx.rheo.groupInfo(stream, 'g')).paused).toBeNull();
      const claimed = await fetchFrom(ctx.rheo, stream);
      expect(claimed).toHaveLength(6);
      expect(isPausedAnswer(claimed)).toBe(false);
      // Nothing left: an empty answer that is not a paused one.
      const empty = await fetchFrom(other, stream);
      expect(empty).toEqual([]);
      expect(isPausedAnswer(empty)).toBe(false);
      expect(await ctx.rheo.resumeGroup(stream, 'g')).toBe(false);
    });

    it('lets held leases renew and settle while paused; what they leave due waits for the resume', async () => {
      const stream = await setup(4);
      const [acked, nacked, released, expiring] = await fetchFrom(ctx.rheo, stream);
      await ctx.rheo.pauseGroup(stream, 'g');
      const renewed = await ctx.rheo.renewMany([acked, nacked], { leaseMs: LEASE_MS * 3 });
      expect(renewed.map((r) => r.ok)).toEqual([true, true]);
      await ctx.rheo.ack(acked);
      await ctx.rheo.nack(nacked, { delayMs: 0, reason: 'later' });
      expect((await ctx.rheo.releaseMany([released])).map((r) => r.ok)).toEqual([true]);
      ctx.clock.advance(LEASE_MS + 1); // `expiring` expires; nothing re-claims it while paused
      expect(await fetchFrom(ctx.rheo, stream)).toEqual([]);
      const info = await ctx.rheo.groupInfo(stream, 'g');
      expect(info.inflight).toBe(0);
      expect(info.deadLetters).toBe(0);
      expect(info.lag.lag).toBe(3);
      await ctx.rheo.resumeGroup(stream, 'g');
      const again = (await fetchFrom(ctx.rheo, stream)).sort((a, b) => a.event.sequence - b.event.sequence);
      expect(again.map((l) => [l.event.sequence, l.attempt])).toEqual([
        [nacked.event.sequence, 2],
        [released.event.sequence, 1],
        [expiring.event.sequence, 2],
      ]);
    });

    it('leaves a lease that expires on its last attempt alone until the resume, which dead-letters it', async () => {
      const stream = await setup(1);
      for (let attempt = 1; attempt < 3; attempt++) {
        const [lease] = await fetchFrom(ctx.rheo, stream);
        await ctx.rheo.nack(lease, { delayMs: 0 });
      }
      const [last] = await fetchFrom(ctx.rheo, stream);
      expect(last.attempt).toBe(3);
      await ctx.rheo.pauseGroup(stream, 'g');
      ctx.clock.advance(LEASE_MS + 1);
      expect(await fetchFrom(ctx.rheo, stream)).toEqual([]);
      expect((await ctx.rheo.groupInfo(stream, 'g')).deadLetters).toBe(0);
      await ctx.rheo.resumeGroup(stream, 'g');
      expect(await fetchFrom(ctx.rheo, stream)).toEqual([]);
      expect((await ctx.rheo.deadLetters(stream, 'g')).map((d) => d.reason)).toEqual(['lease expired on attempt 3 of 3']);
    });

    it('resumes by itself when the store clock reaches `until`', async () => {
      const stream = await setup(2);
      const until = new Date(ctx.clock.now() + 5000);
      expect((await ctx.rheo.pauseGroup(stream, 'g', { until })).until).toEqual(until);
      ctx.clock.advance(4999);
      expect(isPausedAnswer(await fetchFrom(ctx.rheo, stream))).toBe(true);
      expect((await ctx.rheo.groupInfo(stream, 'g')).paused?.until).toEqual(until);
      ctx.clock.advance(1);
      expect((await ctx.rheo.groupInfo(stream, 'g')).paused).toBeNull();
      expect(await fetchFrom(ctx.rheo, stream)).toHaveLength(2);
      expect(await ctx.rheo.resumeGroup(stream, 'g')).toBe(false);
    });

    it('replaces a pause with a new one; pauses only the named group; survives reset and ordering', async () => {
      const stream = await setup(2, { ordering: 'partition' });
      await ctx.rheo.createGroup(stream, 'other');
      await ctx.rheo.pauseGroup(stream, 'g', { until: new Date(ctx.clock.now() + 1000), reason: 'first' });
      ctx.clock.advance(10);
      const second = await ctx.rheo.pauseGroup(stream, 'g', { reason: 'second' });
      expect(second).toEqual({ pausedAt: new Date(ctx.clock.now()), until: null, reason: 'second', by: null });
      ctx.clock.advance(2000); // past the first pause's until: the second holds
      expect(await fetchFrom(ctx.rheo, stream)).toEqual([]);
      expect(positions(await ctx.rheo.fetch(stream, 'other', { limit: 10 }))).toEqual(['0:1', '0:2']);
      await ctx.rheo.reset(stream, 'g', { confirm: true, start: 'beginning' });
      expect((await ctx.rheo.groupInfo(stream, 'g')).paused).toEqual(second);
      expect(await fetchFrom(ctx.rheo, stream)).toEqual([]);
      await ctx.rheo.resumeGroup(stream, 'g');
      expect(positions(await fetchFrom(ctx.rheo, stream))).toEqual(['0:1']);
    });

    it('ends with the group: a group deleted while paused and created again is not paused', async () => {
      const stream = await setup(1);
      await ctx.rheo.pauseGroup(stream, 'g');
      await ctx.rheo.deleteGroup(stream, 'g', { confirm: true });
      await ctx.rheo.createGroup(stream, 'g');
      expect((await ctx.rheo.groupInfo(stream, 'g')).paused).toBeNull();
      expect(await fetchFrom(ctx.rheo, stream)).toHaveLength(1);
    });

    if (ctx.reopen) {
      it('is stored: a process that starts while the group is paused starts paused', async () => {
        const stream = await setup(1);
        const pause = await ctx.rheo.pauseGroup(stream, 'g', { reason: 'deploy' });
        const restarted = await otherProcess();
        expect((await restarted.groupInfo(stream, 'g')).paused).toEqual(pause);
        expect(isPausedAnswer(await fetchFrom(restarted, stream))).toBe(true);
        await restarted.resumeGroup(stream, 'g');
        expect(await fetchFrom(ctx.rheo, stream)).toHaveLength(1);
      });
    }

    it('publishes rheo:group:paused and rheo:group:resumed', async () => {
      const stream = await setup(0);
      const seen: Array<[string, GroupPauseMessage]> = [];
      const onPaused = (m: unknown) => seen.push(['paused', m as GroupPauseMessage]);
      const onResumed = (m: unknown) => seen.push(['resumed', m as GroupPauseMessage]);
      subscribe(CHANNELS.groupPaused, onPaused);
      subscribe(CHANNELS.groupResumed, onResumed);
      try {
        const pause = await ctx.rheo.pauseGroup(stream, 'g', { reason: 'r' });
        await ctx.rheo.resumeGroup(stream, 'g');
        await ctx.rheo.resumeGroup(stream, 'g');
        expect(seen).toEqual([
          ['paused', { stream, group: 'g', pause }],
          ['resumed', { stream, group: 'g', wasPaused: true }],
          ['resumed', { stream, group: 'g', wasPaused: false }],
        ]);
      } finally {
        unsubscribe(CHANNELS.groupPaused, onPaused);
        unsubscribe(CHANNELS.groupResumed, onResumed);
      }
    });

    it('refuses bad options, naming the field, and changes nothing', async () => {
      const stream = await setup(1);
      const now = ctx.clock.now();
      const refused = async (options: unknown, field: string, says: RegExp) => {
        const err = await expectCode(ctx.rheo.pauseGroup(stream, 'g', options as never), 'invalid_argument', field);
        expect(err.message).toMatch(says);
      };
      await refused({ untill: new Date(now + 1000) }, 'options.untill', /use until, reason, by/);
      await refused({ until: new Date(now) }, 'until', /after now/);
      await refused({ until: new Date(now + 366 * 24 * 3600 * 1000) }, 'until', /a year/);
      await refused({ until: 'tomorrow' }, 'until', /Date/);
      await refused({ reason: 42 }, 'reason', /string/);
      await refused({ reason: '' }, 'reason', /non-empty/);
      await refused({ reason: 'x'.repeat(1001) }, 'reason', /at most 1000/);
      await refused({ by: 'x'.repeat(257) }, 'by', /at most 256/);
      await refused({ reason: 'a\ud800' }, 'reason', /lone surrogate/);
      await refused('soon', 'options', /object/);
      expect((await ctx.rheo.groupInfo(stream, 'g')).paused).toBeNull();
      expect(await fetchFrom(ctx.rheo, stream)).toHaveLength(1);
    });

    it('answers group_not_found and stream_not_found', async () => {
      const stream = await setup(0);
      await expectCode(ctx.rheo.pauseGroup(stream, 'missing'), 'group_not_found');
      await expectCode(ctx.rheo.resumeGroup(stream, 'missing'), 'group_not_found');
      await expectCode(ctx.rheo.pauseGroup(ctx.name('nostream'), 'g'), 'stream_not_found');
      await expectCode(ctx.rheo.resumeGroup(ctx.name('nostream'), 'g'), 'stream_not_found');
    });

    if (ctx.waits && (ctx.caps.mechanisms.notifications || ctx.caps.mechanisms.blockingReads)) {
      it("wakes the group's waiting consumers at resume, long before their wait's timeout", async () => {
        const stream = await setup(1);
        await ctx.rheo.pauseGroup(stream, 'g');
        const controller = new AbortController();
        let woken = false;
        const waiting = ctx.backend.wait!({ stream, group: 'g', timeoutMs: 600_000, signal: controller.signal }).then(() => {
          woken = true;
        });
        // A wake-up sent while the waiter was still subscribing is lost: pause and resume again until one lands.
        let resumes = 0;
        while (!woken && resumes < 50) {
          await new Promise((r) => setTimeout(r, 50));
          await ctx.rheo.pauseGroup(stream, 'g');
          await ctx.rheo.resumeGroup(stream, 'g');
          resumes++;
        }
        controller.abort();
        await waiting;
        expect(resumes).toBeLessThan(50);
        expect(await fetchFrom(ctx.rheo, stream)).toHaveLength(1);
      });
    }
  });
}
