// What every "upgrade one schema version with data in every state" spec shares:
// the two dialects (a fresh PostgreSQL schema, a fresh SQLite file), the way back
// to an older version (the `down` of every later version, newest first, and the
// removal of their records), the writer's streams and groups, and the checks
// that read the same for every version: install 'none' refuses the old tables,
// install 'auto' applies exactly the later versions. Each spec keeps the data it
// writes and the checks of what its version adds.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { type Backend, type DeadLetter, type Lag, type Lease, type ManualClock, postgresBackend, Rheo, sqliteBackend } from '../../lib';
import { PG_SCHEMA } from '../../lib/backends/postgres/schema';
import { pgTables, sqliteTables } from '../../lib/backends/sql/names';
import { SQLITE_SCHEMA } from '../../lib/backends/sqlite/schema';
import { dropSchema, freshSchema, PG_URL } from '../sql/pg-helpers';

export interface UpgradeDialect {
  name: 'postgres' | 'sqlite';
  /** The PostgreSQL schema of this spec (the SQLite dialect has none but shares the name for `sql`'s placeholders). */
  schema: string;
  open(clock: ManualClock, install: 'auto' | 'none'): Backend;
  /**
   * The versions after the spec's `from` this release applies on this dialect: a version
   * may land on one dialect before the other (then `SchemaUpgrade.later` is the first's).
   */
  later: number[];
  /** Run raw SQL on the store (its own connection); `:s.` stands for the schema. */
  sql(statement: string, params?: unknown[]): Promise<Array<Record<string, unknown>>>;
  /** The downs of every version after `version` (newest first) and the removal of their records. */
  downTo(version: number): Promise<void>;
}

export interface SchemaUpgrade {
  /** The version the spec upgrades from. */
  from: number;
  /** The versions after `from` this release applies, the same on both dialects. */
  later: number[];
  /** The newest version of this release. */
  latest: number;
  dialects: UpgradeDialect[];
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

/**
 * The dialects for an upgrade from schema version `from`, on a fresh PostgreSQL
 * schema and SQLite file named after `label`; both are removed after the file.
 */
export function schemaUpgrade(from: number, label: string): SchemaUpgrade {
  const dir = mkdtempSync(join(tmpdir(), `rheo-upgrade-${label}-`));
  const schema = freshSchema(`v${from}to${from + 1}`);
  const sqliteFile = join(dir, `v${from}.db`);
  afterAll(async () => {
    await dropSchema(schema);
    rmSync(dir, { recursive: true, force: true });
  });
  const later = PG_SCHEMA.map((v) => v.version).filter((v) => v > from);
  const dialects: UpgradeDialect[] = [
    {
      name: 'postgres',
      schema,
      later,
      open: (clock, install) => postgresBackend({ url: PG_URL, schema, clock, install, poolSize: 2 }),
      sql: (statement, params) =>
        onDataSource({ type: 'postgres', url: PG_URL, poolSize: 1 }, (ds) => ds.query(statement.replace(/:s\./g, `"${schema}".`), params)),
      async downTo(version) {
        for (const v of PG_SCHEMA.filter((s) => s.version > version).reverse())
          for (const statement of v.down!(pgTables(schema), schema)) await this.sql(statement);
        await this.sql(`DELETE FROM :s.rheo_schema_version WHERE version > ${version}`);
      },
    },
    {
      name: 'sqlite',
      schema,
      later: SQLITE_SCHEMA.map((v) => v.version).filter((v) => v > from),
      open: (clock, install) => sqliteBackend({ database: sqliteFile, clock, install }),
      sql: (statement, params) =>
        onDataSource({ type: 'better-sqlite3', database: sqliteFile }, (ds) => ds.query(statement.replace(/:s\./g, ''), params)),
      async downTo(version) {
        for (const v of SQLITE_SCHEMA.filter((s) => s.version > version).reverse())
          for (const statement of v.down!(sqliteTables(), '')) await this.sql(statement);
        await this.sql(`DELETE FROM rheo_schema_version WHERE version > ${version}`);
      },
    },
  ];
  return { from, later, latest: later[later.length - 1], dialects };
}

/**
 * The writer's streams and groups: 'orders' with two partitions and six events
 * o-0..o-5 (even ids on partition 0), group 'billing' (five attempts) and group
 * 'audit' (ordering 'partition').
 */
export async function writeOrders(writer: Rheo): Promise<void> {
  await writer.createStream('orders', { partitions: 2 });
  await writer.createGroup('orders', 'billing', { maxAttempts: 5 });
  await writer.createGroup('orders', 'audit', { ordering: 'partition' });
  await writer.appendBatch(
    'orders',
    Array.from({ length: 6 }, (_, i) => ({ id: `o-${i}`, partition: i % 2, type: 'order', payload: { i } })),
  );
}

/** What {@link settleInEveryState} left: the live lease, and the answers the upgraded store must give alike. */
export interface EveryState {
  liveLease: Lease;
  billingLag: Lag;
  auditLag: Lag;
  dead: DeadLetter[];
}

/**
 * After writeOrders: billing's o-0 acked, o-1 nacked for a minute, o-2
 * dead-lettered, o-3 held under a live lease (two minutes); o-4 and o-5 never
 * offered.
 */
export async function settleInEveryState(writer: Rheo): Promise<EveryState> {
  const leases = await writer.fetch('orders', 'billing', { limit: 4, leaseMs: 120_000 });
  expect(leases.map((l) => l.event.id).sort()).toEqual(['o-0', 'o-1', 'o-2', 'o-3']);
  const byId = new Map(leases.map((l) => [l.event.id, l]));
  await writer.ack(byId.get('o-0')!);
  await writer.nack(byId.get('o-1')!, { delayMs: 60_000, reason: 'later' });
  await writer.reject(byId.get('o-2')!, { reason: 'poison' });
  return {
    liveLease: byId.get('o-3')!,
    billingLag: await writer.lag('orders', 'billing'),
    auditLag: await writer.lag('orders', 'audit'),
    dead: await writer.deadLetters('orders', 'billing'),
  };
}

/** Take the tables back to version `up.from` and check the version records say so. */
export async function downToFrom(up: SchemaUpgrade, d: UpgradeDialect): Promise<void> {
  await d.downTo(up.from);
  expect((await d.sql(`SELECT max(version) AS v FROM :s.rheo_schema_version`)).map((r) => Number(r.v))).toEqual([up.from]);
}

/** Install 'none' refuses the old tables, naming both versions. */
export async function expectRefusedWithoutInstall(up: SchemaUpgrade, d: UpgradeDialect, clock: ManualClock): Promise<void> {
  const none = new Rheo(d.open(clock, 'none'));
  await expect(none.init()).rejects.toMatchObject({
    code: 'failed',
    message: expect.stringContaining(
      `the rheo tables are at schema version ${up.from}, and this nestjs-rheo needs version ${d.later[d.later.length - 1]} with install: 'none'`,
    ),
  });
  await none.close();
}

/**
 * Install 'auto' applies exactly the later versions and records them after the
 * old ones. The spec makes `rheo` on `backend` first, so it closes it whatever
 * this finds.
 */
export async function expectUpgraded(up: SchemaUpgrade, d: UpgradeDialect, backend: Backend, rheo: Rheo): Promise<void> {
  await rheo.init();
  expect(backend.describe?.().installed).toEqual(d.later);
  expect((await d.sql(`SELECT version FROM :s.rheo_schema_version ORDER BY version`)).map((r) => Number(r.version))).toEqual([
    ...Array.from({ length: up.from }, (_, i) => i + 1),
    ...d.later,
  ]);
}
