// Flow control on Redis (docs/adr/049-flow-control.md) with two backends on their own
// connections, as two processes: claims and acks of both race in the store, on a
// single node and on the local cluster. Leases are abandoned mid-run and expire by a
// shared manual clock, advanced only between rounds (so within a round nothing expires
// and the test's own view of the live leases is exact).
import Redis from 'ioredis';
import { ManualClock, Rheo, redisBackend, type Lease } from '../../lib';
import type { Backend } from '../../lib/backends/backend';
import { StreamKeys } from '../../lib/backends/redis/keys';
import { CLUSTER_NODES, deleteClusterKeys, ensureCluster } from './cluster-support';
import { heldOf } from '../../lib/core/fetched';
import type { RedisBackend } from '../../lib/backends/redis/redis-backend';
import { deleteKeys, freshPrefix, REDIS_URL, ScriptCalls } from './support';

const LEASE_MS = 10_000;

interface Target {
  name: string;
  prefix: string;
  open(clock: ManualClock): Backend;
  before?: () => void;
  cleanup(): Promise<unknown>;
}

const single = freshPrefix('flow');
const cluster = freshPrefix('flow-cluster');
const TARGETS: Target[] = [
  {
    name: 'single node',
    prefix: single,
    open: (clock) => redisBackend({ url: REDIS_URL, prefix: single, clock }),
    cleanup: () => deleteKeys(single),
  },
  {
    name: 'cluster',
    prefix: cluster,
    open: (clock) => redisBackend({ cluster: CLUSTER_NODES, prefix: cluster, clock }),
    before: ensureCluster,
    cleanup: () => deleteClusterKeys(cluster),
  },
];

/** A deterministic pseudo-random sequence, so a failing run can be repeated. */
function rng(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1103515245 + 12345) % 2147483648;
    return s / 2147483648;
  };
}

