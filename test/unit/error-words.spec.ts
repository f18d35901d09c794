import type { NewEvent } from '../../lib/backends/backend';
import { MemoryBackend } from '../../lib/backends/memory/memory-backend';
import { ManualClock } from '../../lib/core/clock';
import { RheoError } from '../../lib/core/errors';
import { checkPartition } from '../../lib/core/requests';
import { Rheo } from '../../lib/core/rheo';

/** The error a promise (or a call) ends in. */
async function caught(p: Promise<unknown> | (() => unknown)): Promise<RheoError> {
  try {
    await (typeof p === 'function' ? p() : p);
  } catch (err) {
    return err as RheoError;
  }
  throw new Error('expected a failure');
}

/** Only what a caller sees of an error: its code, field and words. */
const seen = (err: RheoError) => ({ code: err.code, field: err.field, message: err.message });

function newEvent(partition: number): NewEvent {
  return {
    id: `e-${partition}`,
    partition,
    timestamp: new Date(0),
    key: null,
    type: null,
    metadata: {},
    metadataJson: '{}',
    payload: 1,
    payloadJson: '1',
  };
}

describe('one source per rule: the words of each error', () => {
  let clock: ManualClock;
  let backend: MemoryBackend;
  let rheo: Rheo;

  beforeEach(async () => {
    clock = new ManualClock();
    backend = new MemoryBackend({ clock });
    rheo = new Rheo(backend);
    await rheo.createStream('s', { partitions: 2 });
    await rheo.createGroup('s', 'g');
  });

  afterEach(() => rheo.close());

  it('a missing stream is said the same by the facade, the backend and the builder', async () => {
    const expected = seen(RheoError.streamNotFound('nope'));
    expect(expected).toEqual({ code: 'stream_not_found', field: undefined, message: 'stream "nope" does not exist' });
    expect(seen(await caught(rheo.append('nope', { payload: 1 })))).toEqual(expected);
    expect(seen(await caught(rheo.lag('nope', 'g')))).toEqual(expected);
    expect(seen(await caught(() => backend.append('nope', [newEvent(0)])))).toEqual(expected);
  });

  it('a missing group is said the same by the facade, the backend and the builder', async () => {
    const expected = seen(RheoError.groupNotFound('s', 'nope'));
    expect(expected).toEqual({ code: 'group_not_found', field: undefined, message: 'group "nope" does not exist on stream "s"' });
    expect(seen(await caught(rheo.fetch('s', 'nope')))).toEqual(expected);
    expect(seen(await caught(rheo.groupInfo('s', 'nope')))).toEqual(expected);
    expect(seen(await caught(rheo.deleteGroup('s', 'nope', { confirm: true })))).toEqual(expected);
  });

  it('a lease no longer held answers stale_lease naming the operation, on every path', async () => {
    await rheo.append('s', { payload: 1 });
    const [lease] = await rheo.fetch('s', 'g', { limit: 1, leaseMs: 1000 });
    await rheo.ack(lease);
    expect(seen(await caught(rheo.ack(lease)))).toEqual(seen(RheoError.staleLease('ack')));
    expect(RheoError.staleLease('ack').message).toBe('ack: the lease is no longer held (expired, settled or replaced)');
    const [renewed] = await rheo.renewMany([lease], { leaseMs: 1000 });
    expect(!renewed.ok && seen(renewed.error)).toEqual(seen(RheoError.staleLease('renew')));
    const [released] = await rheo.releaseMany([lease]);
    expect(!released.ok && seen(released.error)).toEqual(seen(RheoError.staleLease('release')));
  });

  it('a receipt that does not match answers receipt_mismatch naming the operation', async () => {
    await rheo.append('s', { payload: 1 });
    const [lease] = await rheo.fetch('s', 'g', { limit: 1, leaseMs: 1000 });
    const forged = { ...lease, event: { ...lease.event }, receipt: 'forged' };
    expect(seen(await caught(rheo.ack(forged)))).toEqual(seen(RheoError.receiptMismatch('ack')));
    expect(RheoError.receiptMismatch('ack').message).toBe('ack: the receipt does not match the delivery');
  });

  describe('the partition of an event or a request', () => {
    it('is checked by one rule: an integer from 0 to partitions - 1, the field named', async () => {
      expect(checkPartition('p', 1, 2)).toBe(1);
      expect(seen(await caught(() => checkPartition('p', 2, 2)))).toEqual({
        code: 'invalid_argument',
        field: 'p',
        message: 'p must be between 0 and 1',
      });
      expect(seen(await caught(() => checkPartition('p', 0.5, 2)))).toEqual({
        code: 'invalid_argument',
        field: 'p',
        message: 'p must be an integer',
      });
    });

    it('is said the same by the facade (append, read, query) and the backend', async () => {
      const outOfRange = (field: string) => ({ code: 'invalid_argument', field, message: `${field} must be between 0 and 1` });
      expect(seen(await caught(rheo.append('s', { payload: 1, partition: 2 })))).toEqual(outOfRange('event.partition'));
      expect(seen(await caught(rheo.read('s', { partition: 2 })))).toEqual(outOfRange('partition'));
      expect(seen(await caught(rheo.query({ stream: 's', where: { partition: 2 } })))).toEqual(outOfRange('query.where.partition'));
      expect(seen(await caught(() => backend.append('s', [newEvent(2)])))).toEqual(outOfRange('partition'));
    });

    it('refuses a fractional partition at the backend and writes nothing of the batch', async () => {
      const err = await caught(() => backend.append('s', [newEvent(0), newEvent(0.5)]));
      expect(seen(err)).toEqual({ code: 'invalid_argument', field: 'partition', message: 'partition must be an integer' });
      expect(await rheo.read('s', { partition: 0 })).toEqual([]);
    });
  });
});
