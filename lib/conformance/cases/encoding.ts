import type { JsonValue } from '../../core/types';
import { MAX_NAME_LENGTH, MAX_PARTITIONS } from '../../core/limits';
import { ConformanceContext, drain, expectCode, LEASE_MS } from '../context';

/**
 * Names and values that break naive storage: key syntax, SQL wildcards and
 * quotes, hash tags, JSON text a database would rewrite.
 */
export function encodingCases(ctx: ConformanceContext): void {
  describe('encoding', () => {
    it('keeps names with key syntax, wildcards and quotes apart and intact', async () => {
      const base = ctx.name('n');
      // Pairs an escaping bug would merge: "a:b" + "c" against "a" + "b:c", and so on.
      const pairs: Array<[string, string]> = [
        [`${base}:x`, 'y'],
        [base, 'x:y'],
        [`${base}{t}`, 'g'],
        [`${base}%`, "g'; DROP TABLE x; --"],
        [`${base}_`, 'g"\\'],
        [`${base} ü 日本 🌍`, 'g*?[x]'],
        [`${base}${'x'.repeat(MAX_NAME_LENGTH - base.length)}`, 'y'.repeat(MAX_NAME_LENGTH)],
      ];
      for (const [i, [stream, group]] of pairs.entries()) {
        await ctx.rheo.createStream(stream);
        await ctx.rheo.createGroup(stream, group);
        await ctx.rheo.appendBatch(
          stream,
          Array.from({ length: i + 1 }, (_, j) => ({ id: `%_:{'"${j}`, key: `k:{${i}}`, type: group, payload: { stream, group } })),
        );
      }
      const listed = (await ctx.rheo.listStreams()).map((s) => s.name);
      for (const [i, [stream, group]] of pairs.entries()) {
        expect(listed).toContain(stream);
        expect((await ctx.rheo.listGroups(stream)).map((g) => g.group)).toEqual([group]);
        const lag = await ctx.rheo.lag(stream, group);
        expect(lag.lag).toBe(i + 1);
        const leases = await drain(ctx, stream, group);
        expect(leases).toHaveLength(i + 1);
        for (const l of leases) {
          expect(l).toMatchObject({ stream, group, event: { stream, type: group, key: `k:{${i}}`, payload: { stream, group } } });
          expect(l.event.id).toBe(`%_:{'"${l.event.sequence - 1}`);
          await ctx.rheo.ack(l);
        }
        expect(await ctx.rheo.query({ stream, where: { type: group } })).toHaveLength(i + 1);
      }
    });

    it('round-trips JSON a database might rewrite', async () => {
      const stream = ctx.name('s');
      await ctx.rheo.createStream(stream);
      const payloads: JsonValue[] = [
        { nul: 'a\u0000b', ctrl: '\u0001\u001f\u007f', quote: '"\'\\', emoji: '🌍👍🏽', rtl: 'مرحبا' },
        { big: Number.MAX_SAFE_INTEGER, small: Number.MIN_SAFE_INTEGER, float: 0.1 + 0.2, exp: 1e308, tiny: 5e-324, neg: -1.5 },
        { nested: [[[[]]], {}, [{ a: null }]], 'key.with.dots': 1, 'key with "quotes"': 2, '': 'empty key' },
        '',
        'a\u0000',
        0,
        false,
        [],
        {},
      ];
      const stored = await ctx.rheo.appendBatch(
        stream,
        payloads.map((payload) => ({ payload, metadata: { source: 'a\u0000b', note: '🌍' } })),
      );
      const read = await ctx.rheo.read(stream, { limit: 100 });
      expect(read.map((e) => e.payload)).toEqual(payloads);
      expect(read.every((e) => e.metadata.source === 'a\u0000b' && e.metadata.note === '🌍')).toBe(true);
      expect(read).toEqual(stored);
      const byPayload = await ctx.rheo.query({ stream, where: { payload: { nul: 'a\u0000b' } } });
      expect(byPayload.map((e) => e.sequence)).toEqual([1]);
    });

    it('refuses strings that are not well-formed Unicode, so two of them never collide, and writes nothing', async () => {
      // A lone surrogate has no UTF-8 encoding: a store would replace it, and
      // "x\uD83D" and "x\uD83E" would become the same id, name or value.
      const stream = ctx.name('s');
      await ctx.rheo.createStream(stream);
      await ctx.rheo.createGroup(stream, 'g');
      const kept = await ctx.rheo.append(stream, { id: 'x', payload: 1 });
      const bad = ['x\uD83D', 'x\uD83E', '\uDC00x', `${'🌍'.slice(0, 1)}`];
      for (const s of bad) {
        await expectCode(ctx.rheo.append(stream, { id: s, payload: 1 }), 'invalid_argument', 'event.id');
        await expectCode(ctx.rheo.append(stream, { key: s, payload: 1 }), 'invalid_argument', 'event.key');
        await expectCode(ctx.rheo.append(stream, { type: s, payload: 1 }), 'invalid_argument', 'event.type');
        await expectCode(ctx.rheo.append(stream, { metadata: { source: s }, payload: 1 }), 'invalid_argument', 'event.metadata.source');
        await expectCode(ctx.rheo.append(stream, { payload: { text: s } }), 'invalid_argument', 'event.payload.text');
        await expectCode(ctx.rheo.append(stream, { payload: [s] }), 'invalid_argument', 'event.payload[0]');
        await expectCode(ctx.rheo.createStream(s), 'invalid_argument', 'stream');
        await expectCode(ctx.rheo.createGroup(stream, s), 'invalid_argument', 'group');
        await expectCode(ctx.rheo.append(stream, { payload: { [s]: 1 } }), 'invalid_argument');
      }
      expect(await ctx.rheo.read(stream, { limit: 10 })).toEqual([kept]);
      expect((await ctx.rheo.listGroups(stream)).map((g) => g.group)).toEqual(['g']);
      expect((await ctx.rheo.listStreams()).filter((s) => bad.includes(s.name))).toEqual([]);
      // A well-formed pair is fine, and distinct pairs stay distinct.
      const [a, b] = await ctx.rheo.appendBatch(stream, [
        { id: 'x\uD83D\uDE00', payload: 'a' },
        { id: 'x\uD83D\uDE01', payload: 'b' },
      ]);
      expect([a.sequence, b.sequence]).toEqual([2, 3]);
      expect((await ctx.rheo.append(stream, { id: 'x\uD83D\uDE01', payload: 'c' })).payload).toBe('b');
    });

    it("matches payload filters on own keys only: { __proto__: {} } is a key, not every object's prototype", async () => {
      const stream = ctx.name('s');
      await ctx.rheo.createStream(stream);
      const withKey = JSON.parse('{"__proto__": {}, "n": 2}') as JsonValue;
      await ctx.rheo.appendBatch(stream, [{ payload: { n: 1 } }, { payload: withKey }, { payload: 'scalar' }]);
      const where = { payload: JSON.parse('{"__proto__": {}}') as Record<string, JsonValue> };
      const found = await ctx.rheo.query({ stream, where });
      expect(found.map((e) => e.sequence)).toEqual([2]);
      expect(Object.hasOwn(found[0].payload as object, '__proto__')).toBe(true);
      // Metadata cannot hold the key at all: refused with a clear error, nothing written.
      await expectCode(
        ctx.rheo.append(stream, { payload: 1, metadata: JSON.parse('{"__proto__": {"x": 1}}') }),
        'invalid_argument',
        'event.metadata.__proto__',
      );
      expect(await ctx.rheo.read(stream, { limit: 10 })).toHaveLength(3);
    });

    if (ctx.caps.guarantees.partitions) {
      it(`supports streams of MAX_PARTITIONS (${MAX_PARTITIONS}) partitions`, async () => {
        const stream = ctx.name('wide');
        await ctx.rheo.createStream(stream, { partitions: MAX_PARTITIONS });
        await ctx.rheo.createGroup(stream, 'g');
        await ctx.rheo.appendBatch(stream, [
          { partition: MAX_PARTITIONS - 1, payload: 'last' },
          { partition: 0, payload: 'first' },
        ]);
        const lag = await ctx.rheo.lag(stream, 'g');
        expect(lag.partitions).toHaveLength(MAX_PARTITIONS);
        expect(lag.lag).toBe(2);
        const leases = await ctx.rheo.fetch(stream, 'g', { limit: 10, leaseMs: LEASE_MS });
        expect(leases.map((l) => l.event.payload).sort()).toEqual(['first', 'last']);
        for (const l of leases) await ctx.rheo.ack(l);
        expect((await ctx.rheo.lag(stream, 'g')).lag).toBe(0);
      });
    }
  });
}
