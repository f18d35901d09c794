import { ConformanceContext, newStream } from '../context';

/**
 * The optional `wait()` hint. It is never correctness (the runtime polls anyway),
 * but it must end: at its timeout, on abort, and on new work when the backend
 * declares a push mechanism.
 */
export function wakeUpCases(ctx: ConformanceContext): void {
  describe('wake-ups', () => {
    async function setup(): Promise<string> {
      const stream = await newStream(ctx);
      await ctx.rheo.createGroup(stream, 'g');
      return stream;
    }

    it('ends at its timeout with no work', async () => {
      const stream = await setup();
      await ctx.backend.wait!({ stream, group: 'g', timeoutMs: 20, signal: new AbortController().signal });
    });

    it('ends when its signal aborts, and at once for an aborted signal', async () => {
      const stream = await setup();
      const controller = new AbortController();
      const waiting = ctx.backend.wait!({ stream, group: 'g', timeoutMs: 600_000, signal: controller.signal });
      controller.abort();
      await waiting;
      await ctx.backend.wait!({ stream, group: 'g', timeoutMs: 600_000, signal: controller.signal });
    });

    if (ctx.caps.mechanisms.notifications || ctx.caps.mechanisms.blockingReads) {
      it('is woken by an append long before its timeout', async () => {
        const stream = await setup();
        const controller = new AbortController();
        let woken = false;
        const waiting = ctx.backend.wait!({ stream, group: 'g', timeoutMs: 600_000, signal: controller.signal }).then(() => {
          woken = true;
        });
        // Appends keep coming, so a wake-up lost while the waiter was still subscribing costs one more append, not the case.
        let appends = 0;
        while (!woken && appends < 100) {
          await ctx.rheo.append(stream, { payload: appends++ });
          await new Promise((r) => setTimeout(r, 50));
        }
        controller.abort();
        await waiting;
        expect(appends).toBeLessThan(100);
      });

      if (ctx.caps.guarantees.orderedPartitions) {
        it("is woken when a partition-ordered group's head is settled (the next event becomes claimable)", async () => {
          const stream = await newStream(ctx);
          await ctx.rheo.createGroup(stream, 'g', { ordering: 'partition' });
          await ctx.rheo.appendBatch(stream, [{ payload: 1 }, { payload: 2 }]);
          const [head] = await ctx.rheo.fetch(stream, 'g', { limit: 2, leaseMs: 60_000 });
          expect(await ctx.rheo.fetch(stream, 'g', { limit: 2 })).toEqual([]);
          const controller = new AbortController();
          let woken = false;
          const waiting = ctx.backend.wait!({ stream, group: 'g', timeoutMs: 600_000, signal: controller.signal }).then(() => {
            woken = true;
          });
          // No append follows: only the settle can announce the next event.
          await new Promise((r) => setTimeout(r, 100));
          await ctx.rheo.ack(head);
          for (let i = 0; i < 100 && !woken; i++) await new Promise((r) => setTimeout(r, 20));
          const wokenBySettle = woken; // read before the abort, which ends the wait too
          controller.abort();
          await waiting;
          expect(wokenBySettle).toBe(true);
          const [next] = await ctx.rheo.fetch(stream, 'g', { limit: 2, leaseMs: 60_000 });
          expect(next.event.sequence).toBe(2);
          await ctx.rheo.ack(next);
        });
      }
    }
  });
}
