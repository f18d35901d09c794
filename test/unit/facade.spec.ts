import { ManualClock, Rheo, RheoError } from '../../lib';
import { DEFAULT_FETCH_LIMIT, DEFAULT_LEASE_MS, DEFAULT_MAX_ATTEMPTS } from '../../lib/core/limits';
import { DEFAULT_RETRY } from '../../lib/core/backoff';
import { MemoryBackend } from '../../lib/backends/memory/memory-backend';
import { partitionForKey } from '../../lib/core/partitioner';

/** A memory backend whose connection fails a given number of times, the way a driver does: with a plain Error. */
class FlakyInitBackend extends MemoryBackend {
  inits = 0;
  constructor(private failures: number) {
    super({ clock: new ManualClock() });
  }
  override async init(): Promise<void> {
    this.inits++;
    await new Promise((r) => setImmediate(r));
    if (this.failures-- > 0) throw new Error('ECONNREFUSED 127.0.0.1:5432');
    return super.init();
  }
}

describe('Rheo facade', () => {
  let clock: ManualClock;
  let rheo: Rheo;

  beforeEach(() => {
    clock = new ManualClock();
    rheo = new Rheo(new MemoryBackend({ clock }));
  });

  describe('init', () => {
    it('connects once however many calls race for it', async () => {
      const backend = new FlakyInitBackend(0);
      const r = new Rheo(backend);
      await Promise.all([r.init(), r.init(), r.listStreams(), r.createStream('s')]);
      await r.init();
      expect(backend.inits).toBe(1);
    });

    it('maps a driver failure to backend_unavailable with the cause, and retries on the next call', async () => {
      const backend = new FlakyInitBackend(1);
      const r = new Rheo(backend);
      const err = await r.createStream('s').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(RheoError);
      expect(err).toMatchObject({ code: 'backend_unavailable', message: 'ECONNREFUSED 127.0.0.1:5432' });
      expect((err as RheoError).cause).toBeInstanceOf(Error);
      expect(await r.listStreams()).toEqual([]);
      await r.createStream('s');
      expect(backend.inits).toBe(2);
    });

    it('fails every call with backend_unavailable once the backend is closed; close is idempotent', async () => {
      await rheo.createStream('s');
      await rheo.close();
      await rheo.close();
      await expect(rheo.append('s', { payload: 1 })).rejects.toMatchObject({ code: 'backend_unavailable' });
      await expect(rheo.ping()).rejects.toMatchObject({ code: 'backend_unavailable' });
    });
  });

  describe('defaults', () => {
    it('creates one-partition streams and groups with the documented defaults', async () => {
      expect(await rheo.createStream('s')).toMatchObject({ partitions: 1 });
      expect(await rheo.createGroup('s', 'g')).toMatchObject({ maxAttempts: DEFAULT_MAX_ATTEMPTS, retry: DEFAULT_RETRY, ordering: 'none' });
    });

    it('fetches at most DEFAULT_FETCH_LIMIT leases of DEFAULT_LEASE_MS', async () => {
      await rheo.createStream('s');
      await rheo.createGroup('s', 'g');
      await rheo.appendBatch(
        's',
        Array.from({ length: DEFAULT_FETCH_LIMIT + 5 }, (_, i) => ({ payload: i })),
      );
      const leases = await rheo.fetch('s', 'g');
      expect(leases).toHaveLength(DEFAULT_FETCH_LIMIT);
      expect(leases.every((l) => l.expiresAt.getTime() === clock.now() + DEFAULT_LEASE_MS)).toBe(true);
    });

    it("stores 'retry' and 'rejected' as the default reasons, and truncates long ones", async () => {
      await rheo.createStream('s');
      await rheo.createGroup('s', 'g', { maxAttempts: 1 });
      await rheo.appendBatch('s', [{ payload: 1 }, { payload: 2 }, { payload: 3 }]);
      const [a, b, c] = await rheo.fetch('s', 'g');
      await rheo.nack(a);
      await rheo.reject(b);
      await rheo.nack(c, { reason: 'x'.repeat(2000) });
      expect((await rheo.deadLetters('s', 'g')).map((d) => d.reason)).toEqual(['retry', 'rejected', 'x'.repeat(1000)]);
    });
  });

  describe('routing', () => {
    it('routes by key, lets an explicit partition override it, and sends keyless events to partition 0', async () => {
      await rheo.createStream('s', { partitions: 16 });
      const byKey = await rheo.append('s', { key: 'EUR', payload: 1 });
      expect(byKey.partition).toBe(partitionForKey('EUR', 16));
      const pinned = await rheo.append('s', { key: 'EUR', partition: (byKey.partition + 1) % 16, payload: 2 });
      expect(pinned.partition).toBe((byKey.partition + 1) % 16);
      expect((await rheo.append('s', { payload: 3 })).partition).toBe(0);
    });
  });

  describe('append', () => {
    it('leaves the caller input untouched and timestamps from the clock', async () => {
      await rheo.createStream('s');
      const input = { key: 'k', payload: { nested: { a: [1, 2] } }, metadata: { source: 'test', dropped: undefined } };
      const copy = JSON.parse(JSON.stringify(input));
      clock.advance(1234);
      const stored = await rheo.append('s', input);
      expect(JSON.parse(JSON.stringify(input))).toEqual(copy);
      expect(stored.timestamp.getTime()).toBe(clock.now());
      expect(stored.metadata).toEqual({ source: 'test' });
      expect(stored.payload).not.toBe(input.payload);
    });

    it('answers an empty batch with no events', async () => {
      await rheo.createStream('s');
      expect(await rheo.appendBatch('s', [])).toEqual([]);
    });
  });

  describe('paging', () => {
    beforeEach(async () => {
      await rheo.createStream('s');
      await rheo.appendBatch(
        's',
        Array.from({ length: 6 }, (_, i) => ({ payload: i })),
      );
    });

    it('sets nextCursor only on a full page', async () => {
      const short = await rheo.queryPage({ stream: 's', limit: 10 });
      expect(short.items).toHaveLength(6);
      expect(short.nextCursor).toBeNull();
      const first = await rheo.queryPage({ stream: 's', limit: 3 });
      expect(first.nextCursor).not.toBeNull();
      const second = await rheo.queryPage({ stream: 's', limit: 3, cursor: first.nextCursor! });
      expect(second.items.map((e) => e.payload)).toEqual([3, 4, 5]);
      const third = await rheo.queryPage({ stream: 's', limit: 3, cursor: second.nextCursor! });
      expect(third).toEqual({ items: [], nextCursor: null });
    });

    it('starts queryStream from a given cursor', async () => {
      const first = await rheo.queryPage({ stream: 's', limit: 4 });
      const rest = [];
      for await (const e of rheo.queryStream({ stream: 's', limit: 4, cursor: first.nextCursor! })) rest.push(e.payload);
      expect(rest).toEqual([4, 5]);
    });
  });

  describe('renew', () => {
    it('returns the lease with the new expiry and nothing else changed', async () => {
      await rheo.createStream('s');
      await rheo.createGroup('s', 'g');
      await rheo.append('s', { payload: 1 });
      const [lease] = await rheo.fetch('s', 'g', { leaseMs: 1000 });
      clock.advance(500);
      const renewed = await rheo.renew(lease, { leaseMs: 2000 });
      expect(renewed).toEqual({ ...lease, expiresAt: new Date(clock.now() + 2000) });
      clock.advance(1000);
      const again = await rheo.renew(renewed);
      expect(again.expiresAt.getTime()).toBe(clock.now() + DEFAULT_LEASE_MS);
    });
  });

  describe('replay by query', () => {
    it('re-opens every matching event across more than one page of results', async () => {
      await rheo.createStream('s');
      await rheo.createGroup('s', 'g');
      await rheo.appendBatch(
        's',
        Array.from({ length: 2500 }, (_, i) => ({ type: i % 2 ? 'odd' : 'even', payload: i })),
      );
      for (;;) {
        const leases = await rheo.fetch('s', 'g', { limit: 1000 });
        if (leases.length === 0) break;
        await rheo.settleMany(leases.map((lease) => ({ kind: 'ack' as const, lease })));
      }
      expect(await rheo.replay('s', 'g', { query: { where: { type: 'even' } } })).toBe(1250);
      expect((await rheo.lag('s', 'g')).lag).toBe(2500);
      let redelivered = 0;
      for (;;) {
        const leases = await rheo.fetch('s', 'g', { limit: 1000 });
        if (leases.length === 0) break;
        expect(leases.every((l) => l.event.type === 'even')).toBe(true);
        redelivered += leases.length;
        await rheo.settleMany(leases.map((lease) => ({ kind: 'ack' as const, lease })));
      }
      expect(redelivered).toBe(1250);
      expect((await rheo.lag('s', 'g')).lag).toBe(0);
    });
  });

  describe('ifNotExists', () => {
    it('lets concurrent creators all succeed with the same stream and group', async () => {
      const streams = await Promise.all([1, 2, 3].map(() => rheo.createStream('s', { partitions: 2, ifNotExists: true })));
      expect(new Set(streams.map((s) => s.createdAt.getTime())).size).toBe(1);
      const groups = await Promise.all([1, 2, 3].map(() => rheo.createGroup('s', 'g', { ifNotExists: true })));
      expect(groups.every((g) => g.group === 'g')).toBe(true);
      expect(await rheo.listGroups('s')).toHaveLength(1);
    });
  });
});
