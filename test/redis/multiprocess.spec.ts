import { Rheo, redisBackend } from '../../lib';
import { leaseHistories, leaseViolations, startConsumers } from '../support/multiprocess';
import { deleteKeys, freshPrefix, REDIS_URL } from './support';

// Three consumer processes in one group on Redis, each with its own main and
// blocking connection, consume through the runtime Group. The lease history they
// report is checked: every event acked, never two live leases of one event,
// attempts strictly increasing, and the group's lag ends at 0.
const prefix = freshPrefix('mp');
const backend = { name: 'redis', options: { url: REDIS_URL, prefix } };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function untilLagZero(rheo: Rheo, stream: string, group: string, tries = 1200): Promise<void> {
  for (let i = 0; i < tries; i++) {
    if ((await rheo.lag(stream, group)).lag === 0) return;
    await sleep(100);
  }
  throw new Error(`lag of ${stream}/${group} never reached 0: ${JSON.stringify(await rheo.lag(stream, group))}`);
}

describe('redis: several consumer processes in one group', () => {
  const rheo = new Rheo(redisBackend({ url: REDIS_URL, prefix }));

  beforeAll(() => rheo.init());
  afterAll(async () => {
    await rheo.close();
    await deleteKeys(prefix);
  });

  async function setup(stream: string): Promise<void> {
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
    await setup('mp');
    // The children start first (each is ready before any event exists), so all three compete
    // for the whole load, woken by their blocking reads.
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
    for (const c of consumers.children) expect(c.handled).toBeGreaterThan(0);
    expect(await rheo.groupInfo('mp', 'g')).toMatchObject({ inflight: 0, deadLetters: 0, lag: { lag: 0 } });
  }, 240_000);

  it('a process SIGKILLed mid-stream loses nothing: its leases expire and the others finish the work', async () => {
    await setup('mp-kill');
    const consumers = await startConsumers(3, backend, { stream: 'mp-kill', group: 'g', maxDemand: 20, concurrency: 4, leaseMs: 3000, pollMs: 100, workMs: 10 });
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
    expect(leaseViolations(histories, ids, [0])).toEqual([]);
    expect(await rheo.groupInfo('mp-kill', 'g')).toMatchObject({ inflight: 0, deadLetters: 0, lag: { lag: 0 } });
    // The killed child held leases (its handlers take 10 ms each): they expired and other children took them over.
    const redelivered = [...histories.values()].filter((hs) => hs.length > 1);
    expect(redelivered.some((hs) => hs[0].child === 0)).toBe(true);
  }, 240_000);
});
