// Transactional consumers on SQLite (ADR 030): one connection, shared by the
// handler's transaction and everything else the backend does. A Consumer with
// `transactional: true` commits each handler's writes with its ack or neither;
// while a handler's transaction is open, the backend's other work waits for it
// (it would otherwise ride in that transaction and vanish with its rollback),
// except what the handler itself does through it.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource, EntityManager } from 'typeorm';
import { Consumer, ManualClock, Rheo, RheoRetry, sqliteBackend, typeormBackend } from '../../lib';
import type { DeliveryControl, Lease, RheoError } from '../../lib';
import { until } from '../support/until';

const dir = mkdtempSync(join(tmpdir(), 'rheo-sqlite-tx-'));
// After every describe: the second one's file lives in the same folder.
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A second connection on the file (better-sqlite3 ships no types: the little of it used here). */
interface RawConnection {
  inTransaction: boolean;
  pragma(source: string): unknown;
  exec(source: string): void;
  prepare(source: string): { all(): unknown[] };
  close(): void;
}
// eslint-disable-next-line @typescript-eslint/no-require-imports -- untyped driver, loaded as the backend loads it
const Database = require('better-sqlite3') as new (file: string, options?: { readonly?: boolean }) => RawConnection;

/** A few turns of the event loop (timers included): time for anything that could run to run. */
const turns = () => new Promise((r) => setTimeout(r, 30));

describe('sqlite: transactional consumers on a host DataSource', () => {
  const clock = new ManualClock(Date.UTC(2026, 0, 1));
  let ds: DataSource;
  let rheo: Rheo;
  let n = 0;
  const groups: Consumer[] = [];

  beforeAll(async () => {
    ds = new DataSource({ type: 'better-sqlite3', database: join(dir, 'host.db'), enableWAL: true });
    await ds.initialize();
    rheo = new Rheo(typeormBackend({ dataSource: ds, clock }));
    await rheo.init();
  });

  afterEach(async () => {
    await Promise.all(groups.splice(0).map((g) => g.drain(5000)));
  });

  afterAll(async () => {
    await rheo?.close();
    await ds?.destroy();
  });

  async function setup(events: number): Promise<{ stream: string; table: string }> {
    const stream = `s${++n}`;
    const table = `business_${n}`;
    await ds.query(`CREATE TABLE ${table} (id INTEGER PRIMARY KEY AUTOINCREMENT, event_id TEXT NOT NULL, attempt INTEGER NOT NULL)`);
    await rheo.createStream(stream, { partitions: 2 });
    await rheo.createGroup(stream, 'g');
    if (events > 0)
      await rheo.appendBatch(
        stream,
        Array.from({ length: events }, (_, i) => ({ key: `k${i}`, payload: { i } })),
      );
    return { stream, table };
  }

  function transactional(
    stream: string,
    handler: (lease: Lease, delivery: DeliveryControl) => Promise<unknown>,
    concurrency = 4,
  ): Consumer {
    const group = new Consumer(
      rheo,
      { stream, group: 'g', transactional: true, concurrency, maxDemand: 10, pollMs: 10, leaseMs: 10_000 },
      handler as never,
    );
    groups.push(group);
    return group;
  }

  const insert = (table: string, lease: Lease, manager: unknown) =>
    (manager as EntityManager).query(`INSERT INTO ${table} (event_id, attempt) VALUES (?, ?)`, [lease.event.id, lease.attempt]);
  const rows = (table: string): Promise<Array<{ event_id: string; attempt: number }>> =>
    ds.query(`SELECT event_id, attempt FROM ${table} ORDER BY id`);

  it("commits each handler's writes with its ack; handlers take turns on the one connection", async () => {
    const { stream, table } = await setup(30);
    let open = 0;
    let overlapped = false;
    const group = transactional(stream, async (lease, delivery) => {
      overlapped ||= ++open > 1;
      expect((delivery.manager as EntityManager).queryRunner?.isTransactionActive).toBe(true);
      await insert(table, lease, delivery.manager);
      await turns();
      open--;
    });
    group.start();
    await until('lag 0', async () => (await rheo.lag(stream, 'g')).lag === 0);
    const stored = await rows(table);
    expect(stored).toHaveLength(30);
    expect(new Set(stored.map((r) => r.event_id)).size).toBe(30);
    expect(overlapped).toBe(false);
    await until('every ack counted', () => group.stats.settled === 30);
  });

  it('rolls the write back when the lease expired under the handler; the next attempt commits once', async () => {
    const { stream, table } = await setup(1);
    const settleErrors: RheoError[] = [];
    const group = transactional(stream, async (lease, delivery) => {
      await insert(table, lease, delivery.manager);
      if (lease.attempt === 1) clock.advance(10_001); // expired: the ack's fence refuses it
    });
    group.on('settle_error', (e) => settleErrors.push(e.error));
    group.start();
    await until('lag 0', async () => (await rheo.lag(stream, 'g')).lag === 0);
    expect(settleErrors.map((e) => e.code)).toEqual(['stale_lease']);
    expect(await rows(table)).toEqual([{ event_id: expect.any(String), attempt: 2 }]);
  });

  it("makes the backend's other work wait for the handler's transaction, so its rollback takes none of it", async () => {
    const { stream, table } = await setup(1);
    const side = `side${n}`;
    await rheo.createStream(side);
    let inside!: () => void;
    const handlerInside = new Promise<void>((r) => (inside = r));
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const group = transactional(stream, async (lease, delivery) => {
      await insert(table, lease, delivery.manager);
      if (lease.attempt === 1) {
        inside();
        await released;
        throw new RheoRetry('business rule broken', { delayMs: 0 });
      }
    });
    group.start();
    await handlerInside;
    // An append from elsewhere (an HTTP request) while the handler's transaction is open.
    let appended = false;
    const append = rheo.append(side, { payload: { from: 'outside' } }).then((e) => {
      appended = true;
      return e;
    });
    await turns();
    expect(appended).toBe(false); // waits: it would run inside the handler's transaction
    release();
    const event = await append;
    expect((await rheo.read(side)).map((e) => e.id)).toEqual([event.id]); // the rollback did not take it
    await until('lag 0', async () => (await rheo.lag(stream, 'g')).lag === 0);
    expect(await rows(table)).toEqual([{ event_id: expect.any(String), attempt: 2 }]);
  });

  it('runs what the handler does through its transaction inside it: an append with ctx.manager commits or rolls back with it', async () => {
    const { stream } = await setup(2);
    const out = `out${n}`;
    await rheo.createStream(out);
    const group = transactional(stream, async (lease, delivery) => {
      await rheo.append(out, { type: 'effect', payload: { of: lease.event.id, attempt: lease.attempt } }, { manager: delivery.manager });
      if (lease.event.sequence === 1 && lease.attempt === 1) throw new RheoRetry('not this time', { delayMs: 0 });
    });
    group.start();
    await until('lag 0', async () => (await rheo.lag(stream, 'g')).lag === 0);
    const effects = (await rheo.read(out)).map((e) => e.payload as { attempt: number });
    expect(effects).toHaveLength(2);
    expect(effects.map((p) => p.attempt).sort()).toEqual([1, 2]);
  });
});

