import Redis from 'ioredis';
import { ManualClock, Rheo, RheoError, redisBackend } from '../../lib';
import { BASE_LAYOUT, DELAYED_LAYOUT, FLOW_LAYOUT, LAYOUT_VERSION } from '../../lib/backends/redis/layout';
import { deleteKeys, freshPrefix, REDIS_URL } from './support';

// The layout version key, and data of layout 1 (written before the key existed)
// read and upgraded online by this code.
const admin = new Redis(REDIS_URL);
const prefixes: string[] = [];
const prefixFor = (label: string) => {
  const p = freshPrefix(`layout-${label}`);
  prefixes.push(p);
  return p;
};

afterAll(async () => {
  admin.disconnect();
  for (const p of prefixes) await deleteKeys(p);
});

async function keysUnder(prefix: string): Promise<string[]> {
  return (await admin.keys(`${prefix}:*`)).sort();
}

async function initError(prefix: string): Promise<RheoError> {
  const rheo = new Rheo(redisBackend({ url: REDIS_URL, prefix }));
  try {
    const err = await rheo.createStream('s').then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(RheoError);
    return err as RheoError;
  } finally {
    await rheo.close();
  }
}

describe('redis layout version', () => {
  it('is 4; init records 2 under an empty prefix, the first delayed event 3, the first group with a flow limit 4', async () => {
    expect([BASE_LAYOUT, DELAYED_LAYOUT, FLOW_LAYOUT, LAYOUT_VERSION]).toEqual([2, 3, 4, 4]);
    const prefix = prefixFor('fresh');
    const rheo = new Rheo(redisBackend({ url: REDIS_URL, prefix }));
    try {
      await rheo.init();
      expect(await admin.get(`${prefix}:layout`)).toBe('2');
      // Not inside any stream's hash tag: one key for the whole prefix.
      await rheo.createStream('s');
      expect((await keysUnder(prefix)).filter((k) => !k.includes('{'))).toEqual([`${prefix}:layout`, `${prefix}:streams`]);
      // Events without a delay leave the data at layout 2 (older code still reads it right).
      await rheo.append('s', { payload: 1 });
      expect(await admin.get(`${prefix}:layout`)).toBe('2');
      // A delayed event is data layout 2's code would deliver at once: layout 3 is recorded before it is written.
      await rheo.append('s', { payload: 2, delayMs: 1000 });
      expect(await admin.get(`${prefix}:layout`)).toBe('3');
    } finally {
      await rheo.close();
    }
    // A process of this release starts on layout 3 and leaves it there.
    const again = new Rheo(redisBackend({ url: REDIS_URL, prefix }));
    try {
      await again.init();
      expect(await admin.get(`${prefix}:layout`)).toBe('3');
      expect((await again.read('s')).map((e) => e.deliverAt !== undefined)).toEqual([false, true]);
      // A group without flow limits leaves it there; one with a limit is data layout 3's code would
      // claim past (and whose waiting deliveries it would never hand a key's place): layout 4 first.
      await again.createGroup('s', 'plain');
      expect(await admin.get(`${prefix}:layout`)).toBe('3');
      await again.createGroup('s', 'keyed', { ordering: 'key' });
      expect(await admin.get(`${prefix}:layout`)).toBe('4');
      // A later delayed event does not take it back to 3.
      await again.append('s', { payload: 3, delayMs: 1000 });
      expect(await admin.get(`${prefix}:layout`)).toBe('4');
    } finally {
      await again.close();
    }
  });

  it('refuses at init a layout newer than this code knows, writing nothing', async () => {
    const prefix = prefixFor('newer');
    await admin.set(`${prefix}:layout`, '5');
    const err = await initError(prefix);
    expect(err.code).toBe('failed');
    expect(err.message).toBe(`Redis layout version 5 at prefix ${prefix} is newer than this nestjs-rheo knows (4): upgrade nestjs-rheo`);
    expect(await keysUnder(prefix)).toEqual([`${prefix}:layout`]);
    expect(await admin.get(`${prefix}:layout`)).toBe('5');
    // Every later call refuses the same way (init is tried again, not remembered as done).
    expect((await initError(prefix)).message).toMatch(/newer than this nestjs-rheo knows/);
  });

  it('refuses a layout key that holds no version', async () => {
    const prefix = prefixFor('garbage');
    await admin.set(`${prefix}:layout`, 'v2-beta');
    const err = await initError(prefix);
    expect(err.code).toBe('failed');
    expect(err.message).toMatch(new RegExp(`${prefix}:layout holds "v2-beta", not a layout version`));
    expect(await keysUnder(prefix)).toEqual([`${prefix}:layout`]);
  });

  it("install 'none' records nothing: a recorded layout or a registry of streams is read, a prefix with neither is refused", async () => {
    const open = async (prefix: string) => {
      const rheo = new Rheo(redisBackend({ url: REDIS_URL, prefix, install: 'none' }));
      try {
        return await rheo.listStreams().then(
          (streams) => streams.map((x) => x.name),
          (e: unknown) => e as RheoError,
        );
      } finally {
        await rheo.close();
      }
    };
    const empty = prefixFor('none-empty');
    expect(await open(empty)).toMatchObject({
      code: 'failed',
      message: expect.stringContaining(
        `Redis prefix "${empty}" holds no nestjs-rheo data (neither ${empty}:layout nor ${empty}:streams exists)`,
      ),
    });
    expect(await keysUnder(empty)).toEqual([]);
    // Data of layout 1 has no layout key: its registry says the prefix is rheo's, and it is read without one recorded.
    const old = prefixFor('none-v1');
    await admin.sadd(`${old}:streams`, 'gone');
    expect(await open(old)).toEqual([]);
    expect(await keysUnder(old)).toEqual([`${old}:streams`]);
    const newer = prefixFor('none-newer');
    await admin.set(`${newer}:layout`, '5');
    expect(await open(newer)).toMatchObject({ code: 'failed', message: expect.stringContaining('newer than this nestjs-rheo knows') });
    const older = prefixFor('none-older');
    await admin.set(`${older}:layout`, '1');
    expect(await open(older)).toEqual([]);
    expect(await admin.get(`${older}:layout`)).toBe('1');
    expect(() => redisBackend({ url: REDIS_URL, install: 'never' as never })).toThrow(
      expect.objectContaining({ code: 'invalid_argument', field: 'install' }),
    );
  });

  it('records 2 over an older version', async () => {
    const prefix = prefixFor('older');
    await admin.set(`${prefix}:layout`, '1');
    const rheo = new Rheo(redisBackend({ url: REDIS_URL, prefix }));
    try {
      await rheo.init();
      expect(await admin.get(`${prefix}:layout`)).toBe('2');
    } finally {
      await rheo.close();
    }
  });
});

