// Schema version 3 -> 4 (pausing a group, docs/adr/046-pausing-a-group.md) on both
// dialects. The version-3 tables are made by this release and taken back by the
// `down` of every later version, newest first (version 4's drops exactly the five
// pause columns): nothing a group without a pause (or a skip) writes differs
// between the versions, so that is the data a version-3 release leaves. Opened with install 'none' it is refused; with
// 'auto' it is upgraded in place: the existing groups are not paused, their old
// lease settles and claims go on, and then a pause holds and a resume lifts it.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { type Backend, type Lease, ManualClock, postgresBackend, Rheo, sqliteBackend } from '../../lib';
import { isPausedAnswer } from '../../lib/core/fetched';
import { PG_SCHEMA } from '../../lib/backends/postgres/schema';
import { pgTables, sqliteTables } from '../../lib/backends/sql/names';
import { SQLITE_SCHEMA } from '../../lib/backends/sqlite/schema';
import { dropSchema, freshSchema, PG_URL } from './pg-helpers';

const T0 = Date.UTC(2026, 11, 1);
const dir = mkdtempSync(join(tmpdir(), 'rheo-upgrade-pause-'));
const schema = freshSchema('v3to4');
const PAUSE_COLUMNS = ['pause_reason', 'paused_at', 'paused_by', 'paused_to', 'paused_until'];
/** The versions after 3 (version 4 and whatever came later), and the latest. */
const LATER = PG_SCHEMA.map((v) => v.version).filter((v) => v > 3);
const LATEST = LATER[LATER.length - 1];

interface Dialect {
  name: string;
  open(clock: ManualClock, install: 'auto' | 'none'): Backend;
  /** Run raw SQL on the store (its own connection). */
  sql(statement: string, params?: unknown[]): Promise<Array<Record<string, unknown>>>;
  /** The downs of version 4 and later (newest first) and the removal of their records: the tables as version 3 left them. */
  toVersion3(): Promise<void>;
  /** The pause columns present now, sorted. */
  pauseColumns(): Promise<string[]>;
}

async function onDataSource<T>(options: ConstructorParameters<typeof DataSource>[0], run: (ds: DataSource) => Promise<T>): Promise<T> {
  const ds = new DataSource(options);
  await ds.initialize();
  try {
    return await run(ds);
  } finally {
    await ds.destroy();
  }
}

const sqliteFile = join(dir, 'v3.db');
const DIALECTS: Dialect[] = [
  {
    name: 'postgres',
    open: (clock, install) => postgresBackend({ url: PG_URL, schema, clock, install, poolSize: 2 }),
    sql: (statement, params) =>
      onDataSource({ type: 'postgres', url: PG_URL, poolSize: 1 }, (ds) => ds.query(statement.replace(/:s\./g, `"${schema}".`), params)),
    async toVersion3() {
      for (const v of [...PG_SCHEMA.slice(3)].reverse())
        for (const statement of v.down!(pgTables(schema), schema)) await this.sql(statement);
      await this.sql(`DELETE FROM :s.rheo_schema_version WHERE version > 3`);
    },
    async pauseColumns() {
      const rows = await this.sql(
        `SELECT column_name AS c FROM information_schema.columns
         WHERE table_schema = $1 AND column_name LIKE 'pause%' ORDER BY column_name`,
        [schema],
      );
      return rows.map((r) => String(r.c));
    },
  },
  {
    name: 'sqlite',
    open: (clock, install) => sqliteBackend({ database: sqliteFile, clock, install }),
    sql: (statement, params) =>
      onDataSource({ type: 'better-sqlite3', database: sqliteFile }, (ds) => ds.query(statement.replace(/:s\./g, ''), params)),
    async toVersion3() {
      for (const v of [...SQLITE_SCHEMA.slice(3)].reverse()) for (const statement of v.down!(sqliteTables(), '')) await this.sql(statement);
      await this.sql(`DELETE FROM rheo_schema_version WHERE version > 3`);
    },
    async pauseColumns() {
      const rows = await this.sql(
        `SELECT name AS c FROM pragma_table_info('rheo_groups') WHERE name LIKE 'pause%'
         UNION ALL SELECT name FROM pragma_table_info('rheo_group_partitions') WHERE name LIKE 'pause%' ORDER BY 1`,
      );
      return rows.map((r) => String(r.c));
    },
  },
];

afterAll(async () => {
  await dropSchema(schema);
  rmSync(dir, { recursive: true, force: true });
});

