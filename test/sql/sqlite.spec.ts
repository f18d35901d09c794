import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { ManualClock, Rheo, RheoError, rheoEntities, rheoMigrations, sqliteBackend, typeormBackend } from '../../lib';
import { SqliteBackend } from '../../lib/backends/sqlite/sqlite-backend';

const dir = mkdtempSync(join(tmpdir(), 'rheo-sqlite-'));

async function sqliteSource(file: string, extra: Record<string, unknown> = {}): Promise<DataSource> {
  const ds = new DataSource({ type: 'better-sqlite3', database: join(dir, file), enableWAL: true, ...extra } as never);
  await ds.initialize();
  return ds;
}

describe('sqlite backend', () => {
  let ds: DataSource;
  let rheo: Rheo;

  beforeAll(async () => {
    ds = await sqliteSource('host.db');
    rheo = new Rheo(typeormBackend({ dataSource: ds, clock: new ManualClock() }));
    await rheo.init();
    await ds.query(`CREATE TABLE orders (id TEXT PRIMARY KEY)`);
  });

  afterAll(async () => {
    await rheo.close();
    expect(ds.isInitialized).toBe(true); // borrowed: never destroyed by the backend
    await ds.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  it('declares a durable, single-node store with transactional append', () => {
    const caps = rheo.backend.capabilities;
    expect(caps.guarantees).toMatchObject({ durable: true, distributed: false });
    expect(caps.mechanisms).toMatchObject({ transactionalAppend: true, batchWrites: true });
  });

  it('outbox: the business row and the event commit together', async () => {
    await rheo.createStream('commit');
    await ds.transaction(async (manager) => {
      await manager.query(`INSERT INTO orders (id) VALUES (?)`, ['o-1']);
      await rheo.append('commit', { id: 'e-1', payload: { order: 'o-1' } }, { manager });
    });
    expect(await ds.query(`SELECT id FROM orders WHERE id = 'o-1'`)).toHaveLength(1);
    expect((await rheo.read('commit')).map((e) => [e.id, e.sequence])).toEqual([['e-1', 1]]);
  });

  it('outbox: a rollback takes the event with it, and the sequence stays contiguous', async () => {
    await rheo.createStream('rollback');
    await expect(
      ds.transaction(async (manager) => {
        await manager.query(`INSERT INTO orders (id) VALUES (?)`, ['o-2']);
        await rheo.appendBatch('rollback', [{ payload: 1 }, { payload: 2 }], { manager });
        throw new Error('business rule failed');
      }),
    ).rejects.toThrow('business rule failed');
    expect(await ds.query(`SELECT id FROM orders WHERE id = 'o-2'`)).toHaveLength(0);
    expect(await rheo.read('rollback')).toEqual([]);
    expect((await rheo.append('rollback', { payload: 3 })).sequence).toBe(1);
  });

  it('outbox: refuses a manager outside a transaction or from another DataSource, writing nothing', async () => {
    await rheo.createStream('bad-manager');
    const outside = await rheo.append('bad-manager', { payload: 1 }, { manager: ds.manager }).catch((e) => e);
    expect(outside).toMatchObject({ code: 'invalid_argument', field: 'options.manager' });
    const other = await sqliteSource('other.db');
    try {
      const foreign = await other.transaction((manager) => rheo.append('bad-manager', { payload: 1 }, { manager }).catch((e) => e));
      expect(foreign).toBeInstanceOf(RheoError);
      expect(foreign).toMatchObject({ code: 'invalid_argument', field: 'options.manager' });
    } finally {
      await other.destroy();
    }
    expect(await rheo.read('bad-manager')).toEqual([]);
  });

  it("runs in WAL mode and install: 'auto' is safe when several connections start on one file at once", async () => {
    const sources = await Promise.all(Array.from({ length: 4 }, () => sqliteSource('shared.db')));
    try {
      const backends = sources.map((d) => typeormBackend({ dataSource: d }) as SqliteBackend);
      await Promise.all(backends.map((b) => b.init()));
      expect(await sources[0].query('PRAGMA journal_mode')).toEqual([{ journal_mode: 'wal' }]);
      const rheos = backends.map((b) => new Rheo(b));
      await rheos[0].createStream('shared');
      // Every connection appends; sequences stay contiguous across them.
      for (let round = 0; round < 5; round++) await Promise.all(rheos.map((r, i) => r.append('shared', { payload: { i, round } })));
      expect((await rheos[2].read('shared', { limit: 100 })).map((e) => e.sequence)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
      await Promise.all(backends.map((b) => b.close()));
    } finally {
      await Promise.all(sources.map((d) => d.destroy()));
    }
  });

  it("rheoMigrations run on a file install 'auto' made: a host can switch to migrations", async () => {
    const file = join(dir, 'switched.db');
    const auto = new Rheo(sqliteBackend({ database: file }));
    await auto.createStream('kept');
    await auto.append('kept', { payload: 'still here' });
    await auto.close();
    const d = new DataSource({ type: 'better-sqlite3', database: file, migrations: rheoMigrations() });
    await d.initialize();
    try {
      expect((await d.runMigrations()).length).toBe(rheoMigrations().length);
      const r = new Rheo(typeormBackend({ dataSource: d, install: 'none' }));
      expect((await r.read('kept')).map((e) => e.payload)).toEqual(['still here']);
      expect((await r.append('kept', { payload: 'more' })).sequence).toBe(2);
      await r.close();
    } finally {
      await d.destroy();
    }
  });

  it("rheoMigrations build the tables for install: 'none'", async () => {
    const d = new DataSource({ type: 'better-sqlite3', database: join(dir, 'migrated.db'), migrations: rheoMigrations() });
    await d.initialize();
    try {
      await d.runMigrations();
      const r = new Rheo(typeormBackend({ dataSource: d, install: 'none' }));
      await r.createStream('m');
      await r.createGroup('m', 'g');
      await r.append('m', { payload: 1 });
      const [l] = await r.fetch('m', 'g');
      await r.ack(l);
      expect((await r.lag('m', 'g')).lag).toBe(0);
      expect(await d.query(`SELECT version, name FROM rheo_schema_version ORDER BY version`)).toEqual([
        { version: 1, name: 'initial' },
        { version: 2, name: 'dead-letters-retention' },
        { version: 3, name: 'delayed-events' },
        { version: 4, name: 'pause-groups' },
        { version: 5, name: 'skip-reschedule-cancel' },
        { version: 6, name: 'flow-control' },
      ]);
      await r.close();
      // Each version's down undoes it: version 6's drops the flow columns and the key index, version 5's the
      // cancel and skip columns, version 4's the pause columns, version 3's the delay columns, version 2's
      // leaves version 1's tables, version 1's leaves nothing.
      await d.undoLastMigration();
      expect(await d.query(`SELECT name FROM pragma_table_info('rheo_deliveries') WHERE name = 'key'`)).toEqual([]);
      expect(
        await d.query(`SELECT name FROM pragma_table_info('rheo_groups') WHERE name LIKE 'rate%' OR name LIKE '%concurrency'`),
      ).toEqual([]);
      expect(await d.query(`SELECT name FROM sqlite_master WHERE name = 'rheo_deliveries_key'`)).toEqual([]);
      expect(await d.query(`SELECT version FROM rheo_schema_version ORDER BY version`)).toHaveLength(5);
      await d.undoLastMigration();
      expect(await d.query(`SELECT name FROM pragma_table_info('rheo_events') WHERE name = 'cancelled_at'`)).toEqual([]);
      expect(await d.query(`SELECT name FROM pragma_table_info('rheo_groups') WHERE name LIKE 'skip%'`)).toEqual([]);
      expect(await d.query(`SELECT version FROM rheo_schema_version ORDER BY version`)).toHaveLength(4);
      await d.undoLastMigration();
      expect(await d.query(`SELECT name FROM pragma_table_info('rheo_group_partitions') WHERE name = 'paused_to'`)).toEqual([]);
      expect(await d.query(`SELECT version FROM rheo_schema_version ORDER BY version`)).toHaveLength(3);
      await d.undoLastMigration();
      expect(await d.query(`SELECT name FROM pragma_table_info('rheo_events') WHERE name = 'deliver_at'`)).toEqual([]);
      expect(await d.query(`SELECT version FROM rheo_schema_version ORDER BY version`)).toHaveLength(2);
      await d.undoLastMigration();
      const tables = async () =>
        (await d.query(`SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'rheo_%' ORDER BY name`)).map(
          (x: { name: string }) => x.name,
        );
      expect(await tables()).toEqual([
        'rheo_deliveries',
        'rheo_events',
        'rheo_group_partitions',
        'rheo_groups',
        'rheo_partitions',
        'rheo_schema_version',
        'rheo_streams',
      ]);
      expect(await d.query(`SELECT version FROM rheo_schema_version`)).toEqual([{ version: 1 }]);
      await d.undoLastMigration();
      expect(await tables()).toEqual([]);
    } finally {
      await d.destroy();
    }
  });

  it('rheoEntities read the tables through TypeORM, and synchronize never rebuilds them', async () => {
    const d = new DataSource({ type: 'better-sqlite3', database: join(dir, 'entities.db'), entities: rheoEntities(), synchronize: true });
    await d.initialize();
    try {
      const r = new Rheo(typeormBackend({ dataSource: d }));
      await r.createStream('e', { partitions: 2 });
      await r.append('e', { id: 'x', payload: 1 });
      expect(await d.getRepository('rheo_streams').find()).toEqual([expect.objectContaining({ name: 'e', partitions: 2 })]);
      expect(await d.driver.createSchemaBuilder().log()).toMatchObject({ upQueries: [] });
      // The unique (stream, id) key is still there: the same id is not stored twice.
      await r.append('e', { id: 'x', payload: 2 });
      expect(await d.getRepository('rheo_events').count()).toBe(1);
      await r.close();
    } finally {
      await d.destroy();
    }
  });

  it('rejects a schema option (SQLite has none) and a bad database path, naming the field', () => {
    expect(() => typeormBackend({ dataSource: ds, schema: 'x' })).toThrow(expect.objectContaining({ field: 'options.schema' }));
    expect(() => sqliteBackend({ database: '' })).toThrow(expect.objectContaining({ field: 'options.database' }));
  });

  it('an owned database survives close and reopen (durable)', async () => {
    const file = join(dir, 'durable.db');
    const a = new Rheo(sqliteBackend({ database: file }));
    await a.createStream('d');
    await a.createGroup('d', 'g');
    await a.appendBatch('d', [{ payload: 1 }, { payload: 2 }]);
    const [first] = await a.fetch('d', 'g', { limit: 1 });
    await a.ack(first);
    await a.close();
    const b = new Rheo(sqliteBackend({ database: file }));
    expect((await b.lag('d', 'g')).partitions[0]).toMatchObject({ frontier: 1, highWatermark: 2 });
    const [second] = await b.fetch('d', 'g');
    expect(second.event.payload).toBe(2);
    await b.close();
  });
});