for (const target of TARGETS) {
  describe(`flow control on Redis, two processes (${target.name})`, () => {
    const clock = new ManualClock(new Date('2026-01-01T00:00:00Z'));
    let backends: Backend[] = [];
    let rheos: Rheo[] = [];
    let n = 0;

    beforeAll(async () => {
      target.before?.();
      backends = [target.open(clock), target.open(clock)];
      rheos = backends.map((b) => new Rheo(b));
      for (const r of rheos) await r.init();
    }, 120_000);

    afterAll(async () => {
      await Promise.all(backends.map((b) => b.close()));
      await target.cleanup();
    });

    async function newStream(partitions: number): Promise<string> {
      const stream = `flow-${++n}`;
      await rheos[0].createStream(stream, { partitions });
      return stream;
    }

    /**
     * Both processes fetch and settle at once for `rounds` rounds; a lease is abandoned
     * (never settled) with probability `abandon`; between rounds the clock passes the
     * lease time, so the abandoned leases expire and are claimed again. `check` sees each
     * fetch's leases against the live ones before they are added; `acked` sees each ack as
     * it is sent (what a claim that follows its commit in the store has seen first here).
     */
    async function race(
      stream: string,
      rounds: number,
      abandon: number,
      check: (fetched: Lease[], live: Map<string, Lease>) => void,
      acked: (lease: Lease) => void,
    ): Promise<void> {
      const random = rng(42);
      const live = new Map<string, Lease>();
      for (let round = 0; round < rounds; round++) {
        await Promise.all(
          rheos.map(async (rheo) => {
            for (let i = 0; i < 4; i++) {
              const leases = await rheo.fetch(stream, 'g', { limit: 5, leaseMs: LEASE_MS });
              check(leases, live);
              for (const l of leases) live.set(l.leaseId, l);
              const settling = leases.filter(() => random() >= abandon);
              // Ended in the test's view as the ack is sent: a claim racing it may see it ended.
              for (const l of settling) {
                live.delete(l.leaseId);
                acked(l);
              }
              await Promise.all(settling.map((l) => rheo.ack(l)));
            }
          }),
        );
        clock.advance(LEASE_MS);
        // The abandoned ones expired: their events are claimed again, as attempt 2 or later.
        live.clear();
      }
    }

    it("ordering 'key': never two live leases of one key, each key acked in sequence order, nothing left waiting", async () => {
      const stream = await newStream(4);
      // No dead letters: an event abandoned on its last attempt would end unacked, and its key move on (ADR 035).
      await rheos[0].createGroup(stream, 'g', { ordering: 'key', maxAttempts: 1000 });
      const KEYS = 30;
      const PER_KEY = 20;
      const events = [];
      for (let i = 0; i < PER_KEY; i++) for (let k = 0; k < KEYS; k++) events.push({ key: `k${k}`, payload: { k, i } });
      // Shuffled in batches, so keys interleave unevenly within and across partitions.
      const random = rng(7);
      for (let i = 0; i < events.length; i += 50)
        await rheos[1].appendBatch(
          stream,
          events.slice(i, i + 50).sort(() => random() - 0.5),
        );
      const order = new Map<string, number[]>();
      /** Per key, the highest sequence leased so far. */
      const leased = new Map<string, number>();
      const sent = new Set<string>();
      const violations: string[] = [];
      await race(
        stream,
        80,
        0.1,
        (fetched, live) => {
          const keys = new Map([...live.values()].map((l) => [l.event.key, l]));
          const seen = (l: Lease) => `${l.event.key}:${l.event.sequence}#${l.attempt}`;
          for (const l of fetched) {
            const other = keys.get(l.event.key);
            if (other) violations.push(`${seen(l)} leased beside live ${seen(other)}`);
            keys.set(l.event.key, l);
            // A later event of the key only once the earlier one's ack was sent; never an earlier one.
            const key = l.event.key!;
            const last = leased.get(key);
            if (last !== undefined && (l.event.sequence < last || (l.event.sequence > last && !sent.has(`${key}:${last}`))))
              violations.push(`${seen(l)} leased after ${key}:${last} (its ack ${sent.has(`${key}:${last}`) ? 'sent' : 'not sent'})`);
            leased.set(key, Math.max(last ?? 0, l.event.sequence));
          }
        },
        (l) => {
          const list = order.get(l.event.key!) ?? [];
          list.push(l.event.sequence);
          sent.add(`${l.event.key}:${l.event.sequence}`);
          order.set(l.event.key!, list);
        },
      );
      expect(violations).toEqual([]);
      expect(order.size).toBe(KEYS);
      for (const [, seqs] of order) {
        expect(seqs).toHaveLength(PER_KEY);
        expect(seqs.join(',')).toEqual([...seqs].sort((a, b) => a - b).join(','));
      }
      const info = await rheos[0].groupInfo(stream, 'g');
      expect(info.lag.lag).toBe(0);
      expect(info.waitingForKey).toBe(0);
      await expectNoKeyPlaces(stream, 4);
    }, 120_000);

    it('groupConcurrency 3: the live leases of both processes never exceed 3, and every event is acked once', async () => {
      const stream = await newStream(3);
      await rheos[0].createGroup(stream, 'g', { groupConcurrency: 3 });
      await rheos[0].appendBatch(
        stream,
        Array.from({ length: 120 }, (_, i) => ({ payload: { i } })),
      );
      let most = 0;
      const acked = new Set<string>();
      let twice = 0;
      await race(
        stream,
        40,
        0.1,
        (fetched, live) => {
          most = Math.max(most, live.size + fetched.length);
        },
        (l) => {
          if (acked.has(l.event.id)) twice++;
          acked.add(l.event.id);
        },
      );
      expect(most).toBeLessThanOrEqual(3);
      expect(most).toBe(3);
      expect(twice).toBe(0);
      expect(acked.size).toBe(120);
      expect((await rheos[0].groupInfo(stream, 'g')).lag.lag).toBe(0);
    }, 120_000);

    it("a replay of a keyed group over more records than one tidy slice: each key's head again, places counted anew", async () => {
      const stream = await newStream(1);
      await rheos[0].createGroup(stream, 'g', { ordering: 'key' });
      await rheos[0].appendBatch(
        stream,
        Array.from({ length: 1200 }, (_, i) => ({ key: i % 2 ? 'b' : 'a', payload: { i } })),
      );
      const first = await rheos[0].fetch(stream, 'g', { limit: 10, leaseMs: LEASE_MS });
      expect(first.map((l) => l.event.sequence)).toEqual([1, 2]);
      expect((await rheos[1].groupInfo(stream, 'g')).waitingForKey).toBe(1198);
      await rheos[1].replay(stream, 'g', { afterSequence: 0 });
      const again = await rheos[1].fetch(stream, 'g', { limit: 10, leaseMs: LEASE_MS });
      expect(again.map((l) => l.event.sequence)).toEqual([1, 2]);
      expect((await rheos[0].groupInfo(stream, 'g')).waitingForKey).toBe(1198);
      // The first claim's leases went stale with the replay; the new ones end their keys' turns.
      await expect(rheos[0].ack(first[0])).rejects.toMatchObject({ code: 'stale_lease' });
      for (const l of again) await rheos[1].ack(l);
      const next = await rheos[0].fetch(stream, 'g', { limit: 10, leaseMs: LEASE_MS });
      expect(next.map((l) => l.event.sequence)).toEqual([3, 4]);
    }, 60_000);

    it("a forced trim past a key's open delivery gives its place to the key's next event above the point", async () => {
      const stream = await newStream(1);
      await rheos[0].createGroup(stream, 'g', { ordering: 'key' });
      await rheos[0].appendBatch(
        stream,
        ['a', 'a', 'a', 'b', 'a'].map((key, i) => ({ key, payload: { i } })),
      );
      const first = await rheos[0].fetch(stream, 'g', { limit: 10, leaseMs: LEASE_MS });
      expect(first.map((l) => l.event.sequence)).toEqual([1, 4]);
      await rheos[0].setRetention(stream, { maxEvents: 3 });
      await rheos[1].trim(stream, { force: true });
      // a1 (leased) and a2 (waiting) are gone: a3 has the place, a5 still waits for it.
      const next = await rheos[1].fetch(stream, 'g', { limit: 10, leaseMs: LEASE_MS });
      expect(next.map((l) => l.event.sequence)).toEqual([3]);
      expect((await rheos[0].groupInfo(stream, 'g')).waitingForKey).toBe(1);
      await rheos[1].ack(next[0]);
      expect((await rheos[0].fetch(stream, 'g', { limit: 10, leaseMs: LEASE_MS })).map((l) => l.event.sequence)).toEqual([5]);
    }, 60_000);

    it("a lease expired on its last attempt, dead-lettered by the next claim, gives its key's place on", async () => {
      const stream = await newStream(1);
      await rheos[0].createGroup(stream, 'g', { ordering: 'key', maxAttempts: 1 });
      await rheos[0].appendBatch(stream, [
        { key: 'a', payload: 1 },
        { key: 'a', payload: 2 },
      ]);
      expect((await rheos[0].fetch(stream, 'g', { limit: 10, leaseMs: LEASE_MS })).map((l) => l.event.sequence)).toEqual([1]);
      clock.advance(LEASE_MS);
      // The other process's claim dead-letters it; the key's next event is then due at once.
      const claimed: Lease[] = [];
      for (let i = 0; i < 2 && claimed.length === 0; i++)
        claimed.push(...(await rheos[1].fetch(stream, 'g', { limit: 10, leaseMs: LEASE_MS })));
      expect(claimed.map((l) => l.event.sequence)).toEqual([2]);
      expect(await rheos[0].deadLetters(stream, 'g')).toHaveLength(1);
    }, 60_000);

    it("cancelling a key's delayed head gives its place to the key's next event", async () => {
      const stream = await newStream(1);
      await rheos[0].createGroup(stream, 'g', { ordering: 'key' });
      const [head] = await rheos[0].appendBatch(stream, [{ key: 'a', payload: 1, delayMs: 60_000 }]);
      await rheos[0].appendBatch(stream, [
        { key: 'a', payload: 2 },
        { key: 'a', payload: 3 },
      ]);
      expect(await rheos[0].fetch(stream, 'g', { limit: 10, leaseMs: LEASE_MS })).toEqual([]);
      expect((await rheos[0].groupInfo(stream, 'g')).waitingForKey).toBe(2);
      await rheos[1].cancelDelayed(stream, head.id);
      expect((await rheos[0].fetch(stream, 'g', { limit: 10, leaseMs: LEASE_MS })).map((l) => l.event.sequence)).toEqual([2]);
      expect((await rheos[0].groupInfo(stream, 'g')).waitingForKey).toBe(1);
    }, 60_000);

    /** Every key place given back: no open count and no waiting member left in any partition. */
    async function expectNoKeyPlaces(stream: string, partitions: number): Promise<void> {
      const admin = target.name === 'cluster' ? new Redis.Cluster(CLUSTER_NODES) : new Redis(REDIS_URL);
      try {
        const g = new StreamKeys(target.prefix, stream).group('g');
        for (let p = 0; p < partitions; p++) {
          expect(await admin.hgetall(g.keyOpen(p))).toEqual({});
          expect(await admin.zcard(g.keyWaiting(p))).toBe(0);
        }
      } finally {
        admin.disconnect();
      }
    }
  });
}

