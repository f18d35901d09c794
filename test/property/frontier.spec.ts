import fc from 'fast-check';
import type { Lease } from '../../lib';
import { ManualClock, Rheo, RheoError } from '../../lib';
import { MemoryBackend } from '../../lib/backends/memory/memory-backend';
import { deadLetteredOf } from '../../lib/core/fetched';
import { GroupModel } from './model';

const LEASE_MS = 1000;
const MAX_ATTEMPTS = 3;
const RETRY = { initialMs: 400, factor: 2, maxMs: 1500 };

type Op =
  | { kind: 'fetch'; limit: number }
  | { kind: 'ack' | 'reject' | 'renew'; pick: number }
  | { kind: 'nack'; pick: number; delayMs?: number }
  | { kind: 'advance'; ms: number };

// Exact lease and delay boundaries are where off-by-one expiry bugs live, so they are drawn often.
const delayMs = fc.oneof(fc.integer({ min: 0, max: 2000 }), fc.constantFrom(0, 400, 1000));
const advanceMs = fc.oneof(fc.integer({ min: 0, max: 1600 }), fc.constantFrom(1, 399, 400, 800, 999, 1000, 1001));
const limit = fc.oneof(fc.integer({ min: 1, max: 4 }), fc.constant(100));

const op: fc.Arbitrary<Op> = fc.oneof(
  { arbitrary: fc.record({ kind: fc.constant('fetch' as const), limit }), weight: 4 },
  { arbitrary: fc.record({ kind: fc.constantFrom('ack' as const, 'reject' as const, 'renew' as const), pick: fc.nat() }), weight: 4 },
  {
    arbitrary: fc.record({ kind: fc.constant('nack' as const), pick: fc.nat(), delayMs: fc.option(delayMs, { nil: undefined }) }),
    weight: 2,
  },
  { arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: advanceMs }), weight: 3 },
);

/**
 * Random fetch / ack / nack / reject / renew / expire sequences against the
 * reference model. Settles pick from every lease ever issued, so most of them
 * are stale: the model says which ones must succeed.
 */
