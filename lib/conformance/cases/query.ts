import { jsonEqual } from '../../core/json-equal';
import type { JsonValue, Query, RheoEvent } from '../../core/types';
import { ConformanceContext, newStream } from '../context';

type Filter = Omit<Query, 'stream' | 'limit' | 'cursor' | 'order'>;

/** The reference answer: filter the whole log in memory, order by (sequence, partition). */
function expected(all: RheoEvent[], f: Filter, order: 'asc' | 'desc'): string[] {
  const w = f.where ?? {};
  const hit = all.filter(
    (e) =>
      (w.type === undefined || e.type === w.type) &&
      (w.key === undefined || e.key === w.key) &&
      (w.partition === undefined || e.partition === w.partition) &&
      Object.entries(w.metadata ?? {}).every(([k, v]) => JSON.stringify(e.metadata[k]) === JSON.stringify(v)) &&
      Object.entries(w.payload ?? {}).every(([k, v]) => JSON.stringify((e.payload as Record<string, unknown>)[k]) === JSON.stringify(v)) &&
      (f.from === undefined || e.timestamp >= f.from) &&
      (f.to === undefined || e.timestamp <= f.to) &&
      (f.afterSequence === undefined || e.sequence > f.afterSequence) &&
      (f.untilSequence === undefined || e.sequence <= f.untilSequence),
  );
  hit.sort((a, b) => a.sequence - b.sequence || a.partition - b.partition);
  if (order === 'desc') hit.reverse();
  return hit.map((e) => e.id);
}

