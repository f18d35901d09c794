import { DataSource } from 'typeorm';
import { Rheo, RheoError, postgresBackend, rheoMigrations, typeormBackend } from '../../lib';
import { PG_SCHEMA } from '../../lib/backends/postgres/schema';
import { pgTables } from '../../lib/backends/sql/names';
import { dropSchema, freshSchema, pgDataSource, PG_URL } from './pg-helpers';

// Schema versions on PostgreSQL: what is recorded, what 'auto' upgrades, what
// 'none' and a newer database refuse, and the TypeORM migrations per version.

let admin: DataSource;
const schemas: string[] = [];
/** Every version this release records, the latest, and one a newer release would record. */
const ALL = PG_SCHEMA.map((v) => v.version);
const LATEST = ALL[ALL.length - 1];
const FUTURE = LATEST + 1;

beforeAll(async () => {
  admin = await pgDataSource(2);
});
afterAll(async () => {
  await admin.destroy();
  for (const s of schemas) await dropSchema(s);
});

function schema(label: string): string {
  const s = freshSchema(label);
  schemas.push(s);
  return s;
}

/** A schema as version 1 left it: its frozen DDL, no version record, one dead letter in rheo_deliveries. */
async function v1Schema(label: string): Promise<string> {
  const s = schema(label);
  for (const sql of PG_SCHEMA[0].up(pgTables(s), s)) await admin.query(sql);
  const q = (sql: string) => admin.query(sql.replace(/:s\./g, `"${s}".`));
  await q(`INSERT INTO :s.rheo_streams VALUES ('x', 1, 0)`);
  await q(`INSERT INTO :s.rheo_partitions VALUES ('x', 0, 2)`);
  await q(`INSERT INTO :s.rheo_events VALUES ('x', 0, 1, 'e1', 10, NULL, NULL, '{}', '1'), ('x', 0, 2, 'e2', 20, NULL, NULL, '{}', '2')`);
  await q(`INSERT INTO :s.rheo_groups VALUES ('x', 'g', 5, 1000, 2, 60000, 'none', 0)`);
  await q(`INSERT INTO :s.rheo_group_partitions VALUES ('x', 'g', 0, 3)`);
  await q(`INSERT INTO :s.rheo_deliveries VALUES ('x', 'g', 0, 1, 'dead', 1, NULL, 'c', 5, 30005, 'poison', 7)`);
  return s;
}

async function versions(s: string): Promise<number[]> {
  return (await admin.query(`SELECT version FROM "${s}".rheo_schema_version ORDER BY version`)).map((r: { version: number }) => r.version);
}

async function refusal(p: Promise<unknown>): Promise<RheoError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(RheoError);
  return err as RheoError;
}

