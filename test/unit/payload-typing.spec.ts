import { ManualClock, Rheo, RheoContext } from '../../lib';
import { MemoryBackend } from '../../lib/backends/memory/memory-backend';
import type { Lease, RheoEvent } from '../../lib';

// Compiled by `npm run typecheck` (CI): user interfaces are payload types, though
// an interface has no index signature and so is not assignable to JsonValue.
interface CurveUpdate {
  currency: string;
  rate: number;
  tenors: Array<{ days: number; rate: number }>;
}

describe('payload typing', () => {
  it('appends, reads and consumes a user interface as the payload type', async () => {
    const rheo = new Rheo(new MemoryBackend({ clock: new ManualClock() }));
    await rheo.createStream('curves');
    await rheo.createGroup('curves', 'risk');
    const curve: CurveUpdate = { currency: 'EUR', rate: 0.5, tenors: [{ days: 30, rate: 0.4 }] };
    const stored: RheoEvent<CurveUpdate> = await rheo.append<CurveUpdate>('curves', { key: curve.currency, payload: curve });
    const batch: RheoEvent<CurveUpdate>[] = await rheo.appendBatch<CurveUpdate>('curves', [{ payload: curve }]);
    expect(stored.payload.tenors[0].days).toBe(30);
    expect(batch[0].payload.currency).toBe('EUR');
    const [lease] = (await rheo.fetch('curves', 'risk', { limit: 1 })) as unknown as Lease<CurveUpdate>[];
    const ctx = new RheoContext<CurveUpdate>(lease);
    const rate: number = ctx.event.payload.rate;
    expect(rate).toBe(0.5);
    await rheo.ack(lease);
  });
});
