import fc from 'fast-check';
import { ManualClock, Rheo } from '../../lib';
import { MAX_NAME_LENGTH, MAX_PARTITIONS } from '../../lib/core/limits';
import { MemoryBackend } from '../../lib/backends/memory/memory-backend';
import { murmur3, partitionForKey } from '../../lib/core/partitioner';

// Keys as users write them: any Unicode text a name may hold (no control characters).
const key = fc
  .string({ unit: 'binary', minLength: 1, maxLength: 40 })
  // eslint-disable-next-line no-control-regex -- names may not hold control characters
  .filter((k) => k.length <= MAX_NAME_LENGTH && !/[\u0000-\u001f\u007f]/.test(k));

describe('property: key routing', () => {
  it('is an integer in range, deterministic, and the documented murmur3 modulo', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 64 }), fc.integer({ min: 1, max: MAX_PARTITIONS }), (k, n) => {
        const p = partitionForKey(k, n);
        expect(Number.isInteger(p)).toBe(true);
        expect(p).toBeGreaterThanOrEqual(0);
        expect(p).toBeLessThan(n);
        expect(partitionForKey(k, n)).toBe(p);
        expect(p).toBe(n === 1 ? 0 : murmur3(new TextEncoder().encode(k)) % n);
      }),
      { numRuns: 500 },
    );
  });

  it('sends every event of a key to one partition through append and appendBatch', async () => {
    const rheo = new Rheo(new MemoryBackend({ clock: new ManualClock() }));
    const counts = [1, 2, 3, 7, 16, 1024];
    for (const n of counts) await rheo.createStream(`s${n}`, { partitions: n });
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...counts), fc.array(key, { minLength: 1, maxLength: 6 }), async (n, keys) => {
        const single = await rheo.append(`s${n}`, { key: keys[0], payload: null });
        const batch = await rheo.appendBatch(
          `s${n}`,
          [...keys, ...keys].map((k) => ({ key: k, payload: null })),
        );
        expect(single.partition).toBe(partitionForKey(keys[0], n));
        batch.forEach((e, i) => expect(e.partition).toBe(partitionForKey(keys[i % keys.length], n)));
        // The stored events agree, and per-partition sequences stay contiguous.
        for (const e of batch) {
          const [stored] = await rheo.read(`s${n}`, { partition: e.partition, afterSequence: e.sequence - 1, limit: 1 });
          expect(stored).toEqual(e);
        }
      }),
      { numRuns: 100 },
    );
  });
});
