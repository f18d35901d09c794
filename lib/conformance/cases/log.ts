import type { AppendInput, JsonValue, RheoEvent } from '../../core/types';
import type { NewEvent } from '../../backends/backend';
import { partitionForKey } from '../../core/partitioner';
import { ConformanceContext, highWatermarks, newStream } from '../context';

/** Per partition, the sequences seen, in the order seen. */
function sequencesByPartition(evs: RheoEvent[], partitions: number): number[][] {
  const out: number[][] = Array.from({ length: partitions }, () => []);
  for (const e of evs) out[e.partition].push(e.sequence);
  return out;
}

const range = (n: number) => Array.from({ length: n }, (_, i) => i + 1);

export function logCases(ctx: ConformanceContext): void {
  describe('event log', () => {
    it('stores an event and returns it unchanged, as a fresh object each time', async () => {
      const stream = await newStream(ctx);
      const input: AppendInput = {
        id: 'evt-1',
        key: 'USD',
        type: 'curve_update',
        metadata: { correlationId: 'c-1', schemaVersion: 2, tags: ['a', 'b'] },
        payload: { rate: 1.25, tenor: '5y', nested: { list: [1, null, true, 'x'] }, empty: {} },
      };
      const stored = await ctx.rheo.append(stream, input);
      expect(stored).toEqual({
        id: 'evt-1',
        stream,
        partition: 0,
        sequence: 1,
        timestamp: new Date(ctx.clock.now()),
        key: 'USD',
        type: 'curve_update',
        metadata: input.metadata,
        payload: input.payload,
      });
      // Mutating what we got back must not change the log.
      (stored.payload as { rate: number }).rate = 99;
      stored.metadata.correlationId = 'changed';
      const [read] = await ctx.rheo.read(stream);
      expect(read).toEqual({ ...stored, payload: input.payload, metadata: input.metadata });
      await ctx.rheo.createGroup(stream, 'g');
      const [lease] = await ctx.rheo.fetch(stream, 'g');
      expect(lease.event).toEqual(read);
      await ctx.rheo.ack(lease);
      expect(await ctx.rheo.read(stream)).toEqual([read]);
    });

    it('stores scalar and array payloads and a caller-supplied timestamp', async () => {
      const stream = await newStream(ctx);
      const at = new Date(Date.UTC(2025, 5, 1, 12, 0, 0, 123));
      const payloads = ['text', 42, -0.5, true, null, [1, [2, { a: 3 }]], { 'key with spaces': 'ünïcødé ✓' }];
      const stored = await ctx.rheo.appendBatch(
        stream,
        payloads.map((payload) => ({ payload, timestamp: at })),
      );
      const read = await ctx.rheo.read(stream);
      expect(read.map((e) => e.payload)).toEqual(payloads);
      expect(read.every((e) => e.timestamp.getTime() === at.getTime())).toBe(true);
      expect(read.map((e) => [e.key, e.type])).toEqual(payloads.map(() => [null, null]));
      expect(read).toEqual(stored);
    });

    it('gives contiguous per-partition sequences to single and batch appends, in input order', async () => {
      const P = ctx.caps.guarantees.partitions ? 4 : 1;
      const stream = await newStream(ctx, P);
      const all: RheoEvent[] = [];
      for (let i = 0; i < 12; i++) all.push(await ctx.rheo.append(stream, { key: `k${i % 5}`, payload: { i } }));
      const batch = Array.from({ length: 30 }, (_, i): AppendInput =>
        i % 3 === 0 ? { partition: i % P, payload: { b: i } } : { key: `k${i % 7}`, payload: { b: i } },
      );
      const stored = await ctx.rheo.appendBatch(stream, batch);
      expect(stored.map((e) => e.payload)).toEqual(batch.map((b) => b.payload));
      stored.forEach((e, i) => expect(e.partition).toBe(batch[i].partition ?? partitionForKey(batch[i].key!, P)));
      all.push(...stored);
      all.push(
        ...(await ctx.rheo.appendBatch(stream, [
          { key: 'k1', payload: 1 },
          { key: 'k1', payload: 2 },
        ])),
      );
      const seqs = sequencesByPartition(all, P);
      seqs.forEach((s) => expect(s).toEqual(range(s.length)));
      expect(await highWatermarks(ctx, stream)).toEqual(seqs.map((s) => s.length));
      for (let p = 0; p < P; p++) {
        const read = await ctx.rheo.read(stream, { partition: p, limit: 1000 });
        expect(read.map((e) => e.id)).toEqual(all.filter((e) => e.partition === p).map((e) => e.id));
      }
    });

    it('routes keys stably: same key same partition, equal to partitionForKey; no key goes to partition 0', async () => {
      const P = ctx.caps.guarantees.partitions ? 8 : 1;
      const stream = await newStream(ctx, P);
      const keys = ['USD', 'EUR', 'JPY', '日本', 'order-42', 'a', 'b', 'c', 'd', 'e'];
      for (const round of [1, 2]) {
        const evs = await ctx.rheo.appendBatch(
          stream,
          keys.map((key) => ({ key, payload: round })),
        );
        evs.forEach((e, i) => expect(e.partition).toBe(partitionForKey(keys[i], P)));
      }
      const single = await ctx.rheo.append(stream, { key: 'USD', payload: 3 });
      expect(single.partition).toBe(partitionForKey('USD', P));
      expect((await ctx.rheo.append(stream, { payload: 'no key' })).partition).toBe(0);
      if (P > 1) expect(new Set(keys.map((k) => partitionForKey(k, P))).size).toBeGreaterThan(1);
    });

    it('appends idempotently by id: the stored event comes back and nothing is written', async () => {
      const stream = await newStream(ctx);
      const first = await ctx.rheo.append(stream, { id: 'x', payload: { v: 1 } });
      const again = await ctx.rheo.append(stream, { id: 'x', payload: { v: 2 } });
      expect(again).toEqual(first);
      expect(await highWatermarks(ctx, stream)).toEqual([1]);

      // Within one batch: the second occurrence is the first one's event.
      const inBatch = await ctx.rheo.appendBatch(stream, [
        { id: 'a', payload: 'a1' },
        { id: 'a', payload: 'a2' },
        { id: 'x', payload: 'x2' },
      ]);
      expect(inBatch.map((e) => [e.id, e.sequence, e.payload])).toEqual([
        ['a', 2, 'a1'],
        ['a', 2, 'a1'],
        ['x', 1, { v: 1 }],
      ]);
      expect(await highWatermarks(ctx, stream)).toEqual([2]);

      // Across batches.
      const next = await ctx.rheo.appendBatch(stream, [
        { id: 'b', payload: 'b' },
        { id: 'a', payload: 'a3' },
        { id: 'c', payload: 'c' },
      ]);
      expect(next.map((e) => [e.id, e.sequence, e.payload])).toEqual([
        ['b', 3, 'b'],
        ['a', 2, 'a1'],
        ['c', 4, 'c'],
      ]);
      expect(await highWatermarks(ctx, stream)).toEqual([4]);
      expect((await ctx.rheo.read(stream)).map((e) => e.id)).toEqual(['x', 'a', 'b', 'c']);
    });

    it('tells how many events of an append were idempotent repeats, when it tells (AppendedEvents.repeats)', async () => {
      const stream = await newStream(ctx);
      const event = (id: string, payload: JsonValue): NewEvent => ({
        id,
        partition: 0,
        timestamp: new Date(ctx.clock.now()),
        key: null,
        type: null,
        metadata: {},
        metadataJson: '{}',
        payload,
        payloadJson: JSON.stringify(payload),
      });
      const reported = [
        (await ctx.backend.append(stream, [event('x', 1)], {})).repeats,
        (await ctx.backend.append(stream, [event('x', 1)], {})).repeats,
        (await ctx.backend.append(stream, [event('a', 2), event('a', 2), event('x', 1), event('b', 3)], {})).repeats,
        (await ctx.backend.append(stream, [event('c', 4), event('d', 5)], {})).repeats,
      ];
      // Optional in the contract: a backend that does not tell has every event counted as written.
      if (reported.some((r) => r !== undefined)) expect(reported).toEqual([0, 1, 2, 0]);
      expect(await highWatermarks(ctx, stream)).toEqual([5]);
    });

    it('keeps event ids unique per stream, not across streams', async () => {
      const s1 = await newStream(ctx);
      const s2 = await newStream(ctx);
      await ctx.rheo.append(s1, { id: 'same', payload: 1 });
      const other = await ctx.rheo.append(s2, { id: 'same', payload: 2 });
      expect(other).toMatchObject({ stream: s2, sequence: 1, payload: 2 });
    });

    it('reads one partition after a sequence, bounded by limit', async () => {
      const stream = await newStream(ctx);
      await ctx.rheo.appendBatch(
        stream,
        Array.from({ length: 10 }, (_, i) => ({ payload: i })),
      );
      expect((await ctx.rheo.read(stream, { afterSequence: 3, limit: 4 })).map((e) => e.sequence)).toEqual([4, 5, 6, 7]);
      expect((await ctx.rheo.read(stream, { afterSequence: 8 })).map((e) => e.payload)).toEqual([8, 9]);
      expect(await ctx.rheo.read(stream, { afterSequence: 10 })).toEqual([]);
      expect(await ctx.rheo.read(stream, { afterSequence: 50 })).toEqual([]);
    });
  });
}
