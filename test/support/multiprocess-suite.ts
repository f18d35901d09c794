// The one multi-process scenario, run against every distributed backend: three
// consumer processes in one group, each with its own connections, consume through
// the runtime Consumer while the parent appends; then one of them is SIGKILLed
// mid-stream. The lease history the children report is checked: every event
// acked, never two live leases of one event, attempts strictly increasing, lag 0.
import type { GroupOptions, Rheo } from '../../lib';
import { leaseHistories, leaseViolations, startConsumers } from './multiprocess';

export interface MultiprocessTarget {
  /** Label used in describe(). */
  name: string;
  /** How a child builds the backend (a backend-from-env entry and JSON options). */
  backend: { name: string; options: Record<string, unknown> };
  /** The parent's own facade on the same store. */
  rheo: Rheo;
  /** Drop the store's test data after the facade closed. */
  cleanup(): Promise<unknown>;
  /** The group's settings (flow limits, say); none by default. */
  group?: GroupOptions;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function untilLagZero(rheo: Rheo, stream: string, group: string, tries = 1200): Promise<void> {
  for (let i = 0; i < tries; i++) {
    if ((await rheo.lag(stream, group)).lag === 0) return;
    await sleep(100);
  }
  throw new Error(`lag of ${stream}/${group} never reached 0: ${JSON.stringify(await rheo.lag(stream, group))}`);
}

export function runMultiprocessSuite(target: MultiprocessTarget): void {
  const { rheo, backend } = target;

  describe(`${target.name}: several consumer processes in one group`, () => {
    beforeAll(() => rheo.init());
    afterAll(async () => {
      await rheo.close();
      await target.cleanup();
    });

    async function create(stream: string): Promise<void> {
      await rheo.createStream(stream, { partitions: 4 });
      await rheo.createGroup(stream, 'g', target.group ?? {});
    }

    async function load(stream: string, n: number): Promise<string[]> {
      const ids: string[] = [];
      for (let i = 0; i < n; i += 1000) {
        const batch = await rheo.appendBatch(
          stream,
          Array.from({ length: Math.min(1000, n - i) }, (_, j) => ({ key: `k${(i + j) % 97}`, payload: { n: i + j } })),
        );
        ids.push(...batch.map((e) => e.id));
      }
      return ids;
    }

    it('3 processes consume 10,000 events: all acked, no event under two live leases, lag 0', async () => {
      // Every child is up and waiting before the first event exists, so the work is
      // shared whatever the children's start-up times.
      await create('mp');
      const consumers = await startConsumers(3, backend, {
        stream: 'mp',
        group: 'g',
        maxDemand: 50,
        concurrency: 8,
        leaseMs: 30_000,
        pollMs: 200,
        workMs: 0,
      });
      let ids: string[];
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
      expect(await rheo.groupInfo('mp', 'g')).toMatchObject({ inflight: 0, deadLetters: 0, lag: { lag: 0 } });
    }, 240_000);

    it('a process SIGKILLed mid-stream loses nothing: its leases expire and the others finish the work', async () => {
      // Handlers take 20 ms, so the child killed after 200 events is certainly holding
      // leases (running and prefetched) when it dies.
      await create('mp-kill');
      const consumers = await startConsumers(3, backend, {
        stream: 'mp-kill',
        group: 'g',
        maxDemand: 20,
        concurrency: 4,
        leaseMs: 3000,
        pollMs: 100,
        workMs: 20,
      });
      let ids: string[];
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
      expect(await rheo.groupInfo('mp-kill', 'g')).toMatchObject({ inflight: 0, deadLetters: 0, lag: { lag: 0 } });
      // Some of the killed child's leases were taken over after they expired: another process leased them on a
      // later attempt. The store counts the attempt; the killed child's own report of the lease may have died with it.
      const takenOver = [...histories.values()].filter((hs) => hs.some((h) => h.attempt > 1 && h.child !== 0));
      expect(takenOver.length).toBeGreaterThan(0);
    }, 240_000);
  });
}
