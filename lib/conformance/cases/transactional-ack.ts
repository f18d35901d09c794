import type { TransactionalAck } from '../../backends/backend';
import { RheoError } from '../../core/errors';
import type { Lease } from '../../core/types';
import { ConformanceContext, events, expectCode, highWatermarks, LEASE_MS, newStream } from '../context';

/**
 * `ackInTransaction` (backends with `transactionalAck` and `transactionalAppend`):
 * the work's writes commit if and only if the fenced ack does. The work's write
 * here is an append through the transaction's manager, to a second stream, the
 * one write every such backend can make; whether it stayed is that stream's high
 * watermark.
 */
export function transactionalAckCases(ctx: ConformanceContext): void {
  async function setup(n = 1, ordering: 'none' | 'partition' = 'none'): Promise<{ stream: string; out: string }> {
    const stream = await newStream(ctx);
    const out = await newStream(ctx);
    await ctx.rheo.appendBatch(stream, events(n));
    await ctx.rheo.createGroup(stream, 'g', { ordering });
    return { stream, out };
  }

  /** Run `ackInTransaction` whose work appends one event to `out` in the transaction, then resolves `commit`. */
  function ackWithWrite(lease: Lease, out: string, commit = true): Promise<TransactionalAck> {
    return ctx.backend.ackInTransaction!(lease, async (manager) => {
      await ctx.rheo.append(out, { type: 'effect', payload: { of: lease.event.id } }, { manager });
      return commit;
    });
  }

  function expectFailed(result: TransactionalAck, code: string): void {
    expect(result.kind).toBe('ack_failed');
    if (result.kind === 'ack_failed') {
      expect(result.error).toBeInstanceOf(RheoError);
      expect(result.error.code).toBe(code);
    }
  }

  describe('ackInTransaction', () => {
    it('commits the work and the ack together', async () => {
      const { stream, out } = await setup();
      const [lease] = await ctx.rheo.fetch(stream, 'g', { limit: 1, leaseMs: LEASE_MS });
      expect(await ackWithWrite(lease, out)).toEqual({ kind: 'committed' });
      expect(await highWatermarks(ctx, out)).toEqual([1]);
      expect((await ctx.rheo.lag(stream, 'g')).lag).toBe(0);
      // Acked: it never comes back, and the lease is spent.
      ctx.clock.advance(LEASE_MS + 1);
      expect(await ctx.rheo.fetch(stream, 'g', { limit: 1, leaseMs: LEASE_MS })).toEqual([]);
      await expectCode(ctx.rheo.ack(lease), 'stale_lease');
    });

    it('rolls the work back and acks nothing when another consumer holds the event now', async () => {
      const { stream, out } = await setup();
      const [mine] = await ctx.rheo.fetch(stream, 'g', { limit: 1, leaseMs: LEASE_MS });
      ctx.clock.advance(LEASE_MS + 1);
      const [theirs] = await ctx.rheo.fetch(stream, 'g', { limit: 1, leaseMs: LEASE_MS });
      expect(theirs.attempt).toBe(2);
      expectFailed(await ackWithWrite(mine, out), 'stale_lease');
      expect(await highWatermarks(ctx, out)).toEqual([0]);
      // The new holder is untouched.
      await ctx.rheo.ack(theirs);
      expect((await ctx.rheo.lag(stream, 'g')).lag).toBe(0);
    });

    it('refuses an expired lease nobody claimed since, rolling the work back; the event comes back', async () => {
      const { stream, out } = await setup();
      const [lease] = await ctx.rheo.fetch(stream, 'g', { limit: 1, leaseMs: LEASE_MS });
      ctx.clock.advance(LEASE_MS + 1);
      expectFailed(await ackWithWrite(lease, out), 'stale_lease');
      expect(await highWatermarks(ctx, out)).toEqual([0]);
      const [again] = await ctx.rheo.fetch(stream, 'g', { limit: 1, leaseMs: LEASE_MS });
      expect(again.event.id).toBe(lease.event.id);
      await ctx.rheo.ack(again);
    });

    it('refuses a lease settled already, leaving nothing of the work', async () => {
      const { stream, out } = await setup();
      const [lease] = await ctx.rheo.fetch(stream, 'g', { limit: 1, leaseMs: LEASE_MS });
      await ctx.rheo.ack(lease);
      expectFailed(await ackWithWrite(lease, out), 'stale_lease');
      expect(await highWatermarks(ctx, out)).toEqual([0]);
    });

    it('answers receipt_mismatch for a live lease with a foreign receipt, leaving nothing of the work', async () => {
      const { stream, out } = await setup();
      const [lease] = await ctx.rheo.fetch(stream, 'g', { limit: 1, leaseMs: LEASE_MS });
      expectFailed(await ackWithWrite({ ...lease, receipt: 'not-the-receipt' }, out), 'receipt_mismatch');
      expect(await highWatermarks(ctx, out)).toEqual([0]);
      await ctx.rheo.ack(lease);
    });

    it('rolls back and rethrows what the work throws; the lease stays held', async () => {
      const { stream, out } = await setup();
      const [lease] = await ctx.rheo.fetch(stream, 'g', { limit: 1, leaseMs: LEASE_MS });
      const boom = new Error('business rule broken');
      const run = ctx.backend.ackInTransaction!(lease, async (manager) => {
        await ctx.rheo.append(out, { type: 'effect', payload: {} }, { manager });
        throw boom;
      });
      await expect(run).rejects.toBe(boom);
      expect(await highWatermarks(ctx, out)).toEqual([0]);
      await ctx.rheo.ack(lease);
      expect((await ctx.rheo.lag(stream, 'g')).lag).toBe(0);
    });

    it('rolls back and settles nothing when the work resolves false; the lease stays held', async () => {
      const { stream, out } = await setup();
      const [lease] = await ctx.rheo.fetch(stream, 'g', { limit: 1, leaseMs: LEASE_MS });
      expect(await ackWithWrite(lease, out, false)).toEqual({ kind: 'rolled_back' });
      expect(await highWatermarks(ctx, out)).toEqual([0]);
      await ctx.rheo.nack(lease, { delayMs: 0 });
      const [again] = await ctx.rheo.fetch(stream, 'g', { limit: 1, leaseMs: LEASE_MS });
      expect(again.attempt).toBe(2);
      await ctx.rheo.ack(again);
    });

    it('frees the next event of a partition-ordered group on commit', async () => {
      const { stream, out } = await setup(2, 'partition');
      const [head] = await ctx.rheo.fetch(stream, 'g', { limit: 2, leaseMs: LEASE_MS });
      expect(await ctx.rheo.fetch(stream, 'g', { limit: 2, leaseMs: LEASE_MS })).toEqual([]);
      expect(await ackWithWrite(head, out)).toEqual({ kind: 'committed' });
      const [next] = await ctx.rheo.fetch(stream, 'g', { limit: 2, leaseMs: LEASE_MS });
      expect(next.event.sequence).toBe(2);
      await ctx.rheo.ack(next);
    });
  });
}