describe.each(DIALECTS)('$name: upgrade from schema version 3 to 4 (pausing a group)', (d) => {
  const clock = new ManualClock(T0);
  let rheo: Rheo;
  const before: Record<string, unknown> = {};
  let liveLease: Lease;

  afterAll(async () => {
    await rheo?.close();
  });

  it('version 4 is exactly the five pause columns: its down leaves the version-3 tables with the data', async () => {
    const writer = new Rheo(d.open(clock, 'auto'));
    await writer.createStream('orders', { partitions: 2 });
    await writer.createGroup('orders', 'billing', { maxAttempts: 5 });
    await writer.createGroup('orders', 'audit', { ordering: 'partition' });
    await writer.appendBatch(
      'orders',
      Array.from({ length: 6 }, (_, i) => ({ id: `o-${i}`, partition: i % 2, type: 'order', payload: { i } })),
    );
    // billing: o-0 acked, o-1 held under a live lease; o-2..o-5 never offered.
    const leases = await writer.fetch('orders', 'billing', { limit: 2, leaseMs: 120_000 });
    const byId = new Map(leases.map((l) => [l.event.id, l]));
    await writer.ack(byId.get('o-0')!);
    liveLease = byId.get('o-1')!;
    before.billing = await writer.lag('orders', 'billing');
    before.audit = await writer.lag('orders', 'audit');
    await writer.close();

    expect(await d.pauseColumns()).toEqual(PAUSE_COLUMNS);
    await d.toVersion3();
    expect(await d.pauseColumns()).toEqual([]);
    expect((await d.sql(`SELECT max(version) AS v FROM :s.rheo_schema_version`)).map((r) => Number(r.v))).toEqual([3]);
  });

  it("install 'none' refuses the version-3 tables, naming both versions, and changes nothing", async () => {
    const none = new Rheo(d.open(clock, 'none'));
    await expect(none.init()).rejects.toMatchObject({
      code: 'failed',
      message: expect.stringContaining(
        `the rheo tables are at schema version 3, and this nestjs-rheo needs version ${LATEST} with install: 'none'`,
      ),
    });
    await none.close();
    expect(await d.pauseColumns()).toEqual([]);
  });

  it("install 'auto' applies version 4 and the later ones: the groups are not paused, and their answers stay the same", async () => {
    const backend = d.open(clock, 'auto');
    rheo = new Rheo(backend);
    await rheo.init();
    expect(backend.describe?.().installed).toEqual(LATER);
    expect((await d.sql(`SELECT version FROM :s.rheo_schema_version ORDER BY version`)).map((r) => Number(r.version))).toEqual([
      1,
      2,
      3,
      ...LATER,
    ]);
    expect(await d.pauseColumns()).toEqual(PAUSE_COLUMNS);
    for (const group of ['billing', 'audit']) expect((await rheo.groupInfo('orders', group)).paused).toBeNull();
    expect(await rheo.lag('orders', 'billing')).toEqual(before.billing);
    expect(await rheo.lag('orders', 'audit')).toEqual(before.audit);
  });

  it('claims go on: the old lease settles, the events never offered are claimed, in both groups', async () => {
    await rheo.ack(liveLease);
    const fresh = await rheo.fetch('orders', 'billing', { limit: 10 });
    expect(fresh.map((l) => l.event.id).sort()).toEqual(['o-2', 'o-3', 'o-4', 'o-5']);
    for (const l of fresh) await rheo.ack(l);
    const heads = await rheo.fetch('orders', 'audit', { limit: 10 });
    expect(heads.map((l) => l.event.id).sort()).toEqual(['o-0', 'o-1']);
    for (const l of heads) await rheo.ack(l);
  });

  it('a pause then holds both groups on the upgraded tables, and a resume lifts it', async () => {
    await rheo.append('orders', { id: 'new', partition: 0, payload: 'new' });
    for (const group of ['billing', 'audit']) {
      const pause = await rheo.pauseGroup('orders', group, { reason: 'upgrade check', by: 'ops' });
      expect((await rheo.groupInfo('orders', group)).paused).toEqual(pause);
      const answer = await rheo.fetch('orders', group, { limit: 10 });
      expect(answer).toEqual([]);
      expect(isPausedAnswer(answer)).toBe(true);
      expect(await rheo.resumeGroup('orders', group)).toBe(true);
      expect((await rheo.groupInfo('orders', group)).paused).toBeNull();
    }
    expect((await rheo.fetch('orders', 'billing', { limit: 10 })).map((l) => l.event.id)).toEqual(['new']);
    // audit orders by partition: each partition's next head.
    expect((await rheo.fetch('orders', 'audit', { limit: 10 })).map((l) => l.event.id).sort()).toEqual(['o-2', 'o-3']);
  });
});
