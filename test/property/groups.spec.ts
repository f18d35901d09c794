import fc from 'fast-check';
import type { Lease } from '../../lib';
import { ManualClock, Rheo } from '../../lib';
import { MemoryBackend } from '../../lib/backends/memory/memory-backend';

type Op =
  | { kind: 'fetch'; limit: number }
  | { kind: 'ack' | 'reject'; pick: number }
  | { kind: 'nack'; pick: number; delayMs: number }
  | { kind: 'replay'; afterSequence: number }
  | { kind: 'redrive' }
  | { kind: 'reset' };

const op: fc.Arbitrary<Op> = fc.oneof(
  { arbitrary: fc.record({ kind: fc.constant('fetch' as const), limit: fc.integer({ min: 1, max: 5 }) }), weight: 4 },
  { arbitrary: fc.record({ kind: fc.constantFrom('ack' as const, 'reject' as const), pick: fc.nat() }), weight: 5 },
  { arbitrary: fc.record({ kind: fc.constant('nack' as const), pick: fc.nat(), delayMs: fc.nat({ max: 10 }) }), weight: 2 },
  { arbitrary: fc.record({ kind: fc.constant('replay' as const), afterSequence: fc.nat({ max: 4 }) }), weight: 1 },
  { arbitrary: fc.constant({ kind: 'redrive' as const }), weight: 1 },
  { arbitrary: fc.constant({ kind: 'reset' as const }), weight: 1 },
);

describe('property: groups are independent', () => {
  it('nothing done in group A changes group B or the log', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 8 }), fc.nat({ max: 3 }), fc.array(op, { maxLength: 30 }), async (n, bHeld, ops) => {
        const rheo = new Rheo(new MemoryBackend({ clock: new ManualClock() }));
        await rheo.createStream('s', { partitions: 2 });
        await rheo.appendBatch(
          's',
          Array.from({ length: n }, (_, i) => ({ partition: i % 2, payload: i })),
        );
        await rheo.createGroup('s', 'a', { maxAttempts: 2, retry: { initialMs: 0, maxMs: 0 } });
        await rheo.createGroup('s', 'b');
        // B holds some leases and has settled one, so it has state of every kind to disturb.
        const held = await rheo.fetch('s', 'b', { limit: bHeld + 1 });
        await rheo.ack(held[0]);
        const bBefore = await rheo.groupInfo('s', 'b');
        const log = await rheo.query({ stream: 's' });

        const leases: Lease[] = [];
        for (const o of ops) {
          if (o.kind === 'fetch') leases.push(...(await rheo.fetch('s', 'a', { limit: o.limit })));
          else if (o.kind === 'replay') await rheo.replay('s', 'a', { afterSequence: o.afterSequence });
          else if (o.kind === 'redrive') await rheo.redrive('s', 'a', { all: true });
          else if (o.kind === 'reset') await rheo.reset('s', 'a', { confirm: true });
          else if (leases.length > 0) {
            const lease = leases[o.pick % leases.length];
            const call =
              o.kind === 'nack' ? rheo.nack(lease, { delayMs: o.delayMs }) : o.kind === 'ack' ? rheo.ack(lease) : rheo.reject(lease);
            // A's own leases may be stale (replay, reset, settled): that is A's business.
            await call.catch((err) => expect(err.code).toBe('stale_lease'));
          }
          expect(await rheo.groupInfo('s', 'b')).toEqual(bBefore);
        }
        expect(await rheo.query({ stream: 's' })).toEqual(log);
        // B's own leases still settle, and B then sees every remaining event exactly once.
        for (const l of held.slice(1)) await rheo.ack(l);
        const rest = await rheo.fetch('s', 'b', { limit: 100 });
        expect(rest.length + held.length).toBe(n);
        expect(new Set([...held, ...rest].map((l) => l.event.id)).size).toBe(n);
      }),
      { numRuns: 100 },
    );
  });
});
