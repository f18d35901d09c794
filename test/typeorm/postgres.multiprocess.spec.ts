import { postgresBackend, Rheo } from '../../lib';
import { leaseHistories, leaseViolations, startConsumers } from '../support/multiprocess';
import { dropSchema, freshSchema, PG_URL } from './pg-helpers';

// Three consumer processes in one group on PostgreSQL, each with its own pool and
// LISTEN connection, consume through the runtime Group. The lease history they
// report is checked: every event acked, never two live leases of one event,
// attempts strictly increasing, and the group's lag ends at 0.
const schema = freshSchema('mp');
const backend = { name: 'postgres', options: { url: PG_URL, schema, poolSize: 3 } };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function untilLagZero(rheo: Rheo, stream: string, group: string, tries = 1200): Promise<void> {
  for (let i = 0; i < tries; i++) {
    if ((await rheo.lag(stream, group)).lag === 0) return;
    await sleep(100);
  }
  throw new Error(`lag of ${stream}/${group} never reached 0: ${JSON.stringify(await rheo.lag(stream, group))}`);
}

describe('postgres: several consumer processes in one group', () => {
  const rheo = new Rheo(postgresBackend({ url: PG_URL, schema }));

  beforeAll(() => rheo.init());
  afterAll(async () => {
    await rheo.close();
    await dropSchema(schema);
  });

  async function create(stream: string): Promise<void> {
    await rheo.createStream(stream, { partitions: 4 });
    await rheo.createGroup(stream, 'g');
  }

  async function load(stream: string, n: number): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < n; i += 1000) {
      const batch = await rheo.appendBatch(stream, Array.from({ length: Math.min(1000, n - i) }, (_, j) => ({ key: `k${(i + j) % 97}`, payload: { n: i + j } })));
      ids.push(...batch.map((e) => e.id));
    }
    return ids;
  }

  it('3 processes consume 10,000 events: all acked, no event under two live leases, lag 0', async () => {
    // Every child is up and waiting (LISTEN) before the first event exists, so the
    // work is shared whatever the children's start-up times.
    await create('mp');
    const consumers = await startConsumers(3, backend, { stream: 'mp', group: 'g', maxDemand: 50, concurrency: 8, leaseMs: 30_000, pollMs: 200, workMs: 0 });
    let ids: string[] = [];
    try {
      ids = await load('mp', 10_000);
      await untilLagZero(rheo, 'mp', 'g');
    } finally {
      await consumers.stop();
    }
    const histories = leaseHistories(consumers.records);
    expect(leaseViolations(histories, ids)).toEqual([]);
    expect(histories.size).toBe(10_000);
    // Work was shared: every process handled some.
    for (const c of consumers.children) expect(c.handled).toBeGreaterThan(0);
    expect((await rheo.groupInfo('mp', 'g')).inflight).toBe(0);
  }, 240_000);

  it('a process SIGKILLed mid-stream loses nothing: its leases expire and the others finish the work', async () => {
    // Handlers take 20 ms, so the child killed after 200 events is certainly holding
    // leases (running and prefetched) when it dies.
    await create('mp-kill');
    const consumers = await startConsumers(3, backend, { stream: 'mp-kill', group: 'g', maxDemand: 20, concurrency: 4, leaseMs: 3000, pollMs: 100, workMs: 20 });
    let ids: string[] = [];
    try {
      ids = await load('mp-kill', 3000);
      for (let i = 0; i < 600 && consumers.children[0].handled < 200; i++) await sleep(50);
      expect(consumers.children[0].handled).toBeGreaterThanOrEqual(200);
      await consumers.kill(0);
      await untilLagZero(rheo, 'mp-kill', 'g');
    } finally {
      await consumers.stop();
    }
    const histories = leaseHistories(consumers.records);
    // The killed child's last acks may have committed without their report reaching us: the store is the judge.
    expect(leaseViolations(histories, ids, [0])).toEqual([]);
    const info = await rheo.groupInfo('mp-kill', 'g');
    expect(info).toMatchObject({ inflight: 0, deadLetters: 0, lag: { lag: 0 } });
    // Some of the killed child's leases were taken over after they expired.
    const redelivered = [...histories.values()].filter((hs) => hs.length > 1);
    expect(redelivered.length).toBeGreaterThan(0);
    expect(redelivered.some((hs) => hs[0].child === 0)).toBe(true);
  }, 240_000);
});