describe('property: leasing, settling and the frontier follow the model', () => {
  it('under random ops, every answer, attempt, frontier and figure equals the model', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 3 }),
        fc.array(fc.nat({ max: 2 }), { minLength: 1, maxLength: 10 }),
        fc.array(op, { maxLength: 40 }),
        async (partitions, placement, ops) => {
          const clock = new ManualClock();
          const rheo = new Rheo(new MemoryBackend({ clock }));
          await rheo.createStream('s', { partitions });
          await rheo.createGroup('s', 'g', { maxAttempts: MAX_ATTEMPTS, retry: RETRY });
          const model = new GroupModel(MAX_ATTEMPTS, { ...RETRY });
          for (const e of await rheo.appendBatch(
            's',
            placement.map((p) => ({ partition: p % partitions, payload: p })),
          )) {
            model.add(e.partition, e.sequence);
          }
          const issued: Lease[] = [];
          const leaseIds = new Set<string>();

          for (const o of ops) {
            const now = clock.now();
            if (o.kind === 'advance') {
              clock.advance(o.ms);
            } else if (o.kind === 'fetch') {
              const expected = Math.min(o.limit, model.claimableCount(now));
              const got = await rheo.fetch('s', 'g', { limit: o.limit, leaseMs: LEASE_MS });
              expect(got).toHaveLength(expected);
              for (const b of deadLetteredOf(got) ?? []) {
                expect(model.buryable(model.events.get(GroupModel.key(b.partition, b.sequence))!, now)).toBe(true);
                model.buried(b.partition, b.sequence);
              }
              for (const l of got) {
                const d = model.events.get(GroupModel.key(l.event.partition, l.event.sequence))!;
                expect(model.claimable(d, now)).toBe(true);
                expect(l.attempt).toBe(model.expectedAttempt(l));
                expect(l.expiresAt.getTime()).toBe(now + LEASE_MS);
                expect(leaseIds.has(l.leaseId)).toBe(false);
                leaseIds.add(l.leaseId);
                model.fetched(l);
                issued.push(l);
              }
            } else if (issued.length > 0) {
              // Half the picks are among the newest leases (mostly live), half among all (mostly stale).
              const recent = Math.min(3, issued.length);
              const lease = issued[o.pick % 2 === 0 ? issued.length - 1 - ((o.pick >> 1) % recent) : (o.pick >> 1) % issued.length];
              const live = model.live(lease, now);
              let error: RheoError | undefined;
              try {
                if (o.kind === 'renew') {
                  const r = await rheo.renew(lease, { leaseMs: LEASE_MS });
                  expect(r.expiresAt.getTime()).toBe(now + LEASE_MS);
                  model.renewed(lease, r.expiresAt.getTime());
                } else if (o.kind === 'nack') await rheo.nack(lease, { delayMs: o.delayMs });
                else if (o.kind === 'ack') await rheo.ack(lease);
                else await rheo.reject(lease);
              } catch (err) {
                error = err as RheoError;
              }
              if (live) {
                expect(error).toBeUndefined();
                if (o.kind !== 'renew') model.settled(o.kind, lease, now, o.kind === 'nack' ? o.delayMs : undefined);
              } else {
                expect(error?.code).toBe('stale_lease');
              }
            }
            const info = await rheo.groupInfo('s', 'g');
            expect(info.lag.partitions.map((p) => p.frontier)).toEqual(model.frontiers(partitions));
            expect(info.inflight).toBe(model.inflight(clock.now()));
            expect(info.deadLetters).toBe(model.dead());
          }

          // Nothing is lost: far enough in the future, every non-terminal event is claimable again.
          // Those whose lease expired on their last attempt are dead-lettered by that claim instead.
          clock.advance(1_000_000);
          const end = clock.now();
          const open = [...model.events.values()].filter((d) => d.state !== 'acked' && d.state !== 'dead');
          const leases = await rheo.fetch('s', 'g', { limit: 100, leaseMs: LEASE_MS });
          expect(leases).toHaveLength(open.filter((d) => model.claimable(d, end)).length);
          expect(deadLetteredOf(leases)?.length ?? 0).toBe(open.filter((d) => model.buryable(d, end)).length);
          for (const l of leases) await rheo.ack(l);
          expect((await rheo.lag('s', 'g')).lag).toBe(0);
        },
      ),
      { numRuns: 100 },
    );
  });

  it('an old lease never settles or renews a newer one', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 5 }),
        fc.array(fc.constantFrom('ack', 'nack', 'reject', 'renew'), { minLength: 1, maxLength: 8 }),
        fc.constantFrom('ack', 'nack', 'reject'),
        async (takeovers, staleOps, finalOp) => {
          const clock = new ManualClock();
          const rheo = new Rheo(new MemoryBackend({ clock }));
          await rheo.createStream('s');
          await rheo.createGroup('s', 'g', { maxAttempts: 100 });
          await rheo.append('s', { payload: 1 });
          const old: Lease[] = [];
          let current = (await rheo.fetch('s', 'g', { leaseMs: LEASE_MS }))[0];
          for (let i = 0; i < takeovers; i++) {
            old.push(current);
            clock.advance(LEASE_MS + 1);
            current = (await rheo.fetch('s', 'g', { leaseMs: LEASE_MS }))[0];
            expect(current.attempt).toBe(i + 2);
          }
          for (const [i, kind] of staleOps.entries()) {
            const lease = old[i % old.length];
            const call =
              kind === 'renew'
                ? rheo.renew(lease)
                : kind === 'nack'
                  ? rheo.nack(lease, { delayMs: 0 })
                  : kind === 'ack'
                    ? rheo.ack(lease)
                    : rheo.reject(lease);
            await expect(call).rejects.toMatchObject({ code: 'stale_lease' });
          }
          // The newest holder is untouched and settles normally.
          expect((await rheo.groupInfo('s', 'g')).inflight).toBe(1);
          const settle = finalOp === 'ack' ? rheo.ack(current) : finalOp === 'nack' ? rheo.nack(current) : rheo.reject(current);
          await expect(settle).resolves.toBeUndefined();
          for (const lease of old) await expect(rheo.ack(lease)).rejects.toMatchObject({ code: 'stale_lease' });
        },
      ),
      { numRuns: 60 },
    );
  });
});
