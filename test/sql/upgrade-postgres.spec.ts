import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { Lease, ManualClock, postgresBackend, Rheo } from '../../lib';
import { runConformance } from '../../lib/backend';
import { PG_SCHEMA, PG_SCHEMA_VERSION } from '../../lib/backends/postgres/schema';
import { pgTables } from '../../lib/backends/sql/names';
import { dropSchema, freshSchema, pgDataSource, PG_URL } from './pg-helpers';

// A database written by the real version-1 code (test/sql/fixtures/make-postgres-v1.ts:
// schema version 1's frozen DDL, then the rows version 1 wrote, dumped by pg_dump),
// opened by this release with install 'auto': it must upgrade in place, keep every
// old answer, pass the whole conformance suite on the upgraded tables, and still
// hold the old data afterwards.

const schema = freshSchema('upgrade');
const fixtures = join(__dirname, 'fixtures');
const v1 = JSON.parse(readFileSync(join(fixtures, 'postgres-v1.json'), 'utf8'));
const clock = new ManualClock(v1.time + 1000);
/** Dates and all, as they travel through JSON: how the fixture recorded version 1's answers. */
const plain = (x: unknown) => JSON.parse(JSON.stringify(x));
const revive = (l: Lease & Record<string, unknown>): Lease => ({
  ...l,
  leasedAt: new Date(l.leasedAt),
  expiresAt: new Date(l.expiresAt),
  event: { ...l.event, timestamp: new Date(l.event.timestamp) },
});

let admin: DataSource;
let rheo: Rheo;

beforeAll(async () => {
  admin = await pgDataSource(1);
  for (const sql of PG_SCHEMA[0].up(pgTables(schema), schema)) await admin.query(sql);
  const inserts = readFileSync(join(fixtures, 'postgres-v1.sql'), 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('INSERT INTO '));
  for (const line of inserts) await admin.query(line.replace('INSERT INTO :schema.', `INSERT INTO "${schema}".`));
  rheo = new Rheo(postgresBackend({ url: PG_URL, schema, clock, poolSize: 2 }));
  await rheo.init();
});

afterAll(async () => {
  await rheo?.close();
  await admin?.destroy();
  await dropSchema(schema);
});

async function deadLetterSummary() {
  return (await rheo.deadLetters('orders', 'billing')).map((d) => [d.eventId, d.partition, d.sequence, d.reason, d.attempt, d.event?.id]);
}

