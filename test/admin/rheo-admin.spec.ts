// RheoAdmin, the service behind the CLI and the dashboard: every operation's
// exact JSON-ready result, on memory and on SQLite (a real store), on a test clock
// so times and ages are exact.
import { ManualClock, Rheo, RheoAdmin, RheoError } from '../../lib';
import type { QueryRequest } from '../../lib/backends/backend';
import { CLOCKED_BACKENDS, removeTempFiles } from '../support/clocked-backends';

const T0 = '2026-01-01T00:00:00.000Z';

/** The error a promise rejects with (fails the test when it resolves). */
async function failure(p: Promise<unknown>): Promise<RheoError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(RheoError);
  return err as RheoError;
}

afterAll(() => removeTempFiles());

describe.each(CLOCKED_BACKENDS)('RheoAdmin on $name', ({ make }) => {
  let clock: ManualClock;
  let rheo: Rheo;
  let admin: RheoAdmin;
  let lines: string[];

  beforeEach(async () => {
    clock = new ManualClock();
    rheo = new Rheo(make(clock));
    lines = [];
    admin = new RheoAdmin(rheo, {
      actor: 'cli',
      log: (line) => lines.push(line),
      consumers: () => [{ stream: 'orders', group: 'billing', state: 'running' }],
    });
  });

  afterEach(() => rheo.close());

  /** `orders`: 2 partitions, events o1..o3 (o1, o3 in partition 0, o2 in 1), groups billing and audit. */
  async function orders(): Promise<void> {
    await rheo.createStream('orders', { partitions: 2 });
    await rheo.createGroup('orders', 'billing');
    await rheo.createGroup('orders', 'audit', { maxAttempts: 3, ordering: 'partition' });
    await rheo.append('orders', { id: 'o1', partition: 0, type: 'placed', key: 'k1', payload: { n: 1 } });
    await rheo.append('orders', { id: 'o2', partition: 1, type: 'placed', key: 'k2', payload: { n: 2 } });
    await rheo.append('orders', { id: 'o3', partition: 0, type: 'paid', key: 'k1', payload: { n: 3 } });
  }

  /** Dead-letter `o1` and `o3` for billing (rejected), leaving o2 leased. */
  async function deadLetters(): Promise<void> {
    const leases = await rheo.fetch('orders', 'billing', { limit: 3 });
    for (const lease of leases) {
      if (lease.event.id !== 'o2') await rheo.reject(lease, { reason: `bad ${lease.event.id}` });
    }
  }

  describe('reads', () => {
    it('streams (by name): size per partition from a group lag, or from the last events when there is no group', async () => {
      expect(await admin.streams()).toEqual([]);
      await orders();
      await rheo.createStream('audit-log', { retention: { maxEvents: 10 } });
      await rheo.append('audit-log', { payload: 'x' });
      expect(await admin.streams()).toEqual([
        { name: 'audit-log', partitions: 1, createdAt: T0, retention: { maxEvents: 10 }, highWatermarks: [1], highWatermark: 1 },
        { name: 'orders', partitions: 2, createdAt: T0, retention: null, highWatermarks: [2, 1], highWatermark: 3 },
      ]);
    });

    it('streams: the high watermark counts trimmed events (read from a group)', async () => {
      await rheo.createStream('short', { retention: { maxEvents: 1 } });
      await rheo.createGroup('short', 'g');
      await rheo.appendBatch('short', [{ payload: 1 }, { payload: 2 }, { payload: 3 }]);
      for (const lease of await rheo.fetch('short', 'g', { limit: 3 })) await rheo.ack(lease);
      expect(await admin.trim('short')).toEqual({ removed: 2, skipped: { g: 0 } });
      expect(await admin.streams()).toEqual([
        { name: 'short', partitions: 1, createdAt: T0, retention: { maxEvents: 1 }, highWatermarks: [3], highWatermark: 3 },
      ]);
    });

    it('groups (by name) and group: lag, inflight, dead letters, oldest unsettled age, config and the local consumer', async () => {
      await orders();
      clock.advance(1000);
      await deadLetters(); // o2 leased, o1 and o3 dead for billing
      clock.advance(500);
      const billing = {
        stream: 'orders',
        group: 'billing',
        lag: 1,
        inflight: 1,
        deadLetters: 2,
        oldestUnsettledAgeMs: 1500,
        maxAttempts: 5,
        retry: { initialMs: 1000, factor: 2, maxMs: 60000 },
        ordering: 'none',
        keyConcurrency: null,
        groupConcurrency: null,
        rateLimit: null,
        waitingForKey: 0,
        partitions: [
          { partition: 0, frontier: 2, highWatermark: 2, lag: 0 },
          { partition: 1, frontier: 0, highWatermark: 1, lag: 1 },
        ],
        skipped: { count: 0, lastReason: null, lastAt: null },
        warnings: [],
        paused: null,
        consumer: 'running',
      };
      const audit = {
        stream: 'orders',
        group: 'audit',
        lag: 3,
        inflight: 0,
        deadLetters: 0,
        oldestUnsettledAgeMs: 1500,
        maxAttempts: 3,
        retry: { initialMs: 1000, factor: 2, maxMs: 60000 },
        ordering: 'partition',
        keyConcurrency: null,
        groupConcurrency: null,
        rateLimit: null,
        waitingForKey: 0,
        partitions: [
          { partition: 0, frontier: 0, highWatermark: 2, lag: 2 },
          { partition: 1, frontier: 0, highWatermark: 1, lag: 1 },
        ],
        skipped: { count: 0, lastReason: null, lastAt: null },
        warnings: [],
        paused: null,
      };
      expect(await admin.group('orders', 'billing')).toEqual(billing);
      expect(await admin.group('orders', 'audit')).toEqual(audit);
      expect(await admin.groups('orders')).toEqual([audit, billing]);
    });

    it('overview: every stream with its groups, at the backend clock', async () => {
      await orders();
      await rheo.createStream('empty');
      clock.advance(2000);
      const overview = await admin.overview();
      expect(overview.at).toBe('2026-01-01T00:00:02.000Z');
      expect(overview.streams.map((s) => [s.name, s.highWatermarks, s.groups.map((g) => [g.group, g.lag, g.consumer])])).toEqual([
        ['empty', [0], []],
        [
          'orders',
          [2, 1],
          [
            ['audit', 3, undefined],
            ['billing', 3, 'running'],
          ],
        ],
      ]);
      expect(overview.streams[1].groups[1]).toEqual(await admin.group('orders', 'billing'));
    });

    it('deadLetters: pages with next, payloads only when asked', async () => {
      await orders();
      clock.advance(1000);
      await deadLetters();
      const first = {
        eventId: 'o1',
        partition: 0,
        sequence: 1,
        reason: 'bad o1',
        attempt: 1,
        deadLetteredAt: '2026-01-01T00:00:01.000Z',
        type: 'placed',
        key: 'k1',
      };
      const second = { ...first, eventId: 'o3', sequence: 2, reason: 'bad o3', type: 'paid' };
      expect(await admin.deadLetters('orders', 'billing', { limit: 1 })).toEqual({ items: [first], next: 'o1' });
      expect(await admin.deadLetters('orders', 'billing', { limit: 1, after: 'o1' })).toEqual({ items: [second], next: 'o3' });
      expect(await admin.deadLetters('orders', 'billing', { limit: 1, after: 'o3' })).toEqual({ items: [], next: null });
      expect(await admin.deadLetters('orders', 'billing', { withPayloads: true })).toEqual({
        items: [
          { ...first, payload: { n: 1 } },
          { ...second, payload: { n: 3 } },
        ],
        next: null,
      });
      expect(await admin.deadLetters('orders', 'audit')).toEqual({ items: [], next: null });
    });

    it('tail: the latest events, then what comes after in any partition, filtered by where', async () => {
      await orders();
      const latest = await admin.tail('orders', { limit: 2 });
      expect(latest.items).toEqual([
        { id: 'o2', partition: 1, sequence: 1, timestamp: T0, type: 'placed', key: 'k2', metadata: {}, payload: { n: 2 } },
        { id: 'o3', partition: 0, sequence: 2, timestamp: T0, type: 'paid', key: 'k1', metadata: {}, payload: { n: 3 } },
      ]);
      expect(latest.next).toEqual(expect.any(String));
      expect(await admin.tail('orders', { cursor: latest.next! })).toEqual({ items: [], next: latest.next });
      // Partition 1 is behind partition 0: its new event (sequence 2) still follows the cursor.
      await rheo.append('orders', { id: 'o4', partition: 1, type: 'paid', metadata: { source: 'web' }, payload: { n: 4 } });
      await rheo.append('orders', { id: 'o5', partition: 0, type: 'placed', payload: { n: 5 } });
      const after = await admin.tail('orders', { cursor: latest.next! });
      expect(after.items.map((e) => [e.id, e.partition, e.sequence, e.metadata])).toEqual([
        ['o4', 1, 2, { source: 'web' }],
        ['o5', 0, 3, {}],
      ]);
      expect((await admin.tail('orders', { cursor: after.next! })).items).toEqual([]);
      // Page by page with a limit: nothing skipped, nothing repeated.
      const page1 = await admin.tail('orders', { cursor: latest.next!, limit: 1 });
      const page2 = await admin.tail('orders', { cursor: page1.next!, limit: 1 });
      expect([...page1.items, ...page2.items].map((e) => e.id)).toEqual(['o4', 'o5']);
      // Filtered: only paid events, the latest first page and then the follow.
      const paid = await admin.tail('orders', { where: { type: 'paid' } });
      expect(paid.items.map((e) => e.id)).toEqual(['o3', 'o4']);
      await rheo.append('orders', { id: 'o6', partition: 1, type: 'paid', payload: {} });
      await rheo.append('orders', { id: 'o7', partition: 1, type: 'placed', payload: {} });
      expect((await admin.tail('orders', { where: { type: 'paid' }, cursor: paid.next! })).items.map((e) => e.id)).toEqual(['o6']);
      expect((await admin.tail('orders', { where: { partition: 1 }, limit: 2 })).items.map((e) => e.id)).toEqual(['o6', 'o7']);
    });

    it('tail with where: each poll reads only the events appended since the last one, matched or not', async () => {
      // The same backend, with every query it is asked recorded.
      const asked: QueryRequest[] = [];
      const backend = make(clock);
      const recording = new Proxy(backend, {
        get(target, prop) {
          if (prop === 'query') return (req: QueryRequest) => (asked.push(req), target.query(req));
          const value = Reflect.get(target, prop, target) as unknown;
          return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
        },
      });
      const store = new Rheo(recording);
      try {
        const follower = new RheoAdmin(store);
        await store.createStream('busy', { partitions: 2 });
        await store.append('busy', { id: 'm1', partition: 0, type: 'match', payload: 1 });
        let page = await follower.tail('busy', { where: { type: 'match' } });
        expect(page.items.map((e) => e.id)).toEqual(['m1']);
        const noise = (n: number, partition: number) => Array.from({ length: n }, () => ({ partition, type: 'noise', payload: 0 }));
        const highWatermarks = async () => (await follower.streams())[0].highWatermarks;
        /** One poll: its events, and how many events its filtered queries could read (each partition from its position to its end). */
        const poll = async () => {
          asked.length = 0;
          const hwm = await highWatermarks();
          page = await follower.tail('busy', { where: { type: 'match' }, cursor: page.next! });
          const filtered = asked.filter((q) => q.where.type === 'match');
          expect(filtered.map((q) => q.where.partition).sort()).toEqual([0, 1]);
          const read = filtered.reduce((n, q) => n + Math.max(0, hwm[q.where.partition!] - (q.afterSequence ?? 0)), 0);
          return { ids: page.items.map((e) => e.id), read };
        };
        await store.appendBatch('busy', [...noise(300, 0), ...noise(200, 1)]);
        expect(await poll()).toEqual({ ids: [], read: 500 });
        // Nothing new: nothing to read, however much history the filter passed over.
        expect(await poll()).toEqual({ ids: [], read: 0 });
        await store.appendBatch('busy', [...noise(5, 0), { partition: 1, type: 'match', payload: 2 }, ...noise(3, 1)]);
        expect(await poll()).toEqual({ ids: [expect.any(String)], read: 9 });
        expect(await poll()).toEqual({ ids: [], read: 0 });
      } finally {
        await store.close();
      }
    });

    it('tail: an empty stream gives a cursor that sees the first events', async () => {
      await rheo.createStream('quiet', { partitions: 3 });
      const empty = await admin.tail('quiet');
      expect(empty.items).toEqual([]);
      await rheo.append('quiet', { id: 'q1', partition: 2, payload: 1 });
      expect((await admin.tail('quiet', { cursor: empty.next! })).items.map((e) => e.id)).toEqual(['q1']);
    });
  });

  describe('actions', () => {
    it('append: the stored event as a summary, idempotent by id', async () => {
      await rheo.createStream('s');
      const appended = await admin.append('s', { id: 'a1', key: 'k', type: 't', payload: { x: [1, 'two'] }, metadata: { source: 'cli' } });
      expect(appended).toEqual({
        id: 'a1',
        partition: 0,
        sequence: 1,
        timestamp: T0,
        type: 't',
        key: 'k',
        metadata: { source: 'cli' },
        payload: { x: [1, 'two'] },
      });
      expect(await admin.append('s', { id: 'a1', payload: 'other' })).toEqual(appended);
      const plain = await admin.append('s', { payload: null });
      expect(plain).toEqual({ id: plain.id, partition: 0, sequence: 2, timestamp: T0, type: null, key: null, metadata: {}, payload: null });
    });

    it('redrive: by ids, or all only with confirm', async () => {
      await orders();
      await deadLetters();
      expect(await admin.redrive('orders', 'billing', { eventIds: ['o1'] })).toEqual({ redriven: 1 });
      const refused = await failure(admin.redrive('orders', 'billing', { all: true, confirm: false }));
      expect(refused).toMatchObject({ code: 'confirm_required', field: 'confirm' });
      expect(await admin.redrive('orders', 'billing', { all: true, confirm: true })).toEqual({ redriven: 1 });
      expect((await admin.group('orders', 'billing')).deadLetters).toBe(0);
      expect(lines).toEqual([
        'Redrove 1 dead letter(s) of orders/billing (1 asked) (by cli)',
        'Redrove 1 dead letter(s) of orders/billing (all) (by cli)',
      ]);
    });

    it('replay: after a sequence, from an ISO time, or the events a where matches', async () => {
      await orders();
      // Each replay re-opens finished events only: finish them all before each one.
      const ackAll = async () => {
        for (const lease of await rheo.fetch('orders', 'billing', { limit: 3 })) await rheo.ack(lease);
        expect((await admin.group('orders', 'billing')).lag).toBe(0);
      };
      await ackAll();
      expect(await admin.replay('orders', 'billing', { afterSequence: 1 })).toEqual({ replayed: 1 });
      await ackAll();
      expect(await admin.replay('orders', 'billing', { from: T0 })).toEqual({ replayed: 3 });
      await ackAll();
      expect(await admin.replay('orders', 'billing', { where: { type: 'paid' } })).toEqual({ replayed: 1 });
      expect(lines).toEqual([
        'Replayed orders/billing: 1 event(s) re-opened (after sequence 1) (by cli)',
        `Replayed orders/billing: 3 event(s) re-opened (from ${T0}) (by cli)`,
        'Replayed orders/billing: 1 event(s) re-opened (matching a query) (by cli)',
      ]);
      expect(await failure(admin.replay('orders', 'billing', { from: 'yesterday' }))).toMatchObject({
        code: 'invalid_argument',
        field: 'from',
      });
      expect(await failure(admin.replay('orders', 'billing', { afterSequence: 1, from: T0 } as never))).toMatchObject({ field: 'from' });
      expect(await failure(admin.replay('orders', 'billing', { afterSequence: -1 }))).toMatchObject({ code: 'invalid_argument' });
    });

    it('reset: refuses without confirm, then restarts the group where start says', async () => {
      await orders();
      const refused = await failure(admin.reset('orders', 'billing', { start: 'end', confirm: false }));
      expect(refused).toMatchObject({ code: 'confirm_required', field: 'confirm' });
      expect(await admin.reset('orders', 'billing', { start: 'end', confirm: true })).toEqual({ reset: true });
      expect((await admin.group('orders', 'billing')).lag).toBe(0);
      expect(await admin.reset('orders', 'billing', { start: '1', confirm: true })).toEqual({ reset: true });
      expect((await admin.group('orders', 'billing')).partitions.map((p) => p.frontier)).toEqual([1, 1]);
      await admin.reset('orders', 'billing', { start: '0:2,1:0', confirm: true });
      expect((await admin.group('orders', 'billing')).partitions.map((p) => p.frontier)).toEqual([2, 0]);
      await admin.reset('orders', 'billing', { start: T0, confirm: true });
      expect((await admin.group('orders', 'billing')).lag).toBe(3);
      await admin.reset('orders', 'billing', { confirm: true });
      expect((await admin.group('orders', 'billing')).lag).toBe(3);
      expect(lines[0]).toBe('Reset orders/billing: every delivery forgotten, restarting from end (by cli)');
      expect(await failure(admin.reset('orders', 'billing', { start: 'later', confirm: true }))).toMatchObject({
        code: 'invalid_argument',
        field: 'start',
      });
    });

    it('trim: applies retention; a forced trim needs confirm and reports what groups skipped', async () => {
      await rheo.createStream('short', { retention: { maxEvents: 1 } });
      await rheo.createGroup('short', 'g');
      await rheo.appendBatch('short', [{ payload: 1 }, { payload: 2 }, { payload: 3 }]);
      expect(await admin.trim('short')).toEqual({ removed: 0, skipped: { g: 0 } });
      const refused = await failure(admin.trim('short', { force: true }));
      expect(refused).toMatchObject({ code: 'confirm_required', field: 'confirm' });
      expect(await admin.trim('short', { force: true, confirm: true })).toEqual({ removed: 2, skipped: { g: 2 } });
      expect(lines.at(-1)).toBe('Trimmed short: 2 event(s) removed, forced; unfinished events removed: g 2 (by cli)');
    });

    it('purgeDeadLetters: before an ISO time, or all; exactly one of them', async () => {
      await orders();
      await deadLetters(); // at T0
      expect(await admin.purgeDeadLetters('orders', 'billing', { before: T0 })).toEqual({ purged: 0 });
      expect(await admin.purgeDeadLetters('orders', 'billing', { before: '2026-01-01T00:00:01Z' })).toEqual({ purged: 2 });
      expect(await admin.purgeDeadLetters('orders', 'billing', { all: true })).toEqual({ purged: 0 });
      expect(await failure(admin.purgeDeadLetters('orders', 'billing', {}))).toMatchObject({ field: 'before' });
      expect(await failure(admin.purgeDeadLetters('orders', 'billing', { all: true, before: T0 }))).toMatchObject({ field: 'before' });
      expect(await failure(admin.purgeDeadLetters('orders', 'billing', { before: 'soon' }))).toMatchObject({ field: 'before' });
      expect(lines[1]).toBe(`Purged 2 dead letter(s) of orders/billing (dead-lettered before 2026-01-01T00:00:01.000Z) (by cli)`);
    });

    it('pauseGroup and resumeGroup: only with confirm; until as a duration from the store clock or an ISO time; logged', async () => {
      await orders();
      expect(await failure(admin.pauseGroup('orders', 'billing', { confirm: false }))).toMatchObject({
        code: 'confirm_required',
        field: 'confirm',
      });
      expect(await failure(admin.pauseGroup('orders', 'billing', { until: '2h', confirm: true, why: 'x' } as never))).toMatchObject({
        field: 'options.why',
      });
      expect(await failure(admin.pauseGroup('orders', 'billing', { until: 'later', confirm: true }))).toMatchObject({ field: 'until' });
      expect((await admin.group('orders', 'billing')).paused).toBeNull();

      expect(await admin.pauseGroup('orders', 'billing', { until: '2h', reason: 'card API down', by: 'ana', confirm: true })).toEqual({
        pausedAt: T0,
        until: '2026-01-01T02:00:00.000Z',
        reason: 'card API down',
        by: 'ana',
      });
      expect((await admin.group('orders', 'billing')).paused).toEqual({
        pausedAt: T0,
        until: '2026-01-01T02:00:00.000Z',
        reason: 'card API down',
        by: 'ana',
      });
      expect((await admin.group('orders', 'audit')).paused).toBeNull();
      clock.advance(1000);
      expect(await admin.pauseGroup('orders', 'billing', { until: '2026-01-02T00:00:00Z', confirm: true })).toEqual({
        pausedAt: '2026-01-01T00:00:01.000Z',
        until: '2026-01-02T00:00:00.000Z',
        reason: null,
        by: null,
      });
      expect(await failure(admin.resumeGroup('orders', 'billing', { confirm: false }))).toMatchObject({ code: 'confirm_required' });
      expect(await admin.resumeGroup('orders', 'billing', { confirm: true })).toEqual({ resumed: true });
      expect(await admin.resumeGroup('orders', 'billing', { confirm: true })).toEqual({ resumed: false });
      expect((await admin.group('orders', 'billing')).paused).toBeNull();
      expect(lines).toEqual([
        'Paused orders/billing until 2026-01-01T02:00:00.000Z, by "ana": "card API down" (by cli)',
        'Paused orders/billing until 2026-01-02T00:00:00.000Z (by cli)',
        'Resumed orders/billing (by cli)',
        'Resumed orders/billing (it was not paused) (by cli)',
      ]);
    });
  });

  describe('errors', () => {
    it('names what is missing or malformed', async () => {
      await orders();
      expect(await failure(admin.groups('nope'))).toMatchObject({ code: 'stream_not_found' });
      expect(await failure(admin.group('orders', 'nope'))).toMatchObject({ code: 'group_not_found' });
      expect(await failure(admin.tail('nope'))).toMatchObject({ code: 'stream_not_found' });
      expect(await failure(admin.tail('orders', { cursor: 'abc' }))).toMatchObject({ code: 'invalid_argument', field: 'cursor' });
      expect(await failure(admin.tail('orders', { limit: 0 }))).toMatchObject({ field: 'limit' });
      expect(await failure(admin.deadLetters('orders', 'billing', { limit: 5000 }))).toMatchObject({ field: 'limit' });
      expect(await failure(admin.append('orders', { payload: undefined as never }))).toMatchObject({ code: 'invalid_argument' });
      // A cursor of another stream (one partition) does not fit this one (two).
      await rheo.createStream('one');
      const { next } = await admin.tail('one');
      expect(await failure(admin.tail('orders', { cursor: next! }))).toMatchObject({ field: 'cursor' });
    });
  });
});
