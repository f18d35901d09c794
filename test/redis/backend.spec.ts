import Redis from 'ioredis';
import { ManualClock, Rheo, RheoError, redisBackend } from '../../lib';
import { mapRedisError } from '../../lib/backends/redis/errors';
import { RedisServer } from './failover-support';
import { freshPrefix } from './support';

// A server of this file's own: CLIENT PAUSE and SCRIPT FLUSH would reach every other
// file's clients on the shared one.
let server: RedisServer;
let redisUrl: string;
const prefix = freshPrefix('backend');
let n = 0;
const name = (p: string) => `${p}-${++n}`;

async function code(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return 'ok';
  } catch (err) {
    if (!(err instanceof RheoError)) throw err;
    return err.code;
  }
}

beforeAll(async () => {
  server = await RedisServer.start();
  redisUrl = server.url;
});

afterAll(async () => {
  await server?.stop();
});

describe('redis backend: options', () => {
  it('rejects bad options with a RheoError naming the field', () => {
    const field = (fn: () => unknown) => {
      try {
        fn();
      } catch (err) {
        return err instanceof RheoError && err.code === 'invalid_argument' ? err.field : `wrong: ${String(err)}`;
      }
      return 'no error';
    };
    expect(field(() => redisBackend({ client: new Redis({ lazyConnect: true }), url: redisUrl }))).toBe('url');
    expect(field(() => redisBackend({ url: 'http://x' }))).toBe('url');
    expect(field(() => redisBackend({ prefix: 'a{b' }))).toBe('prefix');
    expect(field(() => redisBackend({ prefix: '' }))).toBe('prefix');
    expect(field(() => redisBackend({ client: {} as never }))).toBe('client');
  });
});

