// A settle, release or renewal that meets a concurrent change of the same lease's
// delivery row (another renewal of it, committing while this statement waits for
// the row lock) must still do what it reports. The statements lock the row with
// FOR UPDATE, which under READ COMMITTED hands back the row's newest version; a
// change addressed to that version by ctid then found nothing in the statement's
// own snapshot, and the operation was reported done while the row stayed as it
// was (found by the transactional-consumer work, ADR 030).
import { Client } from 'pg';
import { postgresBackend, Rheo } from '../../lib';
import type { Lease } from '../../lib';
import { commitOnceWaitedFor, dropSchema, freshSchema, PG_URL } from './pg-helpers';

const schema = freshSchema('fence_race');

describe('PostgreSQL fenced statements racing a renewal of the same lease', () => {
  let rheo: Rheo;
  let other: Client;
  let seq = 0;

  beforeAll(async () => {
    rheo = new Rheo(postgresBackend({ url: PG_URL, schema }));
    other = new Client({ connectionString: PG_URL });
    await other.connect();
  });

  afterAll(async () => {
    await other.end();
    await rheo.close();
    await dropSchema(schema);
  });

  async function leased(): Promise<Lease> {
    const stream = `race${++seq}`;
    await rheo.createStream(stream);
    await rheo.createGroup(stream, 'g');
    await rheo.append(stream, { payload: { n: seq } });
    const [lease] = await rheo.fetch(stream, 'g', { leaseMs: 60_000 });
    return lease;
  }

  /** The delivery row of `lease`, or undefined when it is gone. */
  async function row(lease: Lease): Promise<{ state: string; lease_id: string | null; due_at: string } | undefined> {
    const { rows } = await other.query(
      `SELECT state, lease_id, due_at::text AS due_at FROM "${schema}".rheo_deliveries
       WHERE stream = $1 AND group_name = $2 AND sequence = $3`,
      [lease.stream, lease.group, lease.event.sequence],
    );
    return rows[0];
  }

  /**
   * Run `op` while another transaction holds the lease's delivery row with an
   * uncommitted renewal (due_at moved by `bumpMs`), commit that transaction once
   * `op` is waiting for the row lock, and return what `op` answered.
   */
  async function racingARenewal<T>(lease: Lease, bumpMs: number, op: () => Promise<T>): Promise<T> {
    await other.query('BEGIN');
    await other.query(`UPDATE "${schema}".rheo_deliveries SET due_at = due_at + $2 WHERE lease_id = $1`, [lease.leaseId, bumpMs]);
    const answer = op();
    // Committed only once the operation's statement is blocked by this transaction (on the row).
    await commitOnceWaitedFor(other, 'the operation never waited for the row lock');
    return answer;
  }

  it('an ack reported done has deleted the delivery', async () => {
    const lease = await leased();
    await racingARenewal(lease, 1000, () => rheo.ack(lease));
    expect(await row(lease)).toBeUndefined();
  });

  it('a nack reported done has made the event available again', async () => {
    const lease = await leased();
    await racingARenewal(lease, 1000, () => rheo.nack(lease, { delayMs: 0 }));
    expect(await row(lease)).toMatchObject({ state: 'available', lease_id: null });
  });

  it('a reject reported done has dead-lettered the event', async () => {
    const lease = await leased();
    await racingARenewal(lease, 1000, () => rheo.reject(lease, { reason: 'bad' }));
    expect(await row(lease)).toBeUndefined();
    expect(await rheo.deadLetters(lease.stream, lease.group)).toEqual([
      expect.objectContaining({ eventId: lease.event.id, reason: 'bad' }),
    ]);
  });

  it('a release reported done has given the event back', async () => {
    const lease = await leased();
    const [released] = await racingARenewal(lease, 1000, () => rheo.releaseMany([lease]));
    expect(released.ok).toBe(true);
    expect(await row(lease)).toMatchObject({ state: 'available', lease_id: null });
  });

  it('a renewal reported done has stored the expiry it reports', async () => {
    const lease = await leased();
    const renewed = await racingARenewal(lease, 1, () => rheo.renew(lease, { leaseMs: 120_000 }));
    const stored = await row(lease);
    expect(stored).toBeDefined();
    expect(Number(stored!.due_at)).toBe(renewed.expiresAt.getTime());
  });
});