describe('postgres: upgrade from schema version 1 (written by the version-1 code)', () => {
  it('records every version and moves the dead letters out of rheo_deliveries', async () => {
    expect(await admin.query(`SELECT version, name FROM "${schema}".rheo_schema_version ORDER BY version`)).toEqual([
      { version: 1, name: 'initial' },
      { version: 2, name: 'flat-cost' },
      { version: 3, name: 'delayed-events' },
      { version: 4, name: 'pause-groups' },
      { version: 5, name: 'skip-reschedule-cancel' },
      { version: 6, name: 'flow-control' },
    ]);
    expect(await admin.query(`SELECT count(*)::int AS n FROM "${schema}".rheo_deliveries WHERE state = 'dead'`)).toEqual([{ n: 0 }]);
    expect(await admin.query(`SELECT event_id, reason FROM "${schema}".rheo_dead_letters ORDER BY partition, sequence`)).toEqual([
      { event_id: 'order-2', reason: 'bad address' },
      { event_id: 'order-3', reason: 'flaky 2' },
    ]);
  });

  it('reads the old events as version 1 did', async () => {
    expect(plain(await rheo.query({ stream: 'orders', limit: 100 }))).toEqual(v1.events.orders);
    expect(plain(await rheo.read('audit'))).toEqual(v1.events.audit);
    // The new query path (index order, text pre-filter) on old rows, \u0000 included.
    const [nul] = await rheo.query({
      stream: 'orders',
      where: { payload: { note: v1.events.orders.find((e: { id: string }) => e.id === 'order-2').payload.note } },
    });
    expect(nul.id).toBe('order-2');
    expect((await rheo.query({ stream: 'orders', where: { metadata: { correlationId: 'c-4' } } })).map((e) => e.id)).toEqual(['order-4']);
  });

  it('answers lag, dead letters and group figures as version 1 did', async () => {
    expect(plain(await rheo.lag('orders', 'billing'))).toEqual(v1.lag.billing);
    expect(plain(await rheo.lag('orders', 'shipping'))).toEqual(v1.lag.shipping);
    expect(plain(await rheo.deadLetters('orders', 'billing'))).toEqual(v1.deadLetters);
    const info = await rheo.groupInfo('orders', 'billing');
    expect([info.deadLetters, info.inflight, plain(info.config)]).toEqual([
      v1.groupInfo.billing.deadLetters,
      v1.groupInfo.billing.inflight,
      // Version 1 knew no flow limits: the group has none.
      { ...v1.groupInfo.billing.config, keyConcurrency: null, groupConcurrency: null, rateLimit: null },
    ]);
    // Time lookups on old rows, whose ts_max the upgrade derived. Partition 1 ends with order-11
    // stamped 00:00:30, then order-12 stamped 00:00:11: the first event at or after 00:00:11 is
    // order-11 (sequence 8), which only the running maximum finds with one index seek.
    await rheo.createGroup('orders', 'late', { start: { at: new Date(Date.UTC(2026, 0, 1, 0, 0, 5)) } });
    expect((await rheo.lag('orders', 'late')).partitions.map((p) => p.frontier)).toEqual([1, 3]);
    await rheo.createGroup('orders', 'later', { start: { at: new Date(Date.UTC(2026, 0, 1, 0, 0, 11)) } });
    expect((await rheo.lag('orders', 'later')).partitions.map((p) => p.frontier)).toEqual([3, 7]);
  });

  it('settles the old leases by their lease ids; the waiting retry and the dead letters carry on', async () => {
    await rheo.ack(revive(v1.liveLease));
    for (const l of v1.shippingLeases) await rheo.ack(revive(l));
    // order-5 waits for its retry (10 minutes after its nack), then comes back as attempt 2.
    expect(await rheo.fetch('orders', 'billing')).toEqual([]);
    clock.advance(600_000);
    const [retry] = await rheo.fetch('orders', 'billing');
    expect([retry.event.id, retry.attempt]).toEqual(['order-5', 2]);
    await rheo.ack(retry);
    expect((await rheo.lag('orders', 'billing')).lag).toBe(0);
    // A redriven dead letter is delivered afresh, and dead-lettered again.
    expect(await rheo.redrive('orders', 'billing', { eventIds: ['order-2'] })).toBe(1);
    const [redriven] = await rheo.fetch('orders', 'billing');
    expect([redriven.event.id, redriven.attempt]).toEqual(['order-2', 1]);
    await rheo.reject(redriven, { reason: 'still bad' });
    expect(await deadLetterSummary()).toEqual([
      ['order-2', 0, 1, 'still bad', 1, 'order-2'],
      ['order-3', 1, 2, 'flaky 2', 2, 'order-3'],
    ]);
  });
});

runConformance({
  name: 'postgres, on tables upgraded from version 1',
  create: async (c) => postgresBackend({ url: PG_URL, schema, clock: c, poolSize: 4 }),
  // The schema holds the old data: it is dropped once the re-check below has run.
  unreachable: () => postgresBackend({ url: 'postgres://postgres@127.0.0.1:1/test', schema }),
});

describe('postgres: the version-1 data after the conformance suite ran on the upgraded tables', () => {
  it('is intact', async () => {
    expect(plain(await rheo.query({ stream: 'orders', limit: 100 }))).toEqual(v1.events.orders);
    expect(plain(await rheo.read('audit'))).toEqual(v1.events.audit);
    expect(await deadLetterSummary()).toEqual([
      ['order-2', 0, 1, 'still bad', 1, 'order-2'],
      ['order-3', 1, 2, 'flaky 2', 2, 'order-3'],
    ]);
    expect((await rheo.lag('orders', 'billing')).lag).toBe(0);
    expect((await rheo.listGroups('orders')).map((g) => g.group)).toEqual(['billing', 'late', 'later', 'shipping']);
    expect(await admin.query(`SELECT max(version) AS v FROM "${schema}".rheo_schema_version`)).toEqual([{ v: PG_SCHEMA_VERSION }]);
  });
});