describe('redis backend: connections', () => {
  it('never closes a borrowed client; closes the ones it created', async () => {
    const borrowed = new Redis(redisUrl);
    const backend = redisBackend({ client: borrowed, prefix });
    const rheo = new Rheo(backend);
    const stream = name('borrowed');
    await rheo.createStream(stream);
    await rheo.createGroup(stream, 'g');
    await rheo.append(stream, { payload: 1 });
    // wait() creates the blocking connection (a duplicate, owned by the backend).
    await backend.wait({ stream, group: 'g', timeoutMs: 50, signal: new AbortController().signal });
    const blocker = (backend as unknown as { ctx: { wake: { blocker?: Redis } } }).ctx.wake.blocker;
    expect(blocker).toBeDefined();
    await rheo.close();
    expect(borrowed.status).toBe('ready');
    expect(await borrowed.ping()).toBe('PONG');
    expect(blocker!.status).toBe('end');
    borrowed.disconnect();

    const owned = redisBackend({ url: redisUrl, prefix });
    await owned.init();
    const client = (owned as unknown as { ctx: { connection: { client(): Redis } } }).ctx.connection.client();
    expect(client.status).toBe('ready');
    await owned.close();
    expect(client.status).toBe('end');
    expect(await code(owned.ping())).toBe('backend_unavailable');
  });

  it('a server nobody listens on: every call fails backend_unavailable naming host:port and the cause, as PostgreSQL does', async () => {
    // 6399: a closed port (nothing of the test setup listens there).
    for (const backend of [
      redisBackend({ url: 'redis://127.0.0.1:6399', prefix }),
      redisBackend({ options: { host: '127.0.0.1', port: 6399 }, prefix }),
    ]) {
      const rheo = new Rheo(backend);
      try {
        for (const call of [() => rheo.init(), () => rheo.append('orders', { payload: 1 }), () => rheo.ping()]) {
          const err = await call().then(
            () => null,
            (e: unknown) => e,
          );
          expect(err).toBeInstanceOf(RheoError);
          expect(err).toMatchObject({ code: 'backend_unavailable' });
          expect((err as RheoError).message).toContain('127.0.0.1:6399');
          expect((err as RheoError).message).toMatch(/ECONNREFUSED/);
        }
      } finally {
        await rheo.close();
      }
    }
  });

  it('maps a command timeout: ambiguous for a write, backend_unavailable for a read', async () => {
    // Setup and checks go through a backend with the default 5 s timeout; only the probes use 100 ms.
    const rheo = new Rheo(redisBackend({ url: redisUrl, prefix }));
    const impatient = redisBackend({ url: redisUrl, prefix, options: { commandTimeout: 100 } });
    const stream = name('timeout');
    await rheo.createStream(stream);
    await rheo.createGroup(stream, 'g');
    const [stored] = await rheo.read(stream);
    expect(stored).toBeUndefined();
    // Its init (connect, layout, scripts) may itself outlast 100 ms on a loaded machine: that is not what this test is about.
    for (let tries = 1; ; tries++) {
      try {
        await impatient.init();
        break;
      } catch (err) {
        if (tries === 20) throw err;
      }
    }
    const event = {
      id: 'maybe-1',
      partition: 0,
      timestamp: new Date(),
      key: null,
      type: null,
      metadata: {},
      payload: 'maybe',
      payloadJson: '"maybe"',
      metadataJson: '{}',
    };
    const admin = new Redis(redisUrl);
    try {
      // Pause writes (scripts included) on the server: the append gets no answer in time.
      await admin.client('PAUSE', 2000, 'WRITE');
      expect(await code(impatient.append(stream, [event]))).toBe('ambiguous');
      await admin.client('UNPAUSE');
      // A full pause cannot be lifted early (UNPAUSE itself waits), so it is kept short: 300 ms against the 100 ms timeout.
      await admin.client('PAUSE', 300, 'ALL');
      expect(await code(impatient.read({ stream, partition: 0, afterSequence: 0, limit: 10 }))).toBe('backend_unavailable');
      await admin.client('UNPAUSE');
      // The ambiguous append really did happen once the pause ended.
      let events = await rheo.read(stream);
      for (let i = 0; i < 20 && events.length === 0; i++) {
        await new Promise((r) => setTimeout(r, 50));
        events = await rheo.read(stream);
      }
      expect(events.map((e) => e.payload)).toEqual(['maybe']);
    } finally {
      await admin.client('UNPAUSE');
      admin.disconnect();
      await rheo.close();
      await impatient.close();
    }
  });

  it('maps a server-side failure to failed and a script code to its RheoError; nothing leaks', async () => {
    const rheo = new Rheo(redisBackend({ url: redisUrl, prefix }));
    const stream = name('wrongtype');
    await rheo.createStream(stream);
    const admin = new Redis(redisUrl);
    try {
      // Corrupt the id index: the append script hits WRONGTYPE.
      const idsKey = `${prefix}:{${stream}}:ids`;
      await admin.set(idsKey, 'not a hash');
      const err = await rheo.append(stream, { payload: 1 }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(RheoError);
      expect((err as RheoError).code).toBe('failed');
      await admin.del(idsKey);
      expect((await rheo.append(stream, { payload: 2 })).sequence).toBe(1);
    } finally {
      admin.disconnect();
      await rheo.close();
    }
    expect(mapRedisError(new Error('RHEO:stale_lease'), 'write').code).toBe('stale_lease');
    expect(mapRedisError(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' }), 'read').code).toBe(
      'backend_unavailable',
    );
    expect(mapRedisError(new Error("Stream isn't writeable and enableOfflineQueue options is false"), 'write').code).toBe(
      'backend_unavailable',
    );
    expect(mapRedisError(new Error('LOADING Redis is loading the dataset in memory'), 'read').code).toBe('backend_unavailable');
    expect(mapRedisError(new Error('OOM command not allowed'), 'write').code).toBe('failed');
  });
});

describe('redis backend: races across connections', () => {
  it('concurrent fetchers on separate connections never claim one event twice; a stale ack races the new holder and loses', async () => {
    const clock = new ManualClock();
    const backends = Array.from({ length: 4 }, () => redisBackend({ url: redisUrl, prefix, clock }));
    const rheos = backends.map((b) => new Rheo(b));
    const stream = name('race');
    try {
      await rheos[0].createStream(stream, { partitions: 3 });
      await rheos[0].createGroup(stream, 'g');
      await rheos[0].appendBatch(
        stream,
        Array.from({ length: 600 }, (_, i) => ({ key: `k${i}`, payload: i })),
      );
      // Four connections fetch at once, round after round, until nothing is left.
      const claimed: string[] = [];
      for (;;) {
        const rounds = await Promise.all(rheos.map((r, i) => r.fetch(stream, 'g', { limit: 7, leaseMs: 10_000, consumerId: `c${i}` })));
        const got = rounds.flat();
        if (got.length === 0) break;
        claimed.push(...got.map((l) => l.event.id));
      }
      expect(claimed).toHaveLength(600);
      expect(new Set(claimed).size).toBe(600);

      // Expire one lease, let another connection take it, then both ack at once.
      const stream2 = name('race-ack');
      await rheos[0].createStream(stream2);
      await rheos[0].createGroup(stream2, 'g');
      await rheos[0].append(stream2, { payload: 'x' });
      const [old] = await rheos[1].fetch(stream2, 'g', { leaseMs: 1000 });
      clock.advance(1001);
      const [fresh] = await rheos[2].fetch(stream2, 'g', { leaseMs: 1000 });
      expect(fresh.attempt).toBe(2);
      const [a, b] = await Promise.all([
        rheos[1].settleMany([{ kind: 'ack', lease: old }]),
        rheos[2].settleMany([{ kind: 'ack', lease: fresh }]),
      ]);
      expect(a[0].ok).toBe(false);
      expect(a[0].ok === false && a[0].error.code).toBe('stale_lease');
      expect(b[0]).toEqual({ ok: true });
      expect(await rheos[3].lag(stream2, 'g')).toMatchObject({ lag: 0, partitions: [{ frontier: 1, highWatermark: 1 }] });
    } finally {
      await Promise.all(rheos.map((r) => r.close()));
    }
  });
});

describe('redis backend: scripts', () => {
  it('keeps working after the server forgets its scripts (SCRIPT FLUSH): EVALSHA falls back to EVAL', async () => {
    const rheo = new Rheo(redisBackend({ url: redisUrl, prefix }));
    const stream = name('flush');
    const admin = new Redis(redisUrl);
    try {
      await rheo.createStream(stream);
      await rheo.createGroup(stream, 'g');
      await rheo.appendBatch(stream, [{ payload: 1 }, { payload: 2 }]);
      await admin.script('FLUSH');
      const leases = await rheo.fetch(stream, 'g');
      expect(leases).toHaveLength(2);
      await admin.script('FLUSH');
      // Bulk settle goes through a pipeline: its NOSCRIPT answers are re-sent with EVAL.
      const results = await rheo.settleMany(leases.map((lease) => ({ kind: 'ack' as const, lease })));
      expect(results).toEqual([{ ok: true }, { ok: true }]);
      expect((await rheo.lag(stream, 'g')).lag).toBe(0);
    } finally {
      admin.disconnect();
      await rheo.close();
    }
  });
});

describe('redis backend: wake-ups', () => {
  let backend: ReturnType<typeof redisBackend>;
  let rheo: Rheo;
  beforeAll(async () => {
    backend = redisBackend({ url: redisUrl, prefix, clock: new ManualClock() });
    rheo = new Rheo(backend);
    await rheo.init();
  });
  afterAll(async () => {
    await rheo.close();
  });

  const wait = (stream: string, timeoutMs: number, signal = new AbortController().signal) =>
    backend.wait({ stream, group: 'g', timeoutMs, signal }).then(() => 'woke');

  async function idleGroup(): Promise<string> {
    const stream = name('wake');
    await rheo.createStream(stream, { partitions: 2 });
    await rheo.createGroup(stream, 'g');
    expect(await rheo.fetch(stream, 'g')).toEqual([]);
    return stream;
  }

  it('a wait ends on an append, long before its timeout', async () => {
    const stream = await idleGroup();
    const waiting = wait(stream, 60_000);
    await rheo.append(stream, { partition: 1, payload: 'x' });
    await expect(waiting).resolves.toBe('woke');
  });

  it('a write between the last fetch and the wait is not lost', async () => {
    const stream = await idleGroup();
    await rheo.append(stream, { payload: 'x' });
    await expect(wait(stream, 60_000)).resolves.toBe('woke');
  });

  it('a nack wakes, and a wait with nothing new ends at its timeout or on abort', async () => {
    const stream = await idleGroup();
    await rheo.append(stream, { payload: 'x' });
    const [lease] = await rheo.fetch(stream, 'g');
    const waiting = wait(stream, 60_000);
    await rheo.nack(lease, { delayMs: 0 });
    await expect(waiting).resolves.toBe('woke');
    await rheo.fetch(stream, 'g');
    await expect(wait(stream, 30)).resolves.toBe('woke');
    const abort = new AbortController();
    const aborted = wait(stream, 60_000, abort.signal);
    abort.abort();
    await expect(aborted).resolves.toBe('woke');
  });

  it('many waits share one blocking connection: a new stream joins a read already blocked', async () => {
    const quiet = await idleGroup();
    const busy = await idleGroup();
    const abort = new AbortController();
    let quietWoke = false;
    const q = wait(quiet, 60_000, abort.signal).then(() => (quietWoke = true));
    await new Promise((r) => setTimeout(r, 50)); // the blocking read on `quiet` is armed
    const b = wait(busy, 60_000);
    await rheo.append(busy, { payload: 'x' });
    await expect(b).resolves.toBe('woke');
    expect(quietWoke).toBe(false);
    abort.abort();
    await q;
  });
});
