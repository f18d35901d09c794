import type { ConformanceContext } from '../context';

/** Forgetting a turn (releaseTurn): only by its holder, expired or not; a forgotten job is free at once. */
export function releaseTurnCases(ctx: ConformanceContext): void {
  describe('releaseTurn', () => {
    it('forgets a turn for its holder only, and frees the job at once', async () => {
      const job = ctx.name('job');
      expect(await ctx.rheo.backend.claimTurn(job, 'a', 1000)).toBe(true);
      // Another holder cannot forget it, and changes nothing.
      expect(await ctx.rheo.backend.releaseTurn(job, 'b')).toBe(false);
      expect(await ctx.rheo.backend.claimTurn(job, 'b', 1000)).toBe(false);
      expect(await ctx.rheo.backend.releaseTurn(job, 'a')).toBe(true);
      // Free before its time ran out; and forgetting twice finds nothing.
      expect(await ctx.rheo.backend.releaseTurn(job, 'a')).toBe(false);
      expect(await ctx.rheo.backend.claimTurn(job, 'b', 1000)).toBe(true);
      expect(await ctx.rheo.backend.claimTurn(job, 'a', 1000)).toBe(false);
    });

    it("forgets its holder's expired turn, but not one another holder took over", async () => {
      const job = ctx.name('job');
      expect(await ctx.rheo.backend.claimTurn(job, 'a', 1000)).toBe(true);
      ctx.clock.advance(1001);
      expect(await ctx.rheo.backend.releaseTurn(job, 'a')).toBe(true);
      expect(await ctx.rheo.backend.claimTurn(job, 'a', 1000)).toBe(true);
      ctx.clock.advance(1001);
      expect(await ctx.rheo.backend.claimTurn(job, 'b', 1000)).toBe(true);
      expect(await ctx.rheo.backend.releaseTurn(job, 'a')).toBe(false);
      expect(await ctx.rheo.backend.claimTurn(job, 'a', 1000)).toBe(false);
      expect(await ctx.rheo.backend.releaseTurn(job, 'never')).toBe(false);
      expect(await ctx.rheo.backend.releaseTurn(ctx.name('unknown-job'), 'a')).toBe(false);
    });
  });
}
