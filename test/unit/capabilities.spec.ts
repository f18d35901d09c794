import { RheoError } from '../../lib';
import { createCapabilities } from '../../lib/backends/capabilities';
import { MemoryBackend } from '../../lib/backends/memory/memory-backend';

const GUARANTEES = ['durable', 'distributed', 'partitions', 'contiguousFrontier', 'replay', 'orderedPartitions', 'flowControl'];
const MECHANISMS = ['notifications', 'blockingReads', 'batchWrites', 'secondaryIndexes', 'transactionalAppend', 'transactionalAck'];

function invalidField(make: () => unknown): string | undefined {
  try {
    make();
  } catch (err) {
    expect(err).toBeInstanceOf(RheoError);
    expect((err as RheoError).code).toBe('invalid_argument');
    return (err as RheoError).field;
  }
  throw new Error('expected createCapabilities to throw');
}

describe('createCapabilities', () => {
  it('fills every flag: omitted ones false, the invariants true', () => {
    const caps = createCapabilities({});
    expect(Object.keys(caps.guarantees).sort()).toEqual([...GUARANTEES, 'atLeastOnce', 'leaseFencing'].sort());
    expect(Object.keys(caps.mechanisms).sort()).toEqual([...MECHANISMS].sort());
    for (const g of GUARANTEES) expect(caps.guarantees[g as keyof typeof caps.guarantees]).toBe(false);
    for (const m of MECHANISMS) expect(caps.mechanisms[m as keyof typeof caps.mechanisms]).toBe(false);
    expect(caps.guarantees.atLeastOnce).toBe(true);
    expect(caps.guarantees.leaseFencing).toBe(true);
  });

  it('keeps the given flags', () => {
    const caps = createCapabilities({ guarantees: { durable: true, replay: true }, mechanisms: { notifications: true } });
    expect(caps.guarantees).toMatchObject({ durable: true, replay: true, distributed: false });
    expect(caps.mechanisms).toMatchObject({ notifications: true, batchWrites: false });
  });

  it('accepts the invariants given as true, and its own output (round trip)', () => {
    const caps = createCapabilities({ guarantees: { atLeastOnce: true, leaseFencing: true, partitions: true } });
    expect(createCapabilities(caps)).toEqual(caps);
  });

  it('is frozen, so a backend cannot change what it promised', () => {
    const caps = createCapabilities({ guarantees: { durable: true } });
    expect(Object.isFrozen(caps)).toBe(true);
    expect(Object.isFrozen(caps.guarantees)).toBe(true);
    expect(Object.isFrozen(caps.mechanisms)).toBe(true);
    expect(() => {
      (caps.guarantees as { durable: boolean }).durable = false;
    }).toThrow(TypeError);
  });

  it.each([
    ['a false invariant', { guarantees: { atLeastOnce: false } }, 'capabilities.guarantees.atLeastOnce'],
    ['a false fencing invariant', { guarantees: { leaseFencing: false } }, 'capabilities.guarantees.leaseFencing'],
    ['an unknown guarantee', { guarantees: { exactlyOnce: true } }, 'capabilities.guarantees.exactlyOnce'],
    ['an unknown mechanism', { mechanisms: { telepathy: true } }, 'capabilities.mechanisms.telepathy'],
    ['a non-boolean guarantee', { guarantees: { durable: 'yes' } }, 'capabilities.guarantees.durable'],
    ['a non-boolean mechanism', { mechanisms: { batchWrites: 1 } }, 'capabilities.mechanisms.batchWrites'],
    ['an invariant among the mechanisms', { mechanisms: { atLeastOnce: true } }, 'capabilities.mechanisms.atLeastOnce'],
  ])('rejects %s, naming the flag', (_label, input, field) => {
    expect(invalidField(() => createCapabilities(input as never))).toBe(field);
  });

  it("declares the memory backend's capabilities honestly", () => {
    const caps = new MemoryBackend().capabilities;
    expect(caps.guarantees).toEqual({
      durable: false,
      distributed: false,
      partitions: true,
      contiguousFrontier: true,
      replay: true,
      orderedPartitions: true,
      flowControl: true,
      atLeastOnce: true,
      leaseFencing: true,
    });
    expect(caps.mechanisms.transactionalAppend).toBe(false);
    expect(createCapabilities(caps)).toEqual(caps);
  });
});
