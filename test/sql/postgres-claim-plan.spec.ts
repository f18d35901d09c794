import { Client } from 'pg';
import { ManualClock, postgresBackend, Rheo } from '../../lib';
import { pgPlans } from '../../lib/backends/postgres/plans';
import { pgTables } from '../../lib/backends/sql/names';
import { dropSchema, freshSchema, PG_URL } from './pg-helpers';

// What a claim statement reads of rheo_events when the table's statistics predate
// its rows (a stream appended since the last ANALYZE): a claim of 10 reads the
// events it leases (and, keyed, the events it scans for their keys), never every
// event of the stream. Each plan is run under EXPLAIN ANALYZE in a transaction
// that is rolled back, so the store is left as it was.

const schema = freshSchema('claimplan');
const clock = new ManualClock(Date.UTC(2026, 0, 1));
const EVENTS = 5_000;
const LIMIT = 10;
let rheo: Rheo;
let pg: Client;

type PlanNode = { 'Relation Name'?: string; 'Actual Rows': number; 'Actual Loops': number; Plans?: PlanNode[] };

/** Rows the plan read from rheo_events, over every node and loop. */
function eventRowsRead(node: PlanNode): number {
  const own = node['Relation Name'] === 'rheo_events' ? node['Actual Rows'] * node['Actual Loops'] : 0;
  return own + (node.Plans ?? []).reduce((sum, child) => sum + eventRowsRead(child), 0);
}

async function rowsReadBy(sql: string, params: unknown[]): Promise<number> {
  await pg.query('BEGIN');
  try {
    // The first executions of a prepared statement are planned for their parameters, as the backend's are.
    await pg.query(`PREPARE claim AS ${sql}`);
    const literal = params.map((p) => pg.escapeLiteral(Array.isArray(p) ? `{${p.join(',')}}` : String(p))).join(', ');
    const { rows } = await pg.query(`EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE claim(${literal})`);
    const plan = (rows[0]['QUERY PLAN'] as Array<{ Plan: PlanNode }>)[0].Plan;
    return eventRowsRead(plan);
  } finally {
    await pg.query('ROLLBACK');
    await pg.query('DEALLOCATE claim');
  }
}

beforeAll(async () => {
  rheo = new Rheo(postgresBackend({ url: PG_URL, schema, clock }));
  await rheo.init();
  pg = new Client({ connectionString: PG_URL });
  await pg.connect();
  await rheo.createStream('s', { partitions: 4 });
  await rheo.createGroup('s', 'plain');
  await rheo.createGroup('s', 'keyed', { ordering: 'key' });
  // Statistics of an empty table, kept while the stream fills.
  await pg.query(`ALTER TABLE "${schema}".rheo_events SET (autovacuum_enabled = off)`);
  await pg.query(`ANALYZE "${schema}".rheo_events`);
  for (let i = 0; i < EVENTS; i += 1000)
    await rheo.appendBatch(
      's',
      Array.from({ length: 1000 }, (_, j) => ({ key: `k${(i + j) % 1000}`, payload: { n: i + j } })),
    );
});

afterAll(async () => {
  await pg?.end();
  await rheo?.close();
  await dropSchema(schema);
});

describe('postgres: a claim reads the events it takes, whatever the statistics say', () => {
  const plans = pgPlans(pgTables(schema));
  const base = (group: string) => ['s', group, [0, 1, 2, 3], clock.now(), LIMIT, 0, 4, 'c1', 30_000, 'lease'];

  it('a claim of a plain group', async () => {
    const read = await rowsReadBy(plans.delivery.fetchCapped, base('plain'));
    expect(read).toBeLessThanOrEqual(LIMIT);
  });

  it('a claim of a group with ordering: key (its scan reads each event once, for its key)', async () => {
    const read = await rowsReadBy(plans.flow.claim, [...base('keyed'), 1, 16]);
    // At most share + 16 events scanned per partition, and the 10 leased.
    expect(read).toBeLessThanOrEqual(4 * (Math.ceil(LIMIT / 4) + 16) + LIMIT);
  });
});
