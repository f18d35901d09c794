// Schema versions on SQLite: what a fresh install records, and the files a
// backend refuses to touch (a newer release's, or an old one under install 'none').
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { Rheo, sqliteBackend } from '../../lib';
import { SQLITE_SCHEMA } from '../../lib/backends/sqlite/schema';

/** Every version this release has, as recorded; the latest; one a newer release would record. */
const ALL = SQLITE_SCHEMA.map((v) => ({ version: v.version, name: v.name }));
const LATEST = ALL[ALL.length - 1].version;
const FUTURE = LATEST + 1;

const dir = mkdtempSync(join(tmpdir(), 'rheo-sqlite-schema-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function onFile<T>(file: string, fn: (ds: DataSource) => Promise<T>): Promise<T> {
  const ds = new DataSource({ type: 'better-sqlite3', database: file });
  await ds.initialize();
  try {
    return await fn(ds);
  } finally {
    await ds.destroy();
  }
}

const versions = (file: string) => onFile(file, (ds) => ds.query(`SELECT version, name FROM rheo_schema_version ORDER BY version`));
const tables = (file: string) =>
  onFile(file, async (ds) =>
    (await ds.query(`SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'rheo_%' ORDER BY name`)).map(
      (r: { name: string }) => r.name,
    ),
  );

describe('sqlite schema versions', () => {
  it("install 'auto' on an empty file creates every version's tables and records each version", async () => {
    const file = join(dir, 'fresh.db');
    const rheo = new Rheo(sqliteBackend({ database: file }));
    await rheo.init();
    await rheo.close();
    expect(await versions(file)).toEqual(ALL);
    expect(ALL.slice(0, 5)).toEqual([
      { version: 1, name: 'initial' },
      { version: 2, name: 'dead-letters-retention' },
      { version: 3, name: 'delayed-events' },
      { version: 4, name: 'pause-groups' },
      { version: 5, name: 'skip-reschedule-cancel' },
    ]);
    expect(await tables(file)).toEqual([
      'rheo_dead_letters',
      'rheo_deliveries',
      'rheo_events',
      'rheo_group_partitions',
      'rheo_groups',
      'rheo_jobs',
      'rheo_partitions',
      'rheo_schema_version',
      'rheo_streams',
    ]);
    // Opening again applies nothing (and records nothing twice).
    const again = new Rheo(sqliteBackend({ database: file }));
    await again.init();
    await again.close();
    expect(await versions(file)).toHaveLength(ALL.length);
  });

  it("install 'auto' is safe when several backends start on one empty file at once", async () => {
    const file = join(dir, 'racing.db');
    const rheos = Array.from({ length: 4 }, () => new Rheo(sqliteBackend({ database: file })));
    await Promise.all(rheos.map((r) => r.init()));
    await Promise.all(rheos.map((r) => r.close()));
    expect(await versions(file)).toHaveLength(ALL.length);
  });

  it("install 'none' refuses a file without the tables, and creates nothing", async () => {
    const file = join(dir, 'none.db');
    const rheo = new Rheo(sqliteBackend({ database: file, install: 'none' }));
    await expect(rheo.init()).rejects.toMatchObject({
      code: 'failed',
      field: 'database',
      message: expect.stringContaining(
        `the rheo tables are not installed in file ${file}, and this nestjs-rheo needs version ${LATEST} with install: 'none'`,
      ),
    });
    await rheo.close();
    expect(await tables(file)).toEqual([]);
  });

  it("install 'none' and readOnly leave another application's database byte-identical: the check comes before any write", async () => {
    const file = join(dir, 'their-app.db');
    await onFile(file, (ds) => ds.query(`CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)`));
    const before = readFileSync(file);
    for (const options of [{ install: 'none' as const }, { readOnly: true }]) {
      const rheo = new Rheo(sqliteBackend({ database: file, ...options }));
      await expect(rheo.init()).rejects.toMatchObject({ code: 'failed', field: 'database' });
      await rheo.close();
      // Still in its own journal mode (no WAL switch, no header rewritten), and no side files.
      expect(readFileSync(file).equals(before)).toBe(true);
      expect(readdirSync(dir).filter((f) => f.startsWith('their-app'))).toEqual(['their-app.db']);
    }
    const missing = join(dir, 'no-such-folder', 'x.db');
    await expect(new Rheo(sqliteBackend({ database: missing, readOnly: true })).init()).rejects.toMatchObject({ code: 'failed' });
    expect(existsSync(join(dir, 'no-such-folder'))).toBe(false);
  });

  it('refuses a file a newer release made, with either install mode, and touches nothing', async () => {
    const file = join(dir, 'newer.db');
    const made = new Rheo(sqliteBackend({ database: file }));
    await made.createStream('kept');
    await made.close();
    await onFile(file, (ds) =>
      ds.query(`INSERT INTO rheo_schema_version (version, name, applied_at) VALUES (${FUTURE}, 'from-the-future', 0)`),
    );
    for (const install of ['auto', 'none'] as const) {
      const rheo = new Rheo(sqliteBackend({ database: file, install }));
      await expect(rheo.init()).rejects.toMatchObject({
        code: 'failed',
        message: expect.stringContaining(
          `schema version ${FUTURE}, which is newer than this nestjs-rheo knows (${LATEST}): upgrade nestjs-rheo`,
        ),
      });
      await rheo.close();
    }
    expect(await versions(file)).toEqual([...ALL, { version: FUTURE, name: 'from-the-future' }]);
    expect(await onFile(file, (ds) => ds.query(`SELECT name FROM rheo_streams`))).toEqual([{ name: 'kept' }]);
  });

  it("install 'none' opens a file at this release's version", async () => {
    const file = join(dir, 'current.db');
    const auto = new Rheo(sqliteBackend({ database: file }));
    await auto.createStream('s');
    await auto.close();
    const none = new Rheo(sqliteBackend({ database: file, install: 'none' }));
    expect((await none.listStreams()).map((s) => s.name)).toEqual(['s']);
    await none.close();
  });
});
