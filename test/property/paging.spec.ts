import fc from 'fast-check';
import type { Query, RheoEvent } from '../../lib';
import { ManualClock, Rheo } from '../../lib';
import { MemoryBackend } from '../../lib/backends/memory/memory-backend';

const P = 4;
const T0 = Date.UTC(2026, 0, 1);

// Events with few distinct values per field, so filters match some but not all;
// caller-supplied timestamps are not monotonic, as the contract allows.
const eventArb = fc.record({
  partition: fc.nat({ max: P - 1 }),
  type: fc.constantFrom('a', 'b', 'c'),
  key: fc.constantFrom('k0', 'k1', 'k2'),
  v: fc.nat({ max: 3 }),
  tenant: fc.constantFrom('t0', 't1'),
  at: fc.nat({ max: 20 }),
});

const filterArbs = {
  type: fc.constantFrom('a', 'b', 'c'),
  key: fc.constantFrom('k0', 'k1', 'k2'),
  partition: fc.nat({ max: P - 1 }),
  v: fc.nat({ max: 3 }),
  tenant: fc.constantFrom('t0', 't1'),
  from: fc.nat({ max: 20 }),
  to: fc.nat({ max: 20 }),
  afterSequence: fc.nat({ max: 8 }),
  untilSequence: fc.nat({ max: 8 }),
};
type Q = Partial<{ [K in keyof typeof filterArbs]: (typeof filterArbs)[K] extends fc.Arbitrary<infer T> ? T : never }>;

// At most three filters at once, so that most queries still match something.
const queryArb: fc.Arbitrary<Q> = fc
  .tuple(fc.record(filterArbs), fc.subarray(Object.keys(filterArbs) as Array<keyof Q>, { maxLength: 3 }))
  .map(([all, chosen]) => Object.fromEntries(chosen.map((k) => [k, all[k]])) as Q);

function toQuery(q: Q): Omit<Query, 'stream'> {
  const where: NonNullable<Query['where']> = {};
  if (q.type !== undefined) where.type = q.type;
  if (q.key !== undefined) where.key = q.key;
  if (q.partition !== undefined) where.partition = q.partition;
  if (q.v !== undefined) where.payload = { v: q.v };
  if (q.tenant !== undefined) where.metadata = { tenant: q.tenant };
  const out: Omit<Query, 'stream'> = { where };
  if (q.from !== undefined) out.from = new Date(T0 + q.from * 1000);
  if (q.to !== undefined) out.to = new Date(T0 + q.to * 1000);
  if (q.afterSequence !== undefined) out.afterSequence = q.afterSequence;
  if (q.untilSequence !== undefined) out.untilSequence = q.untilSequence;
  return out;
}

/** The reference answer, computed from the appended events alone. */
function expected(all: RheoEvent[], q: Q, order: 'asc' | 'desc'): string[] {
  const hit = all.filter((e) => {
    const payload = e.payload as { v: number };
    const t = e.timestamp.getTime();
    return (
      (q.type === undefined || e.type === q.type) &&
      (q.key === undefined || e.key === q.key) &&
      (q.partition === undefined || e.partition === q.partition) &&
      (q.v === undefined || payload.v === q.v) &&
      (q.tenant === undefined || e.metadata.tenant === q.tenant) &&
      (q.from === undefined || t >= T0 + q.from * 1000) &&
      (q.to === undefined || t <= T0 + q.to * 1000) &&
      (q.afterSequence === undefined || e.sequence > q.afterSequence) &&
      (q.untilSequence === undefined || e.sequence <= q.untilSequence)
    );
  });
  hit.sort((a, b) => a.sequence - b.sequence || a.partition - b.partition);
  if (order === 'desc') hit.reverse();
  return hit.map((e) => e.id);
}

describe('property: query paging', () => {
  it('never skips or repeats, for random streams, page sizes, orders and filters', async () => {
    let n = 0;
    const rheo = new Rheo(new MemoryBackend({ clock: new ManualClock(T0) }));
    await fc.assert(
      fc.asyncProperty(
        fc.array(eventArb, { maxLength: 40 }),
        queryArb,
        fc.integer({ min: 1, max: 12 }),
        fc.constantFrom('asc' as const, 'desc' as const),
        async (evs, q, limit, order) => {
          const stream = `s${++n}`;
          await rheo.createStream(stream, { partitions: P });
          const all = await rheo.appendBatch(
            stream,
            evs.map((e) => ({
              partition: e.partition,
              type: e.type,
              key: e.key,
              payload: { v: e.v },
              metadata: { tenant: e.tenant },
              timestamp: new Date(T0 + e.at * 1000),
            })),
          );
          const want = expected(all, q, order);
          const paged: string[] = [];
          let cursor: string | undefined;
          for (let pages = 0; ; pages++) {
            expect(pages).toBeLessThanOrEqual(want.length / limit + 1);
            const page = await rheo.queryPage({ stream, ...toQuery(q), order, limit, cursor });
            expect(page.items.length).toBeLessThanOrEqual(limit);
            paged.push(...page.items.map((e) => e.id));
            if (!page.nextCursor) break;
            cursor = page.nextCursor;
          }
          expect(paged).toEqual(want);
          const streamed: string[] = [];
          for await (const e of rheo.queryStream({ stream, ...toQuery(q), order, limit })) streamed.push(e.id);
          expect(streamed).toEqual(want);
        },
      ),
      { numRuns: 100 },
    );
  });
});
