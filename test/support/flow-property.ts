import fc from 'fast-check';
import type { Lease } from '../../lib';
import { ManualClock, Rheo } from '../../lib';
import type { Backend } from '../../lib/backends/backend';
import { deadLetteredOf } from '../../lib/core/fetched';
import type { GroupOptions } from '../../lib/core/types';

// Flow limits under random fetches, settles, clock moves, skips, redrives and replays
// (docs/adr/049-flow-control.md): whatever happens, a key never has more live leases
// than its places, under ordering 'key' a key's event is leased only once every
// earlier event of the key is finished, the group never holds more live leases than
// its groupConcurrency, no window of the rate limit holds more than its max claims,
// and in the end every event is finished and nothing waits for its key. Run on
// every backend that declares flowControl (test/property/flow.spec.ts, test/redis/flow-property.spec.ts).

const LEASE_MS = 1000;

type Op =
  | { kind: 'fetch'; limit: number }
  | { kind: 'ack' | 'reject' | 'release'; pick: number }
  | { kind: 'nack'; pick: number; delayMs: number }
  | { kind: 'skip'; pick: number }
  | { kind: 'redrive' }
  | { kind: 'replay' }
  | { kind: 'advance'; ms: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  {
    arbitrary: fc.record({ kind: fc.constant('fetch' as const), limit: fc.oneof(fc.integer({ min: 1, max: 4 }), fc.constant(100)) }),
    weight: 6,
  },
  { arbitrary: fc.record({ kind: fc.constantFrom('ack' as const, 'reject' as const, 'release' as const), pick: fc.nat() }), weight: 6 },
  { arbitrary: fc.record({ kind: fc.constant('nack' as const), pick: fc.nat(), delayMs: fc.constantFrom(0, 300, 2000) }), weight: 2 },
  { arbitrary: fc.record({ kind: fc.constant('skip' as const), pick: fc.nat() }), weight: 1 },
  { arbitrary: fc.constant({ kind: 'redrive' as const }), weight: 1 },
  { arbitrary: fc.constant({ kind: 'replay' as const }), weight: 1 },
  { arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.constantFrom(1, 250, 999, 1000, 2500) }), weight: 3 },
);

const settings: fc.Arbitrary<GroupOptions> = fc.oneof(
  fc.constant<GroupOptions>({ ordering: 'key' }),
  fc.constant<GroupOptions>({ ordering: 'key', groupConcurrency: 2 }),
  fc.integer({ min: 1, max: 3 }).map((n): GroupOptions => ({ keyConcurrency: n })),
  fc.constant<GroupOptions>({ keyConcurrency: 2, rateLimit: { max: 3, perMs: 1000 } }),
  fc.constant<GroupOptions>({ groupConcurrency: 3 }),
  fc.constant<GroupOptions>({ rateLimit: { max: 2, perMs: 500 } }),
);

/**
 * The property over backends `open(clock)` makes: each run gets its own stream (`stream()`), and the
 * backend is closed after it. `numRuns` runs.
 */
