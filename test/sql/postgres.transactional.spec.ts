// Transactional consumers on PostgreSQL (ADR 030): a Consumer with `transactional:
// true` commits each handler's writes with the ack of its delivery, or neither;
// and ackInTransaction's fence holds against the races that matter (a renewal in
// flight, a claim while the commit is pending, a commit refused).
import { tracingChannel } from 'node:diagnostics_channel';
import { DataSource, EntityManager, type EntitySubscriberInterface, EventSubscriber, type TransactionCommitEvent } from 'typeorm';
import { CHANNELS, Consumer, ManualClock, Rheo, RheoError, RheoRetry, typeormBackend } from '../../lib';
import type { Lease } from '../../lib';
import { ChannelRecorder } from '../support/channel-recorder';
import { dropSchema, freshSchema, PG_URL } from './pg-helpers';
import { until } from '../support/until';

const schema = freshSchema('tx');

/** Pauses the next commit on the DataSource (TypeORM awaits its subscribers) while `during` runs. */
let pauseNextCommit: (() => Promise<void>) | null = null;
/** Holds up the code after the next commit (TypeORM awaits its subscribers there too) while `after` runs. */
let pauseAfterCommit: (() => Promise<void>) | null = null;
@EventSubscriber()
class PauseCommit implements EntitySubscriberInterface {
  async beforeTransactionCommit(_event: TransactionCommitEvent): Promise<void> {
    const during = pauseNextCommit;
    pauseNextCommit = null;
    if (during) await during();
  }

  async afterTransactionCommit(_event: TransactionCommitEvent): Promise<void> {
    const after = pauseAfterCommit;
    pauseAfterCommit = null;
    if (after) await after();
  }
}