describe('flow control on Redis: bounded work per fetch call', () => {
  const prefix = freshPrefix('flow-bounded');
  const backend = redisBackend({ url: REDIS_URL, prefix }) as RedisBackend;
  const rheo = new Rheo(backend);

  beforeAll(() => rheo.init());
  afterAll(async () => {
    await rheo.close();
    await deleteKeys(prefix);
  });

  it('one fetch script call sets at most 1000 events waiting for their key, over all its partitions', async () => {
    await rheo.createStream('hot', { partitions: 2 });
    await rheo.createGroup('hot', 'g', { ordering: 'key' });
    // Two hot keys of 800 events each, one per partition: 1598 wait behind the two heads.
    for (let i = 0; i < 1600; i += 400)
      await rheo.appendBatch(
        'hot',
        Array.from({ length: 400 }, (_, j) => ({ key: (i + j) % 2 ? 'y' : 'x', partition: (i + j) % 2, payload: i + j })),
      );
    // A fetch of 2 takes both heads in its first call, so it makes no second one.
    const recorder = new ScriptCalls(backend);
    recorder.start();
    const leases = await rheo.fetch('hot', 'g', { limit: 2, leaseMs: LEASE_MS });
    expect(recorder.calls().filter((c) => c.script === 'fetch')).toHaveLength(1);
    expect(leases.map((l) => l.event.sequence)).toEqual([1, 1]);
    expect(heldOf(leases)?.waitingForKey).toBe(1000);
    expect((await rheo.groupInfo('hot', 'g')).waitingForKey).toBe(1000);
    // The next claims pass the rest; each key's next event waits for its head.
    const more = await rheo.fetch('hot', 'g', { limit: 10, leaseMs: LEASE_MS });
    expect(more).toEqual([]);
    expect((await rheo.groupInfo('hot', 'g')).waitingForKey).toBe(1598);
  });
});
