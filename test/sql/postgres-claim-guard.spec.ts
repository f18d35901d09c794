// The claim inserts fresh deliveries without ON CONFLICT (plans.ts, claimPlan:
// "Fresh deliveries"): no fresh event has a delivery row, by the way cursors move.
// Should one have a row all the same (a bug elsewhere, a hand-made row), the claim
// must not fail nor lose an event: it falls back to the guarded claim, which leaves
// that event to its row, claimed once the row is due, as every claim did before.
import { Client } from 'pg';
import { ManualClock, postgresBackend, Rheo } from '../../lib';
import { dropSchema, freshSchema, PG_URL } from './pg-helpers';

const schema = freshSchema('claim_guard');
const clock = new ManualClock(Date.UTC(2026, 0, 1));
let rheo: Rheo;
let admin: Client;

beforeAll(async () => {
  rheo = new Rheo(postgresBackend({ url: PG_URL, schema, clock }));
  admin = new Client({ connectionString: PG_URL });
  await admin.connect();
});

afterAll(async () => {
  await admin.end();
  await rheo.close();
  await dropSchema(schema);
});

describe('PostgreSQL claim of fresh events that already have a delivery row', () => {
  it('leases the others, leaves that one to its row, and delivers it when the row is due', async () => {
    await rheo.createStream('s');
    await rheo.createGroup('s', 'g');
    await rheo.appendBatch(
      's',
      [1, 2, 3, 4].map((n) => ({ id: `e${n}`, payload: { n } })),
    );
    // A row for sequence 2, above the cursor (1): available, due in an hour.
    const dueAt = clock.now() + 3_600_000;
    await admin.query(
      `INSERT INTO "${schema}".rheo_deliveries (stream, group_name, partition, sequence, state, attempt, due_at)
       VALUES ('s', 'g', 0, 2, 'available', 0, $1)`,
      [dueAt],
    );

    const first = await rheo.fetch('s', 'g', { limit: 3 });
    expect(first.map((l) => [l.event.sequence, l.attempt])).toEqual([
      [1, 1],
      [3, 1],
    ]);
    // The cursor passed all three chosen events; the next fetch takes the fourth.
    const second = await rheo.fetch('s', 'g', { limit: 10 });
    expect(second.map((l) => l.event.sequence)).toEqual([4]);
    await rheo.settleMany([...first, ...second].map((lease) => ({ lease, kind: 'ack' as const })));
    expect((await rheo.lag('s', 'g')).lag).toBe(3); // the frontier waits at 1, for event 2

    // Nothing more until its row is due; then it is delivered like any due delivery.
    expect(await rheo.fetch('s', 'g', { limit: 10 })).toEqual([]);
    clock.set(dueAt);
    const third = await rheo.fetch('s', 'g', { limit: 10 });
    expect(third.map((l) => [l.event.id, l.event.sequence])).toEqual([['e2', 2]]);
    await rheo.ack(third[0]);
    expect((await rheo.lag('s', 'g')).lag).toBe(0);
  });

  it('claims as usual when nothing is in the way (the fast statement)', async () => {
    await rheo.createStream('t');
    await rheo.createGroup('t', 'g');
    await rheo.appendBatch(
      't',
      Array.from({ length: 5 }, (_, n) => ({ payload: { n } })),
    );
    const leases = await rheo.fetch('t', 'g', { limit: 10 });
    expect(leases.map((l) => l.event.sequence)).toEqual([1, 2, 3, 4, 5]);
    // Every lease id distinct: one random base per claim, a position per row.
    expect(new Set(leases.map((l) => l.leaseId)).size).toBe(5);
  });
});