describe('sqlite: transactional ack against another connection holding the write lock', () => {
  const file = join(dir, 'contended.db');
  const rheo = new Rheo(sqliteBackend({ database: file }));

  afterAll(() => rheo.close());

  it('waits for the lock before the handler runs (off the event loop), then commits', async () => {
    await rheo.createStream('c');
    await rheo.createGroup('c', 'g');
    await rheo.append('c', { payload: 1 });
    const [lease] = await rheo.fetch('c', 'g', { limit: 1, leaseMs: 60_000 });
    const other = new Database(file);
    other.pragma('busy_timeout = 0');
    other.exec('CREATE TABLE IF NOT EXISTS other_writes (n INTEGER)');
    other.exec('BEGIN IMMEDIATE');
    let ran = 0;
    const acking = rheo.backend.ackInTransaction!(lease, async (manager) => {
      ran++;
      await (manager as EntityManager).query('INSERT INTO other_writes (n) VALUES (2)');
      return true;
    });
    try {
      await turns();
      expect(ran).toBe(0); // the write lock is the other connection's: the handler has not started
      // The other connection writes and commits meanwhile: our transaction must not be left on a stale snapshot.
      other.exec('INSERT INTO other_writes (n) VALUES (1); COMMIT');
      expect(await acking).toEqual({ kind: 'committed' });
    } finally {
      if (other.inTransaction) other.exec('ROLLBACK');
      other.close();
    }
    expect(ran).toBe(1);
    const check = new Database(file, { readonly: true });
    try {
      expect(check.prepare('SELECT n FROM other_writes ORDER BY n').all()).toEqual([{ n: 1 }, { n: 2 }]);
    } finally {
      check.close();
    }
    expect((await rheo.lag('c', 'g')).lag).toBe(0);
  });
});