export function flowProperty(open: (clock: ManualClock) => Backend, stream: () => string, numRuns: number): void {
  it('hold every key, group and rate limit, keep per-key order, and finish every event', async () => {
    await fc.assert(
      fc.asyncProperty(
        settings,
        fc.integer({ min: 1, max: 2 }),
        fc.array(fc.option(fc.constantFrom('a', 'b', 'c'), { nil: undefined }), { minLength: 1, maxLength: 14 }),
        fc.array(op, { maxLength: 50 }),
        async (options, partitions, keys, ops) => {
          const clock = new ManualClock();
          const backend = open(clock);
          const rheo = new Rheo(backend);
          const s = stream();
          try {
            await rheo.createStream(s, { partitions });
            await rheo.createGroup(s, 'g', { ...options, maxAttempts: 3, retry: { initialMs: 100, factor: 1, maxMs: 100 } });
            const stored = await rheo.appendBatch(
              s,
              keys.map((k, i) => ({ payload: i, ...(k === undefined ? { partition: i % partitions } : { key: k }) })),
            );
            const places = options.ordering === 'key' ? 1 : (options.keyConcurrency ?? Infinity);
            const finished = new Set<string>(); // acked, dead-lettered or skipped (until a redrive or replay opens it again)
            const dead = new Set<string>();
            const redriven = new Set<string>();
            let leases: Lease[] = []; // every lease not yet known to be void
            const starts: number[] = [];

            const live = () => leases.filter((l) => l.expiresAt.getTime() > clock.now());
            const check = (got: Lease[]) => {
              // A lease that expired on its last attempt is dead-lettered by the claim (ADR 035).
              for (const d of deadLetteredOf(got) ?? []) {
                finished.add(d.eventId);
                dead.add(d.eventId);
              }
              for (const l of got) {
                expect(finished.has(l.event.id)).toBe(false);
                if (options.ordering === 'key' && l.event.key !== null) {
                  // Every earlier event of the key is finished, but a redriven one: it waits behind the key's open
                  // delivery (then goes before the key's later waiting events).
                  for (const e of stored)
                    if (e.key === l.event.key && e.sequence < l.event.sequence && e.partition === l.event.partition && !redriven.has(e.id))
                      expect(finished.has(e.id)).toBe(true);
                }
                // A re-claim of an expired lease voids the old one.
                leases = leases.filter((x) => x.event.id !== l.event.id);
                starts.push(clock.now());
              }
              leases.push(...got);
              const byKey = new Map<string, number>();
              for (const l of live()) if (l.event.key !== null) byKey.set(l.event.key, (byKey.get(l.event.key) ?? 0) + 1);
              for (const n of byKey.values()) expect(n).toBeLessThanOrEqual(places);
              if (options.groupConcurrency) expect(live().length).toBeLessThanOrEqual(options.groupConcurrency);
              if (options.rateLimit) {
                const { max, perMs } = options.rateLimit;
                const inWindow = starts.filter((t) => clock.now() - t < perMs).length;
                expect(inWindow).toBeLessThanOrEqual(max);
              }
            };
            const settle = async (pick: number, what: (l: Lease) => Promise<unknown>): Promise<Lease | null> => {
              const mine = live();
              if (mine.length === 0) return null;
              const l = mine[pick % mine.length];
              await what(l);
              leases = leases.filter((x) => x !== l);
              return l;
            };

            for (const o of ops) {
              if (o.kind === 'advance') clock.advance(o.ms);
              else if (o.kind === 'fetch') check(await rheo.fetch(s, 'g', { limit: o.limit, leaseMs: LEASE_MS }));
              else if (o.kind === 'ack') {
                const l = await settle(o.pick, (x) => rheo.ack(x));
                if (l) finished.add(l.event.id);
              } else if (o.kind === 'reject') {
                const l = await settle(o.pick, (x) => rheo.reject(x, { reason: 'r' }));
                if (l) {
                  finished.add(l.event.id);
                  dead.add(l.event.id);
                }
              } else if (o.kind === 'nack') {
                const l = await settle(o.pick, (x) => rheo.nack(x, { delayMs: o.delayMs }));
                if (l && l.attempt >= 3) {
                  finished.add(l.event.id);
                  dead.add(l.event.id);
                }
              } else if (o.kind === 'release') await settle(o.pick, (x) => rheo.releaseMany([x]));
              else if (o.kind === 'skip') {
                const id = stored[o.pick % stored.length].id;
                const [r] = await rheo.skip(s, 'g', [id]);
                if (r.ok) finished.add(id);
              } else if (o.kind === 'redrive') {
                for (const dl of await rheo.deadLetters(s, 'g', { limit: 100 })) {
                  expect(dead.has(dl.eventId)).toBe(true);
                  finished.delete(dl.eventId);
                  dead.delete(dl.eventId);
                  redriven.add(dl.eventId);
                }
                await rheo.redrive(s, 'g', { all: true });
              } else if (o.kind === 'replay') {
                await rheo.replay(s, 'g', { afterSequence: 0 });
                finished.clear();
                dead.clear();
                redriven.clear();
                leases = [];
              }
            }

            // In the end, everything finishes and nothing waits for its key.
            for (let round = 0; round < 200 && finished.size < stored.length; round++) {
              clock.advance(LEASE_MS);
              const got = await rheo.fetch(s, 'g', { limit: 100, leaseMs: LEASE_MS });
              check(got);
              for (const l of got) {
                await rheo.ack(l);
                finished.add(l.event.id);
              }
              leases = [];
            }
            expect(finished.size).toBe(stored.length);
            const info = await rheo.groupInfo(s, 'g');
            expect(info.lag.lag).toBe(0);
            expect(info.waitingForKey).toBe(0);
          } finally {
            await backend.close();
          }
        },
      ),
      { numRuns },
    );
  }, 600_000);
}
