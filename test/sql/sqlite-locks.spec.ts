import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { Lease, Rheo, RheoError, sqliteBackend, typeormBackend } from '../../lib';
import { until } from '../support/until';
import { holdLock, LockHolder, watch, type Watched } from './sqlite-lock-holder';

// Another process holds a lock on the file. SQLite's busy handler sleeps
// synchronously, so waiting inside it freezes the whole process: a 5 s busy
// timeout stalled the event loop for the whole hold. The backend must wait between
// attempts instead, on timers, and give up after lockTimeoutMs with a clear error.
//
// Measured by order, not by the clock: the child holds the lock until the test
// releases it, so an operation still pending after the event loop has turned
// LOOP_TURNS times waited on timers (a frozen loop turns not once before the
// operation settles), and one that settles only after the release waited for it.
const LOOP_TURNS = 20;
/** Longer than any test: the holder, not the timeout, decides when these waits end. */
const PATIENT = { lockTimeoutMs: 600_000 };

const dir = mkdtempSync(join(tmpdir(), 'rheo-sqlite-locks-'));
let n = 0;
const file = (label: string) => join(dir, `${label}-${++n}.db`);

const holders: LockHolder[] = [];
async function hold(db: string, mode: 'write' | 'exclusive' | 'commit'): Promise<LockHolder> {
  const h = await holdLock(db, mode);
  holders.push(h);
  return h;
}

