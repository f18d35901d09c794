// A claim racing a cancelDelayed of the event it reaches (docs/adr/048-skip-reschedule-cancel.md):
// the claim statement's snapshot is taken before it waits for the event's row,
// which the cancel holds FOR UPDATE until it commits. The claim reads a delayed
// event with a locking read (FOR KEY SHARE), which returns the newest version of
// the row: it sees the cancel that committed while it waited, and passes the event
// instead of leasing it.
import { Client } from 'pg';
import { ManualClock, postgresBackend, Rheo } from '../../lib';
import { commitOnceWaitedFor, dropSchema, freshSchema, PG_URL } from './pg-helpers';

const schema = freshSchema('cancel_race');

describe('PostgreSQL claim racing a cancelDelayed', () => {
  let rheo: Rheo;
  let other: Client;
  const clock = new ManualClock();

  beforeAll(async () => {
    rheo = new Rheo(postgresBackend({ url: PG_URL, schema, clock }));
    other = new Client({ connectionString: PG_URL });
    await other.connect();
  });

  afterAll(async () => {
    await other.end();
    await rheo.close();
    await dropSchema(schema);
  });

  it.each(['none', 'partition'] as const)('a claim (ordering %s) that waited for the cancel does not lease the event', async (ordering) => {
    const stream = `race-${ordering}`;
    await rheo.createStream(stream);
    await rheo.createGroup(stream, 'g', { ordering });
    const reminder = await rheo.append(stream, { payload: 'remind', delayMs: 1000 });
    await rheo.append(stream, { payload: 'after' });
    clock.advance(1000); // due: an unguarded claim would lease it now
    // The cancel, under way: the event's row held FOR UPDATE, its cancelled_at written, not yet committed.
    await other.query('BEGIN');
    await other.query(`SELECT 1 FROM "${schema}".rheo_events WHERE stream = $1 AND id = $2 FOR UPDATE`, [stream, reminder.id]);
    await other.query(`UPDATE "${schema}".rheo_events SET cancelled_at = $3 WHERE stream = $1 AND id = $2`, [
      stream,
      reminder.id,
      clock.now(),
    ]);
    const claim = rheo.fetch(stream, 'g', { limit: 10, leaseMs: 60_000 });
    await commitOnceWaitedFor(other, 'the claim never waited for the event row');
    const leases = await claim;
    expect(leases.map((l) => l.event.id)).not.toContain(reminder.id);
    expect(leases.map((l) => l.event.sequence)).toEqual([2]);
    await rheo.ack(leases[0]);
    expect((await rheo.lag(stream, 'g')).lag).toBe(0);
  });
});