export function queryCases(ctx: ConformanceContext): void {
  describe('query and paging', () => {
    const P = 4;
    let stream: string;
    let all: RheoEvent[];
    let t0: number;

    beforeAll(async () => {
      // 40 events on 4 partitions (1 when the backend has no partitions), one second apart.
      const parts = ctx.caps.guarantees.partitions ? P : 1;
      stream = await newStream(ctx, parts);
      t0 = ctx.clock.now();
      all = [];
      for (let i = 0; i < 40; i++) {
        all.push(
          await ctx.rheo.append(stream, {
            id: `q${i}`,
            partition: i % parts,
            key: `key-${i % 5}`,
            type: i % 2 === 0 ? 'even' : 'odd',
            metadata: { tenant: `t${i % 3}`, correlationId: `c${i}` },
            payload: { n: i, bucket: i % 4, tag: { v: i % 2 } },
          }),
        );
        ctx.clock.advance(1000);
      }
    });

    const filters: Array<[string, () => Filter]> = [
      ['no filter', () => ({})],
      ['type', () => ({ where: { type: 'odd' } })],
      ['key', () => ({ where: { key: 'key-3' } })],
      ['partition', () => ({ where: { partition: ctx.caps.guarantees.partitions ? 2 : 0 } })],
      ['metadata', () => ({ where: { metadata: { tenant: 't1' } } })],
      ['payload scalar', () => ({ where: { payload: { bucket: 3 } } })],
      ['payload object', () => ({ where: { payload: { tag: { v: 1 } } } })],
      ['from/to', () => ({ from: new Date(t0 + 5000), to: new Date(t0 + 30_000) })],
      ['afterSequence/untilSequence', () => ({ afterSequence: 2, untilSequence: 8 })],
      ['combined', () => ({ where: { type: 'even', metadata: { tenant: 't0' } }, from: new Date(t0 + 3000), untilSequence: 9 })],
      ['nothing matches', () => ({ where: { type: 'nope' } })],
    ];

    it.each(filters)('filters by %s, ascending and descending', async (_label, filter) => {
      for (const order of ['asc', 'desc'] as const) {
        const got = await ctx.rheo.query({ stream, ...filter(), order, limit: 1000 });
        expect(got.map((e) => e.id)).toEqual(expected(all, filter(), order));
      }
    });

    it('returns whole stored events and honours limit', async () => {
      const [last] = await ctx.rheo.query({ stream, order: 'desc', limit: 1 });
      expect(last).toEqual(
        all.reduce((a, b) => (b.sequence > a.sequence || (b.sequence === a.sequence && b.partition > a.partition) ? b : a)),
      );
      expect(await ctx.rheo.query({ stream, limit: 3 })).toHaveLength(3);
      expect(await ctx.rheo.query({ stream })).toHaveLength(40);
    });

    it.each(filters)('pages by 7 with queryPage and queryStream, never skipping or repeating (%s)', async (_label, filter) => {
      for (const order of ['asc', 'desc'] as const) {
        const want = expected(all, filter(), order);
        const paged: string[] = [];
        let cursor: string | undefined;
        let pages = 0;
        for (;;) {
          const page = await ctx.rheo.queryPage({ stream, ...filter(), order, limit: 7, cursor });
          expect(page.items.length).toBeLessThanOrEqual(7);
          paged.push(...page.items.map((e) => e.id));
          if (++pages > 20) throw new Error('paging does not terminate');
          if (!page.nextCursor) break;
          cursor = page.nextCursor;
        }
        expect(paged).toEqual(want);
        const streamed: string[] = [];
        for await (const e of ctx.rheo.queryStream({ stream, ...filter(), order, limit: 7 })) streamed.push(e.id);
        expect(streamed).toEqual(want);
      }
    });

    it('matches payload and metadata filters by JSON value, whatever the encoding', async () => {
      const s = await newStream(ctx, ctx.caps.guarantees.partitions ? 2 : 1);
      const values: JsonValue[] = [
        'a"b\\c/d',
        'é😀\u2028',
        'nul\u0000byte',
        '',
        '1',
        0.1,
        1e21,
        -5,
        1,
        2 ** 53,
        true,
        false,
        null,
        { x: 1, y: [1, 2] },
        { y: [1, 2], x: 1 },
        { x: 1 },
        [1, 'a'],
        ['a', 1],
        [],
        {},
      ];
      const stored: RheoEvent[] = [];
      // Each value under key `v` (payload and metadata), with a neighbour key, plus events without the key.
      for (const [i, v] of values.entries()) {
        stored.push(
          await ctx.rheo.append(s, {
            partition: i % 2 === 0 || !ctx.caps.guarantees.partitions ? 0 : 1,
            metadata: { v },
            payload: { v, w: i },
          }),
        );
      }
      stored.push(await ctx.rheo.append(s, { payload: { w: 'no v' } }));
      stored.push(await ctx.rheo.append(s, { payload: ['v'] }));
      stored.push(await ctx.rheo.append(s, { payload: 'v' }));
      for (const v of values) {
        const want = stored
          .filter((e) => {
            const p = e.payload as Record<string, JsonValue>;
            return typeof p === 'object' && p !== null && !Array.isArray(p) && Object.hasOwn(p, 'v') && jsonEqual(p.v, v);
          })
          .map((e) => e.id)
          .sort();
        expect(want.length).toBeGreaterThan(0);
        const byPayload = await ctx.rheo.query({ stream: s, where: { payload: { v } }, limit: 1000 });
        expect(byPayload.map((e) => e.id).sort()).toEqual(want);
        const byMetadata = await ctx.rheo.query({ stream: s, where: { metadata: { v } }, limit: 1000 });
        expect(byMetadata.map((e) => e.id).sort()).toEqual(want);
      }
      expect(await ctx.rheo.query({ stream: s, where: { payload: { v: 'nul' } } })).toEqual([]);
      expect(await ctx.rheo.query({ stream: s, where: { payload: { v: 0.10000001 } } })).toEqual([]);
      expect(await ctx.rheo.query({ stream: s, where: { payload: { v: [1] } } })).toEqual([]);
    });

    it('keeps a cursor stable under concurrent appends: new events only appear later', async () => {
      const s = await newStream(ctx, ctx.caps.guarantees.partitions ? 2 : 1);
      const parts = ctx.caps.guarantees.partitions ? 2 : 1;
      await ctx.rheo.appendBatch(
        s,
        Array.from({ length: 6 }, (_, i) => ({ partition: i % parts, payload: i })),
      );
      const first = await ctx.rheo.queryPage({ stream: s, limit: 4 });
      await ctx.rheo.appendBatch(
        s,
        Array.from({ length: 4 }, (_, i) => ({ partition: i % parts, payload: 100 + i })),
      );
      const rest: unknown[] = [];
      for await (const e of ctx.rheo.queryStream({ stream: s, limit: 4, cursor: first.nextCursor! })) rest.push(e.payload);
      const seen = [...first.items.map((e) => e.payload), ...rest];
      expect(new Set(seen).size).toBe(seen.length);
      expect([...seen].sort((a, b) => (a as number) - (b as number))).toEqual([0, 1, 2, 3, 4, 5, 100, 101, 102, 103]);
    });
  });
}
