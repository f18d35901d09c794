import fc from 'fast-check';
import type { Lease } from '../../lib';
import type { Ordering } from '../../lib/core/types';
import { ManualClock, Rheo } from '../../lib';
import { MemoryBackend } from '../../lib/backends/memory/memory-backend';

// Delayed events under random fetches, settles and clock moves (docs/adr/028-delayed-events.md):
// whatever happens, no event is leased before its deliverAt, its first lease is attempt 1, no two
// live leases ever hold one event, an ordered group holds one live lease per partition and takes
// each partition's events in sequence order, the frontier is exactly what the settles made it,
// and in the end every event is delivered and the lag is 0.

const LEASE_MS = 1000;

type Op = { kind: 'fetch'; limit: number } | { kind: 'ack' | 'nack'; pick: number } | { kind: 'advance'; ms: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  {
    arbitrary: fc.record({ kind: fc.constant('fetch' as const), limit: fc.oneof(fc.integer({ min: 1, max: 3 }), fc.constant(100)) }),
    weight: 4,
  },
  { arbitrary: fc.record({ kind: fc.constantFrom('ack' as const, 'nack' as const), pick: fc.nat() }), weight: 4 },
  {
    arbitrary: fc.record({
      kind: fc.constant('advance' as const),
      ms: fc.oneof(fc.integer({ min: 0, max: 1500 }), fc.constantFrom(1, 500, 1000)),
    }),
    weight: 3,
  },
);

/** Per event: its partition and its delay (undefined: none); delays hit the exact boundaries often. */
const event = fc.record({
  partition: fc.nat({ max: 2 }),
  delayMs: fc.option(fc.oneof(fc.integer({ min: 0, max: 3000 }), fc.constantFrom(0, 500, 1000)), { nil: undefined }),
});

describe('property: delayed events', () => {
  it('are never leased before their time, start at attempt 1, and keep the frontier, lag and ordering exact', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 3 }),
        fc.constantFrom<Ordering>('none', 'partition'),
        fc.array(event, { minLength: 1, maxLength: 12 }),
        fc.array(op, { maxLength: 40 }),
        async (partitions, ordering, placed, ops) => {
          const clock = new ManualClock();
          const rheo = new Rheo(new MemoryBackend({ clock }));
          await rheo.createStream('s', { partitions });
          await rheo.createGroup('s', 'g', { ordering, maxAttempts: 1000, retry: { initialMs: 0, maxMs: 0 } });
          const stored = await rheo.appendBatch(
            's',
            placed.map((e, i) => ({
              partition: e.partition % partitions,
              payload: i,
              ...(e.delayMs === undefined ? {} : { delayMs: e.delayMs }),
            })),
          );
          const key = (p: number, s: number) => `${p}:${s}`;
          const due = new Map(stored.map((e) => [key(e.partition, e.sequence), e.deliverAt?.getTime() ?? -Infinity]));
          const done = new Set<string>(); // acked
          const leased = new Map<string, Lease>(); // the newest lease of each event
          const offered = new Set<string>();
          const firstOrder = new Map<number, number>(); // per partition, the last sequence first offered (ordered groups)
          const issued: Lease[] = [];

          const live = (l: Lease) => leased.get(key(l.event.partition, l.event.sequence)) === l && l.expiresAt.getTime() > clock.now();
          const check = async (l: Lease) => {
            const k = key(l.event.partition, l.event.sequence);
            expect(clock.now()).toBeGreaterThanOrEqual(due.get(k)!);
            expect(done.has(k)).toBe(false);
            const before = leased.get(k);
            expect(before !== undefined && before.expiresAt.getTime() > clock.now()).toBe(false);
            if (!offered.has(k)) {
              expect(l.attempt).toBe(1);
              if (ordering === 'partition') {
                expect(l.event.sequence).toBeGreaterThan(firstOrder.get(l.event.partition) ?? 0);
                firstOrder.set(l.event.partition, l.event.sequence);
              }
            }
            offered.add(k);
            leased.set(k, l);
          };

          for (const o of ops) {
            if (o.kind === 'advance') clock.advance(o.ms);
            else if (o.kind === 'fetch') {
              const got = await rheo.fetch('s', 'g', { limit: o.limit, leaseMs: LEASE_MS });
              for (const l of got) await check(l);
              issued.push(...got);
              if (ordering === 'partition') {
                const perPartition = new Map<number, number>();
                for (const l of leased.values())
                  if (live(l)) perPartition.set(l.event.partition, (perPartition.get(l.event.partition) ?? 0) + 1);
                expect([...perPartition.values()].every((n) => n === 1)).toBe(true);
              }
            } else if (issued.length > 0) {
              const l = issued[o.pick % issued.length];
              const wasLive = live(l);
              const r =
                o.kind === 'ack'
                  ? await rheo.ack(l).then(
                      () => true,
                      () => false,
                    )
                  : await rheo.nack(l).then(
                      () => true,
                      () => false,
                    );
              expect(r).toBe(wasLive);
              if (r && o.kind === 'ack') done.add(key(l.event.partition, l.event.sequence));
              if (r) leased.delete(key(l.event.partition, l.event.sequence));
            }
            // The frontier of each partition: the highest sequence with every event up to it acked.
            const lag = await rheo.lag('s', 'g');
            for (const p of lag.partitions) {
              let f = 0;
              while (done.has(key(p.partition, f + 1))) f++;
              expect(p.frontier).toBe(f);
            }
          }

          // In the end, every event is delivered and acked.
          clock.advance(10_000);
          for (let round = 0; round < 100 && done.size < stored.length; round++) {
            const got = await rheo.fetch('s', 'g', { limit: 100, leaseMs: LEASE_MS });
            if (got.length === 0) clock.advance(LEASE_MS);
            for (const l of got) {
              await check(l);
              await rheo.ack(l);
              done.add(key(l.event.partition, l.event.sequence));
            }
          }
          expect(done.size).toBe(stored.length);
          expect((await rheo.lag('s', 'g')).lag).toBe(0);
        },
      ),
      { numRuns: 200 },
    );
  });
});