describe('redis data of layout 1 (frozen: keys as the layout-1 scripts wrote them)', () => {
  const T = Date.UTC(2026, 0, 1);
  const clock = new ManualClock(T + 60_000);
  const prefix = prefixFor('v1');
  const base = `${prefix}:{orders}`;
  const g = `${base}:g:billing`;
  const id = (p: number, s: number) => `evt-${p}-${s}`;

  /**
   * Stream `orders`, 2 partitions (5 and 3 events), group `billing`: partition 0 acked up
   * to 2, 3 leased (expired at T + 30 s), 4 dead-lettered, 5 never offered; partition 1
   * never offered. No layout key, no trim points, no retention, no dead-letter time index.
   */
  async function writeLayout1(): Promise<void> {
    const m = admin.multi();
    m.hset(`${base}:meta`, 'partitions', '2', 'createdAt', String(T), 'hw:0', '5', 'hw:1', '3');
    for (const [p, n] of [
      [0, 5],
      [1, 3],
    ]) {
      for (let s = 1; s <= n; s++) {
        m.xadd(
          `${base}:log:${p}`,
          `0-${s}`,
          'i',
          id(p, s),
          't',
          String(T + s * 1000),
          'm',
          '{}',
          'd',
          JSON.stringify({ p, s }),
          'y',
          'order',
        );
        m.hset(`${base}:ids`, id(p, s), `${p}:${s}`);
      }
    }
    m.sadd(`${base}:groups`, 'billing');
    m.hset(`${g}:cfg`, 'maxAttempts', '3', 'ri', '1000', 'rf', '2', 'rm', '60000', 'ord', 'none', 'createdAt', String(T), 'rr', '0');
    m.hset(`${g}:cfg`, 'f:0', '2', 'c:0', '5', 'f:1', '0', 'c:1', '1');
    m.hset(`${g}:dl`, '0:3', `L|1|old-lease|${T + 30_000}`, '0:4', 'T|2||0');
    m.zadd(`${g}:leased:0`, String(T + 30_000), '3');
    m.hset(`${g}:dead`, id(0, 4), `0|4|2|${T + 10_000}|poison`);
    m.zadd(`${g}:deadz`, '0', `00000:0000000000000004:${id(0, 4)}`);
    m.sadd(`${prefix}:streams`, 'orders');
    await m.exec();
  }

  it('is read as it is, upgraded online (layout key, dead-letter time index), and trims', async () => {
    await writeLayout1();
    const rheo = new Rheo(redisBackend({ url: REDIS_URL, prefix, clock }));
    try {
      await rheo.init();
      expect(await admin.get(`${prefix}:layout`)).toBe('2');
      expect(await rheo.listStreams()).toEqual([{ name: 'orders', partitions: 2, createdAt: new Date(T) }]);
      expect(await rheo.lag('orders', 'billing')).toMatchObject({ lag: 6, partitions: [{ frontier: 2 }, { frontier: 0 }] });
      expect((await rheo.deadLetters('orders', 'billing')).map((d) => [d.eventId, d.reason, d.event?.id])).toEqual([
        [id(0, 4), 'poison', id(0, 4)],
      ]);

      // The expired lease comes back with its next attempt; the rest is fresh.
      const leases = await rheo.fetch('orders', 'billing', { limit: 10 });
      expect(leases.map((l) => [l.event.id, l.attempt])).toEqual([
        [id(0, 3), 2],
        [id(1, 1), 1],
        [id(0, 5), 1],
        [id(1, 2), 1],
        [id(1, 3), 1],
      ]);
      await rheo.settleMany(leases.map((lease) => ({ kind: 'ack' as const, lease })));
      expect((await rheo.lag('orders', 'billing')).lag).toBe(0);

      // A purge by time finds the old dead letter: the time index is built from `dead` first.
      expect(await admin.exists(`${g}:deadt`)).toBe(0);
      expect(await rheo.purgeDeadLetters('orders', 'billing', { before: new Date(T + 10_000) })).toBe(0);
      expect(await admin.zscore(`${g}:deadt`, id(0, 4))).toBe(String(T + 10_000));
      expect(await rheo.purgeDeadLetters('orders', 'billing', { before: new Date(T + 10_001) })).toBe(1);
      expect(await rheo.deadLetters('orders', 'billing')).toEqual([]);

      // Retention and trim work on it.
      await rheo.setRetention('orders', { maxEvents: 1 });
      expect(await rheo.trim('orders')).toEqual({
        stream: 'orders',
        removed: 6,
        partitions: [
          { partition: 0, trimmedTo: 4 },
          { partition: 1, trimmedTo: 2 },
        ],
        skipped: { billing: 0 },
      });
      expect(await admin.hlen(`${base}:ids`)).toBe(2);
      // The idempotency window is the retention: a trimmed id appended again is a new event.
      const again = await rheo.append('orders', { id: id(0, 1), partition: 0, payload: 'again' });
      expect([again.partition, again.sequence]).toEqual([0, 6]);
      const kept = await rheo.append('orders', { id: id(0, 5), partition: 0, payload: 'ignored' });
      expect([kept.sequence, kept.payload]).toEqual([5, { p: 0, s: 5 }]);
    } finally {
      await rheo.close();
    }
  });
});
