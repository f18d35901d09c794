// countDeadLetters on the SQL backends beyond the conformance suite: a health
// check asks it on every probe, so with a time it must read one range of the age
// index (stream, group_name, dead_at), never the dead letters themselves.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { ManualClock, Rheo, postgresBackend, sqliteBackend } from '../../lib';
import { recoveryPlans as pgPlans } from '../../lib/backends/postgres/plans/recovery';
import { pgTables, sqliteTables } from '../../lib/backends/sql/names';
import { sqlitePlans } from '../../lib/backends/sqlite/plans';
import { dropSchema, freshSchema, pgDataSource, PG_URL } from './pg-helpers';

const T = Date.UTC(2026, 0, 1);
const DEAD = 20_000;

/** `DEAD` dead letters of group g on stream s, one per ms from T, and as many of another group: written directly. */
function fill(table: string, seriesFrom: string): string {
  return `INSERT INTO ${table} (stream, group_name, partition, sequence, event_id, attempt, reason, dead_at)
    SELECT 's', grp, 0, i, 'e' || i, 1, 'r', ${T} + i FROM ${seriesFrom}`;
}

describe('countDeadLetters plans', () => {
  it('postgres: an index-only scan of the age index, and exact counts', async () => {
    const schema = freshSchema('dlcount');
    const clock = new ManualClock(T + DEAD);
    const rheo = new Rheo(postgresBackend({ url: PG_URL, schema, clock, poolSize: 1 }));
    const admin: DataSource = await pgDataSource(1);
    try {
      await rheo.createStream('s');
      await rheo.createGroup('s', 'g');
      await rheo.createGroup('s', 'h');
      const t = pgTables(schema);
      await admin.query(fill(t.deadLetters, `generate_series(1, ${DEAD}) AS i, (VALUES ('g'), ('h')) AS x(grp)`));
      await admin.query(`VACUUM ANALYZE ${t.deadLetters}`);
      const sql = pgPlans(t).deadCountSince;
      const [{ 'QUERY PLAN': plan }] = await admin.query(`EXPLAIN (FORMAT JSON) ${sql}`, ['s', 'g', T + DEAD - 100]);
      const nodes: Array<{ 'Node Type': string; 'Index Name'?: string }> = [];
      const walk = (n: { 'Node Type': string; 'Index Name'?: string; Plans?: unknown[] }) => {
        nodes.push(n);
        for (const c of n.Plans ?? []) walk(c as typeof n);
      };
      walk(plan[0].Plan);
      expect(nodes.map((n) => n['Node Type'])).toEqual(['Aggregate', 'Index Only Scan']);
      expect(nodes[1]['Index Name']).toBe('rheo_dead_letters_age');
      expect(await rheo.countDeadLetters('s', 'g')).toBe(DEAD);
      expect(await rheo.countDeadLetters('s', 'g', { since: new Date(T + DEAD - 99) })).toBe(100);
    } finally {
      await admin.destroy();
      await rheo.close();
      await dropSchema(schema);
    }
  });

  it('sqlite: a covering-index search of the age index, and exact counts', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rheo-dlcount-'));
    const database = join(dir, 'd.db');
    const rheo = new Rheo(sqliteBackend({ database, clock: new ManualClock(T + DEAD) }));
    const raw = new DataSource({ type: 'better-sqlite3', database });
    try {
      await rheo.createStream('s');
      await rheo.createGroup('s', 'g');
      await rheo.createGroup('s', 'h');
      await raw.initialize();
      const t = sqliteTables();
      const series = `(WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${DEAD}) SELECT i FROM n), (SELECT 'g' AS grp UNION ALL SELECT 'h')`;
      await raw.query(fill(t.deadLetters, series));
      await raw.query('ANALYZE');
      const plan: Array<{ detail: string }> = await raw.query(`EXPLAIN QUERY PLAN ${sqlitePlans(t).deadCountSince}`, ['s', 'g', T]);
      expect(plan.map((r) => r.detail)).toEqual([
        'SEARCH rheo_dead_letters USING COVERING INDEX rheo_dead_letters_age (stream=? AND group_name=? AND dead_at>?)',
      ]);
      expect(await rheo.countDeadLetters('s', 'h')).toBe(DEAD);
      expect(await rheo.countDeadLetters('s', 'h', { since: new Date(T + DEAD - 99) })).toBe(100);
    } finally {
      if (raw.isInitialized) await raw.destroy();
      await rheo.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