afterEach(async () => {
  for (const h of holders.splice(0)) await h.release().catch(() => h.child.kill('SIGKILL'));
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function withEvents(db: string, options: { lockTimeoutMs?: number } = {}): Promise<Rheo> {
  const rheo = new Rheo(sqliteBackend({ database: db, ...options }));
  await rheo.createStream('s');
  await rheo.createGroup('s', 'g');
  await rheo.appendBatch('s', [{ payload: 1 }, { payload: 2 }, { payload: 3 }]);
  return rheo;
}

/** The operation is still waiting after the loop turned LOOP_TURNS times; then the holder lets go and it settles. */
async function waitsOffTheLoop<T>(holder: LockHolder, op: Watched<T>): Promise<PromiseSettledResult<T>> {
  await until(`${LOOP_TURNS} turns of the event loop, or the operation to settle`, () => op.turns >= LOOP_TURNS || op.settled);
  expect({ settled: op.settled, holding: holder.holding }).toEqual({ settled: false, holding: true });
  await holder.release();
  return (await op.done).outcome;
}

describe('sqlite: waiting for a lock another process holds', () => {
  it('fetch waits for the write lock without blocking the event loop, and completes once it is released', async () => {
    const db = file('fetch');
    const rheo = await withEvents(db, PATIENT);
    try {
      const holder = await hold(db, 'write');
      const outcome = await waitsOffTheLoop(
        holder,
        watch(() => rheo.fetch('s', 'g', { limit: 10 })),
      );
      expect(outcome.status).toBe('fulfilled');
      expect((outcome as PromiseFulfilledResult<Lease[]>).value.map((l) => l.event.sequence)).toEqual([1, 2, 3]);
    } finally {
      await rheo.close();
    }
  }, 30_000);

  it('every write path waits the same way: append, fetch, settle, renew, release, replay, reset, redrive, createStream, createGroup', async () => {
    const db = file('paths');
    const rheo = await withEvents(db, PATIENT);
    try {
      // One group per operation, so that the order in which they get the lock cannot change their results.
      for (const g of ['dead', 'replayed', 'reset', 'fetched']) await rheo.createGroup('s', g);
      const [toAck, toRenew, toRelease] = await rheo.fetch('s', 'g', { limit: 3, leaseMs: 600_000 });
      const [dead] = await rheo.fetch('s', 'dead', { limit: 1 });
      await rheo.reject(dead, { reason: 'for redrive' });
      await rheo.settleMany((await rheo.fetch('s', 'replayed', { limit: 3 })).map((lease) => ({ kind: 'ack' as const, lease })));

      const holder = await hold(db, 'write');
      const outcome = await waitsOffTheLoop(
        holder,
        watch(() =>
          Promise.all([
            rheo.append('s', { payload: 4 }).then((e) => e.sequence),
            rheo.fetch('s', 'fetched', { limit: 2 }).then((l) => l.length),
            rheo.settleMany([{ kind: 'ack', lease: toAck }]).then(([r]) => r.ok),
            rheo.renewMany([toRenew]).then(([r]) => r.ok),
            rheo.releaseMany([toRelease]).then(([r]) => r.ok),
            rheo.redrive('s', 'dead', { all: true }),
            rheo.replay('s', 'replayed', { afterSequence: 1 }).then((k) => k >= 2),
            rheo.reset('s', 'reset', { confirm: true }).then(() => 'reset'),
            rheo.createStream('s2').then((s) => s.name),
            rheo.createGroup('s', 'g2').then((g) => g.group),
          ]),
        ),
      );
      expect(outcome).toEqual({ status: 'fulfilled', value: [4, 2, true, true, true, 1, true, 'reset', 's2', 'g2'] });
    } finally {
      await rheo.close();
    }
  }, 30_000);

  it('gives up after lockTimeoutMs with backend_unavailable naming the lock, and changes nothing', async () => {
    const db = file('timeout');
    const rheo = await withEvents(db, { lockTimeoutMs: 300 });
    try {
      const holder = await hold(db, 'write');
      const { outcome, turns } = await watch(() => rheo.append('s', { payload: 'late' })).done;
      expect(outcome.status).toBe('rejected');
      const err = (outcome as PromiseRejectedResult).reason as RheoError;
      expect(err).toBeInstanceOf(RheoError);
      expect(err.code).toBe('backend_unavailable');
      expect(err.message).toMatch(
        /append: gave up after \d+ ms \(\d+ attempts\) waiting for the write lock on SQLite database .*timeout-\d+\.db.*\(lockTimeoutMs 300\)/,
      );
      // It tried again on timers (the loop turned meanwhile), and gave up while the lock was still held.
      expect(Number(/\((\d+) attempts\)/.exec(err.message)![1])).toBeGreaterThan(1);
      expect(turns).toBeGreaterThan(0);
      expect(holder.holding).toBe(true);
      await holder.release();
      expect((await rheo.read('s', { limit: 10 })).map((e) => e.payload)).toEqual([1, 2, 3]);
    } finally {
      await rheo.close();
    }
  }, 30_000);

  it('init and reads wait the same way for a lock that keeps even readers out', async () => {
    const db = file('exclusive');
    const before = await withEvents(db);
    await before.close();
    // In exclusive locking mode the child keeps every other connection out, readers included,
    // until it closes the file: the journal-mode switch at init and plain reads get SQLITE_BUSY.
    const holder = await hold(db, 'exclusive');
    const rheo = new Rheo(sqliteBackend({ database: db, ...PATIENT }));
    try {
      const outcome = await waitsOffTheLoop(
        holder,
        watch(async () => {
          const events = await rheo.read('s', { limit: 10 });
          const lag = await rheo.lag('s', 'g');
          return [events.length, lag.lag];
        }),
      );
      expect(outcome).toEqual({ status: 'fulfilled', value: [3, 3] });
    } finally {
      await rheo.close();
    }
  }, 30_000);

  it("on a host's DataSource: Rheo's waits do not block the loop, and the host keeps its own busy timeout", async () => {
    const db = file('host');
    // TypeORM's default busy timeout is 5 s.
    const ds = new DataSource({ type: 'better-sqlite3', database: db, enableWAL: true });
    await ds.initialize();
    const rheo = new Rheo(typeormBackend({ dataSource: ds, ...PATIENT }));
    try {
      await rheo.createStream('s');
      await rheo.createGroup('s', 'g');
      await rheo.append('s', { payload: 1 });
      const holder = await hold(db, 'write');
      const outcome = await waitsOffTheLoop(
        holder,
        watch(() => rheo.fetch('s', 'g')),
      );
      expect(outcome.status).toBe('fulfilled');
      expect((outcome as PromiseFulfilledResult<Lease[]>).value).toHaveLength(1);
      expect(await ds.query('PRAGMA busy_timeout')).toEqual([{ timeout: 5000 }]);
    } finally {
      await rheo.close();
      await ds.destroy();
    }
  }, 30_000);

  it("does not wait when waiting cannot help: a write in a host's read transaction whose snapshot went stale fails at once", async () => {
    const db = file('snapshot');
    const ds = new DataSource({ type: 'better-sqlite3', database: db, enableWAL: true });
    await ds.initialize();
    const rheo = new Rheo(typeormBackend({ dataSource: ds, lockTimeoutMs: 3000 }));
    try {
      await rheo.createStream('s');
      const err = await ds
        .transaction(async (manager) => {
          await manager.query('SELECT count(*) FROM rheo_events'); // the transaction's read snapshot
          const writer = await hold(db, 'commit'); // another process commits a change after it
          await writer.release();
          return rheo.append('s', { payload: 1 }, { manager }).catch((e: unknown) => e);
        })
        .catch((e: unknown) => e);
      // SQLITE_BUSY_SNAPSHOT: only a new transaction can write; 3 s of retries would end the same way,
      // with the "gave up after ... attempts" of a lock wait.
      expect(err).toBeInstanceOf(RheoError);
      expect(err).toMatchObject({ code: 'backend_unavailable' });
      expect((err as RheoError).cause).toMatchObject({ code: 'SQLITE_BUSY_SNAPSHOT' });
      expect((err as RheoError).message).not.toMatch(/gave up|attempts/);
      expect(await rheo.read('s')).toEqual([]);
    } finally {
      await rheo.close();
      await ds.destroy();
    }
  }, 30_000);

  it('validates lockTimeoutMs, naming the field', async () => {
    for (const bad of [-1, 1.5, '100', 600_001]) {
      expect(() => sqliteBackend({ database: file('bad'), lockTimeoutMs: bad as number })).toThrow(
        expect.objectContaining({ code: 'invalid_argument', field: 'options.lockTimeoutMs' }),
      );
    }
    const ds = new DataSource({ type: 'better-sqlite3', database: file('bad-host') });
    expect(() => typeormBackend({ dataSource: ds, lockTimeoutMs: -5 })).toThrow(
      expect.objectContaining({ field: 'options.lockTimeoutMs' }),
    );
    const pg = new DataSource({ type: 'postgres', url: 'postgres://x@127.0.0.1/x' });
    expect(() => typeormBackend({ dataSource: pg, lockTimeoutMs: 1000 })).toThrow(
      expect.objectContaining({ field: 'options.lockTimeoutMs' }),
    );
    // 0 is allowed: one attempt (SQLite's own few milliseconds), then fail.
    expect(() => sqliteBackend({ database: file('zero'), lockTimeoutMs: 0 })).not.toThrow();
  });
});