describe('postgres: transactional consumers', () => {
  const clock = new ManualClock(Date.UTC(2026, 0, 1));
  let ds: DataSource;
  let rheo: Rheo;
  let n = 0;
  const groups: Consumer[] = [];

  beforeAll(async () => {
    ds = new DataSource({ type: 'postgres', url: PG_URL, poolSize: 10, subscribers: [PauseCommit] });
    await ds.initialize();
    await ds.query(`CREATE SCHEMA "${schema}"`);
    rheo = new Rheo(typeormBackend({ dataSource: ds, schema, clock }));
    await rheo.init();
  });

  afterEach(async () => {
    await Promise.all(groups.splice(0).map((g) => g.drain(5000)));
  });

  afterAll(async () => {
    await rheo?.close();
    await ds?.destroy();
    await dropSchema(schema);
  });

  /** A stream with `events` events, its group, and an empty business table keyed by a serial id only. */
  async function setup(events: number, partitions = 2): Promise<{ stream: string; table: string }> {
    const stream = `s${++n}`;
    const table = `"${schema}"."business_${n}"`;
    await ds.query(`CREATE TABLE ${table} (id bigserial PRIMARY KEY, event_id text NOT NULL, attempt int NOT NULL)`);
    await rheo.createStream(stream, { partitions });
    await rheo.createGroup(stream, 'g');
    if (events > 0)
      await rheo.appendBatch(
        stream,
        Array.from({ length: events }, (_, i) => ({ key: `k${i}`, payload: { i } })),
      );
    return { stream, table };
  }

  async function rows(table: string): Promise<Array<{ event_id: string; attempt: number }>> {
    return ds.query(`SELECT event_id, attempt FROM ${table} ORDER BY id`);
  }

  function transactional(stream: string, handler: ConstructorParameters<typeof Consumer>[2], concurrency = 4): Consumer {
    const group = new Consumer(
      rheo,
      { stream, group: 'g', transactional: true, concurrency, maxDemand: 10, pollMs: 20, leaseMs: 10_000 },
      handler as never,
    );
    groups.push(group);
    return group;
  }

  const insert = (table: string, lease: Lease, manager: unknown) =>
    (manager as EntityManager).query(`INSERT INTO ${table} (event_id, attempt) VALUES ($1, $2)`, [lease.event.id, lease.attempt]);

  it("commits each handler's writes with its ack, hands the handler a running transaction, and publishes the acks", async () => {
    const { stream, table } = await setup(40);
    const recorder = new ChannelRecorder();
    let inTransaction = true;
    const group = transactional(stream, async (lease: Lease, delivery: { manager?: unknown }) => {
      const manager = delivery.manager as EntityManager;
      inTransaction &&= manager instanceof EntityManager && manager.queryRunner?.isTransactionActive === true;
      await insert(table, lease, manager);
    });
    try {
      group.start();
      await until('lag 0', async () => (await rheo.lag(stream, 'g')).lag === 0);
    } finally {
      recorder.close();
    }
    const stored = await rows(table);
    expect(stored).toHaveLength(40);
    expect(new Set(stored.map((r) => r.event_id)).size).toBe(40);
    expect(inTransaction).toBe(true);
    await until('every ack counted', () => group.stats.settled === 40);
    const acks = recorder.records.filter((r) => r.channel === CHANNELS.settle && r.message.outcome === 'ack');
    expect(acks).toHaveLength(40);
    expect(acks[0].message).toMatchObject({ stream, group: 'g' });
    // rheo:process reads an ack the run wrote itself as an ack.
    const processed = recorder.records.filter((r) => r.channel === CHANNELS.process && r.event === 'asyncEnd');
    expect(processed.map((r) => r.message.outcome)).toEqual(Array(40).fill('ack'));
  });

  it('rolls back the writes of an attempt that throws, and keeps those of the attempt that acks', async () => {
    const { stream, table } = await setup(10);
    const errors: unknown[] = [];
    const group = transactional(stream, async (lease: Lease, delivery: { manager?: unknown }) => {
      await insert(table, lease, delivery.manager);
      if (lease.attempt === 1) throw new RheoRetry('not yet', { delayMs: 0 });
    });
    group.on('settle_error', (e) => errors.push(e.error));
    group.start();
    await until('lag 0', async () => (await rheo.lag(stream, 'g')).lag === 0);
    const stored = await rows(table);
    expect(stored).toHaveLength(10);
    expect(stored.every((r) => r.attempt === 2)).toBe(true);
    expect(errors).toEqual([]);
  });

  it('rolls back the writes of any outcome but an ack, and settles that outcome', async () => {
    const { stream, table } = await setup(3);
    const group = transactional(stream, async (lease: Lease, delivery: { manager?: unknown }) => {
      await insert(table, lease, delivery.manager);
      return { kind: 'reject', reason: 'not for us' };
    });
    group.start();
    await until('3 dead letters', async () => (await rheo.countDeadLetters(stream, 'g')) === 3);
    expect(await rows(table)).toEqual([]);
  });

  it('rolls back the writes and acks nothing when the lease was lost while the handler ran', async () => {
    const { stream, table } = await setup(1, 1);
    let theirs: Lease | undefined;
    const settleErrors: RheoError[] = [];
    const handlerErrors: unknown[] = [];
    let settled = 0;
    const group = transactional(stream, async (lease: Lease, delivery: { manager?: unknown }) => {
      await insert(table, lease, delivery.manager);
      // The lease expires under the handler and another consumer claims the event.
      clock.advance(10_001);
      [theirs] = await rheo.fetch(stream, 'g', { limit: 1, leaseMs: 10_000, consumerId: 'other' });
    });
    group.on('settle_error', (e) => settleErrors.push(e.error));
    group.on('handler_error', (e) => handlerErrors.push(e.error));
    group.on('settled', () => settled++);
    group.start();
    await until('the ack refused', () => settleErrors.length === 1);
    expect(theirs?.attempt).toBe(2);
    expect(settleErrors[0].code).toBe('stale_lease');
    expect(handlerErrors).toEqual([]);
    expect(settled).toBe(0);
    expect(await rows(table)).toEqual([]);
    // The other consumer's lease was never touched.
    await rheo.ack(theirs!);
    expect((await rheo.lag(stream, 'g')).lag).toBe(0);
    expect(group.inflight).toBe(0);
  });

  it('leaves the lease to the transaction once the ack is written: a renewal meeting the acked row reports nothing lost', async () => {
    const { stream, table } = await setup(1, 1);
    let lost = 0;
    let settleErrors = 0;
    // Renewal answers, as the facade publishes them: the Consumer reads each one in the microtasks after.
    let renewalsAnswered = 0;
    const renewChannel = tracingChannel('rheo:renew');
    const onRenew = { asyncEnd: () => renewalsAnswered++, start() {}, end() {}, asyncStart() {}, error() {} };
    renewChannel.subscribe(onRenew);
    const group = new Consumer(
      rheo,
      { stream, group: 'g', transactional: true, pollMs: 20, leaseMs: 400 },
      async (lease: Lease, delivery: { manager?: unknown }) => {
        await insert(table, lease, delivery.manager);
        // Between the ack and the commit, a renewal round of this very lease blocks on the acked row; it goes on once we commit.
        let answeredBefore = 0;
        pauseNextCommit = async () => {
          await until('a renewal waiting for the acked row', async () => {
            const [w] = await ds.query(
              `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%renewed AS%' AND query LIKE '%${schema}%'`,
            );
            return w.n === 1;
          });
          answeredBefore = renewalsAnswered;
        };
        // The worst order: the Consumer reads that renewal's answer (the row is gone) before this delivery's end.
        pauseAfterCommit = async () => {
          await until('the renewal answered', () => renewalsAnswered > answeredBefore);
          await new Promise((r) => setImmediate(r));
        };
      },
    );
    groups.push(group);
    group.on('lease_lost', () => lost++);
    group.on('settle_error', () => settleErrors++);
    try {
      group.start();
      await until('the delivery ended', () => (group.stats.settled > 0 || lost > 0) && group.inflight === 0);
    } finally {
      renewChannel.unsubscribe(onRenew);
    }
    expect(group.stats.settled).toBe(1);
    expect(lost).toBe(0);
    expect(settleErrors).toBe(0);
    expect(await rows(table)).toHaveLength(1);
    expect((await rheo.lag(stream, 'g')).lag).toBe(0);
  });

  it('acks a lease whose renewal commits while the ack waits for its row lock (the renewed row is the one deleted)', async () => {
    const { stream, table } = await setup(1, 1);
    const [lease] = await rheo.fetch(stream, 'g', { limit: 1, leaseMs: 10_000 });
    // A renewal of the same lease in flight: the delivery row updated, not yet committed.
    const renewal = ds.createQueryRunner();
    await renewal.connect();
    await renewal.startTransaction();
    try {
      await renewal.query(`UPDATE "${schema}".rheo_deliveries SET due_at = due_at + 5000 WHERE lease_id = $1`, [lease.leaseId]);
      const acking = rheo.backend.ackInTransaction!(lease, async (manager) => {
        await insert(table, lease, manager);
        return true;
      });
      await until('the ack waiting for the row lock', async () => {
        const [w] = await ds.query(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%WITH acked AS%' AND query LIKE '%${schema}%'`,
        );
        return w.n === 1;
      });
      await renewal.commitTransaction();
      expect(await acking).toEqual({ kind: 'committed' });
    } finally {
      if (renewal.isTransactionActive) await renewal.rollbackTransaction();
      await renewal.release();
    }
    expect(await ds.query(`SELECT 1 FROM "${schema}".rheo_deliveries WHERE lease_id = $1`, [lease.leaseId])).toEqual([]);
    expect(await rows(table)).toHaveLength(1);
    expect((await rheo.lag(stream, 'g')).lag).toBe(0);
  });

  it('keeps the delivery locked from the fence to the commit: a claim of the expired lease meanwhile finds nothing', async () => {
    const { stream, table } = await setup(1, 1);
    const [lease] = await rheo.fetch(stream, 'g', { limit: 1, leaseMs: 10_000 });
    let claimedMeanwhile: Lease[] | undefined;
    const result = await rheo.backend.ackInTransaction!(lease, async (manager) => {
      await insert(table, lease, manager);
      // Runs after the ack statement, before COMMIT: the lease has expired by now.
      pauseNextCommit = async () => {
        clock.advance(10_001);
        claimedMeanwhile = await rheo.fetch(stream, 'g', { limit: 1, leaseMs: 10_000, consumerId: 'other' });
      };
      return true;
    });
    expect(result).toEqual({ kind: 'committed' });
    expect(claimedMeanwhile).toEqual([]);
    expect(await rheo.fetch(stream, 'g', { limit: 1, leaseMs: 10_000, consumerId: 'other' })).toEqual([]);
    expect(await rows(table)).toHaveLength(1);
    expect((await rheo.lag(stream, 'g')).lag).toBe(0);
  });

  it('throws when the commit is refused (a deferred constraint): nothing committed, the lease still held', async () => {
    const { stream } = await setup(1, 1);
    const strict = `"${schema}"."strict_${n}"`;
    await ds.query(`CREATE TABLE ${strict} (k text, CONSTRAINT one_k UNIQUE (k) DEFERRABLE INITIALLY DEFERRED)`);
    const [lease] = await rheo.fetch(stream, 'g', { limit: 1, leaseMs: 10_000 });
    const run = rheo.backend.ackInTransaction!(lease, async (manager) => {
      await (manager as EntityManager).query(`INSERT INTO ${strict} (k) VALUES ('x'), ('x')`);
      return true;
    });
    await expect(run).rejects.toBeInstanceOf(RheoError);
    expect(await ds.query(`SELECT k FROM ${strict}`)).toEqual([]);
    await rheo.ack(lease);
    expect((await rheo.lag(stream, 'g')).lag).toBe(0);
  });
});