describe('postgres schema versions', () => {
  it('records every version of a fresh install, and starting again changes nothing', async () => {
    const s = schema('fresh');
    const first = postgresBackend({ url: PG_URL, schema: s, poolSize: 1 });
    await first.init();
    await first.close();
    const applied = await admin.query(`SELECT version, name, applied_at FROM "${s}".rheo_schema_version ORDER BY version`);
    expect(applied.map((r: { version: number; name: string }) => [r.version, r.name])).toEqual([
      [1, 'initial'],
      [2, 'flat-cost'],
      [3, 'delayed-events'],
      [4, 'pause-groups'],
      [5, 'skip-reschedule-cancel'],
    ]);
    const again = postgresBackend({ url: PG_URL, schema: s, poolSize: 1 });
    await again.init();
    await again.close();
    expect(await admin.query(`SELECT version, name, applied_at FROM "${s}".rheo_schema_version ORDER BY version`)).toEqual(applied);
  });

  it("install 'auto' upgrades a version-1 schema from several processes at once: each version applied and recorded once", async () => {
    const s = await v1Schema('race');
    const sources = await Promise.all(Array.from({ length: 4 }, () => pgDataSource(1)));
    try {
      await Promise.all(sources.map((d) => typeormBackend({ dataSource: d, schema: s }).init()));
      expect(await versions(s)).toEqual(ALL);
      expect(await admin.query(`SELECT event_id, reason, attempt, dead_at FROM "${s}".rheo_dead_letters`)).toEqual([
        { event_id: 'e1', reason: 'poison', attempt: 1, dead_at: '7' },
      ]);
      expect(await admin.query(`SELECT count(*)::int AS n FROM "${s}".rheo_deliveries`)).toEqual([{ n: 0 }]);
      const r = new Rheo(typeormBackend({ dataSource: sources[0], schema: s }));
      expect((await r.deadLetters('x', 'g')).map((d) => [d.eventId, d.reason])).toEqual([['e1', 'poison']]);
      expect((await r.lag('x', 'g')).lag).toBe(0);
      await r.close();
    } finally {
      await Promise.all(sources.map((d) => d.destroy()));
    }
  });

  it("install 'none' refuses a version-1 schema clearly, and changes nothing", async () => {
    const s = await v1Schema('none_old');
    const err = await refusal(new Rheo(postgresBackend({ url: PG_URL, schema: s, install: 'none', poolSize: 1 })).init());
    expect(err.code).toBe('failed');
    expect(err.message).toBe(
      `the rheo tables are at schema version 1, and this nestjs-rheo needs version ${LATEST} with install: 'none': ` +
        "run rheoMigrations() (or start once with install: 'auto')",
    );
    expect(await admin.query(`SELECT to_regclass($1) AS t`, [`"${s}".rheo_schema_version`])).toEqual([{ t: null }]);
    expect(await admin.query(`SELECT count(*)::int AS n FROM "${s}".rheo_deliveries WHERE state = 'dead'`)).toEqual([{ n: 1 }]);
  });

  it('refuses a schema a newer release made, whether installing or not, and touches nothing', async () => {
    const s = schema('newer');
    const current = postgresBackend({ url: PG_URL, schema: s, poolSize: 1 });
    await current.init();
    await current.close();
    await admin.query(`INSERT INTO "${s}".rheo_schema_version VALUES (${FUTURE}, 'from-the-future', 0)`);
    for (const install of ['auto', 'none'] as const) {
      const err = await refusal(new Rheo(postgresBackend({ url: PG_URL, schema: s, install, poolSize: 1 })).createStream('y'));
      expect(err.code).toBe('failed');
      expect(err.message).toBe(
        `the rheo tables are at schema version ${FUTURE}, which is newer than this nestjs-rheo knows (${LATEST}): upgrade nestjs-rheo`,
      );
    }
    expect(await versions(s)).toEqual([...ALL, FUTURE]);
    expect(await admin.query(`SELECT count(*)::int AS n FROM "${s}".rheo_streams`)).toEqual([{ n: 0 }]);
  });

  it("a host that ran version 1's migration before versions were recorded gets versions 2 to 4 from rheoMigrations", async () => {
    const s = schema('mig_old');
    const table = `rheo_test_migrations_${s}`;
    const make = (migrations: ReturnType<typeof rheoMigrations>) =>
      new DataSource({ type: 'postgres', url: PG_URL, poolSize: 1, migrations, migrationsTableName: table });
    const [v1Migration] = rheoMigrations({ schema: s });
    const old = make([v1Migration]);
    await old.initialize();
    try {
      await old.runMigrations();
      // What the old class left: the tables, and no record of versions.
      await old.query(`DROP TABLE "${s}".rheo_schema_version`);
    } finally {
      await old.destroy();
    }
    const d = make(rheoMigrations({ schema: s }));
    await d.initialize();
    try {
      // Every version after 1, in version order (TypeORM orders them by the timestamp that ends the name).
      expect((await d.runMigrations()).map((m) => m.name)).toEqual([
        'RheoFlatCost1796083200000',
        'RheoDelayedEvents1798761600000',
        'RheoPauseGroups1801440000000',
        'RheoSkipRescheduleCancel1803859200000',
        // Every version either dialect has: a version the other dialect has first is a no-op here.
        'RheoFlowControl1806537600000',
      ]);
      expect(await versions(s)).toEqual(ALL);
      const r = new Rheo(typeormBackend({ dataSource: d, schema: s, install: 'none' }));
      await r.createStream('m');
      expect((await r.append('m', { payload: 1 })).sequence).toBe(1);
      await r.close();
    } finally {
      await d.query(`DROP TABLE IF EXISTS "${table}"`);
      await d.destroy();
    }
  });

  it("rheoMigrations run on tables install 'auto' made: a host can switch to migrations", async () => {
    const s = schema('mig_switch');
    const auto = new Rheo(postgresBackend({ url: PG_URL, schema: s, poolSize: 1 }));
    await auto.createStream('kept');
    await auto.append('kept', { payload: 'still here' });
    await auto.close();
    const table = `rheo_test_migrations_${s}`;
    const d = new DataSource({
      type: 'postgres',
      url: PG_URL,
      poolSize: 1,
      migrations: rheoMigrations({ schema: s }),
      migrationsTableName: table,
    });
    await d.initialize();
    try {
      // Every class runs (one per version either dialect has), recording the versions this dialect has.
      expect(await d.runMigrations()).toHaveLength(rheoMigrations({ schema: s }).length);
      expect(await versions(s)).toEqual(ALL);
      const r = new Rheo(typeormBackend({ dataSource: d, schema: s, install: 'none' }));
      expect((await r.read('kept')).map((e) => e.payload)).toEqual(['still here']);
      await r.close();
    } finally {
      await d.query(`DROP TABLE IF EXISTS "${table}"`);
      await d.destroy();
    }
  });
});
