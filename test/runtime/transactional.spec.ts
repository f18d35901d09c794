// Transactional consumers are refused where they cannot keep their promise, before
// anything runs: a backend without ackInTransaction, or a batch (docs/adr/030).
import { Consumer, Rheo, RheoContext, RheoError } from '../../lib';
import { MemoryBackend } from '../../lib/backends/memory/memory-backend';
import type { Lease } from '../../lib';

function fieldOf(make: () => unknown): { field?: string; message: string } {
  try {
    make();
  } catch (err) {
    expect(err).toBeInstanceOf(RheoError);
    expect((err as RheoError).code).toBe('invalid_argument');
    return { field: (err as RheoError).field, message: (err as RheoError).message };
  }
  throw new Error('expected a RheoError');
}

describe('transactional option', () => {
  const rheo = new Rheo(new MemoryBackend());
  afterAll(() => rheo.close());
  const handler = async () => undefined;

  it('is refused on a backend that cannot ack inside a transaction, naming the field and the backend', () => {
    expect(rheo.backend.capabilities.mechanisms.transactionalAck).toBe(false);
    const e = fieldOf(() => new Consumer(rheo, { stream: 's', group: 'g', transactional: true }, handler));
    expect(e.field).toBe('transactional');
    expect(e.message).toMatch(/memory backend cannot/);
  });

  it('must be a boolean, and cannot be combined with batch', () => {
    expect(fieldOf(() => new Consumer(rheo, { stream: 's', group: 'g', transactional: 'yes' as never }, handler)).field).toBe(
      'transactional',
    );
    expect(
      fieldOf(() => new Consumer(rheo, { stream: 's', group: 'g', transactional: true, batch: { size: 10 } } as never, handler as never))
        .field,
    ).toBe('transactional');
  });

  it('is off by default and accepted as false anywhere', () => {
    expect(new Consumer(rheo, { stream: 's', group: 'g' }, handler).config.transactional).toBe(false);
    expect(new Consumer(rheo, { stream: 's', group: 'g', transactional: false }, handler).config.transactional).toBe(false);
  });

  it('ctx.manager of a delivery that is not transactional throws instead of letting a write run outside a transaction', () => {
    const ctx = new RheoContext({} as Lease, { signal: new AbortController().signal });
    expect(fieldOf(() => ctx.manager).field).toBe('transactional');
    const manager = { query: async () => [] };
    expect(new RheoContext({} as Lease, { signal: new AbortController().signal, manager }).manager).toBe(manager);
  });
});
