import { createHash } from 'node:crypto';
import Redis from 'ioredis';
import { Consumer, ManualClock, Rheo, RheoError, redisBackend } from '../../lib';
import type { Lease } from '../../lib';
import { keySlot } from '../../lib/backends/redis/cluster';
import { mapRedisError } from '../../lib/backends/redis/errors';
import { layoutKey, registryKey, StreamKeys } from '../../lib/backends/redis/keys';
import { SCRIPTS } from '../../lib/backends/redis/scripts';
import { CLUSTER_NODES, deleteClusterKeys, ensureCluster, Master, masterOf, masters, moveSlot, nodeClient } from './cluster-support';
import { appendRetrying, freshPrefix } from './support';
import { until } from '../support/until';

// The Redis backend on a real Redis Cluster (3 masters, 3 replicas on 127.0.0.1:7100-7105),
// started by this file when it is not up (scripts/redis-cluster.sh, as .ci/run does).
beforeAll(ensureCluster, 120_000);

const prefix = freshPrefix('cluster');
let all: Master[];

beforeAll(async () => {
  all = await masters();
});

afterAll(async () => {
  await deleteClusterKeys(prefix);
});

/** The slot of a stream's keys under `prefix`. */
const slotOf = (stream: string, p = prefix) => keySlot(new StreamKeys(p, stream).meta);

/** A stream name starting with `base` whose keys live on `master`. */
function streamOn(master: Master, base: string, p = prefix): string {
  for (let i = 0; ; i++) {
    const name = `${base}-${i}`;
    if (masterOf(all, slotOf(name, p)).id === master.id) return name;
  }
}

/**
 * Whether the master on `port` holds `key`, asked on a plain connection (no redirection
 * followed): a master that does not serve the key's slot answers MOVED, naming the one that does.
 */
async function holds(port: number, key: string): Promise<boolean> {
  const c = nodeClient(port);
  try {
    return (await c.exists(key)) === 1;
  } catch (err) {
    const moved = /^MOVED \d+ 127\.0\.0\.1:(\d+)/.exec((err as Error).message);
    if (!moved || Number(moved[1]) === port) throw err;
    return false;
  } finally {
    c.disconnect();
  }
}

describe('redisBackend({ cluster })', () => {
  it('refuses options that cannot go with a cluster, naming the field', () => {
    const field = (f: () => unknown) => {
      try {
        f();
      } catch (err) {
        expect(err).toBeInstanceOf(RheoError);
        expect((err as RheoError).code).toBe('invalid_argument');
        return (err as RheoError).field;
      }
      throw new Error('expected invalid_argument');
    };
    expect(field(() => redisBackend({ cluster: CLUSTER_NODES, url: 'redis://127.0.0.1:7100' }))).toBe('url');
    expect(field(() => redisBackend({ cluster: CLUSTER_NODES, options: {} }))).toBe('options');
    expect(field(() => redisBackend({ cluster: [] }))).toBe('cluster');
    expect(field(() => redisBackend({ clusterOptions: {} }))).toBe('clusterOptions');
    expect(field(() => redisBackend({ cluster: {} as never }))).toBe('cluster');
    expect(field(() => redisBackend({ cluster: CLUSTER_NODES, clusterOptions: { scaleReads: 'slave' } }))).toBe(
      'clusterOptions.scaleReads',
    );
    const replicaReads = new Redis.Cluster(CLUSTER_NODES, { lazyConnect: true, scaleReads: 'all' });
    expect(field(() => redisBackend({ cluster: replicaReads }))).toBe('cluster');
    replicaReads.disconnect();
    const cluster = new Redis.Cluster(CLUSTER_NODES, { lazyConnect: true });
    try {
      expect(field(() => redisBackend({ cluster, clusterOptions: {} }))).toBe('clusterOptions');
      expect(field(() => redisBackend({ client: cluster as never }))).toBe('client');
    } finally {
      cluster.disconnect();
    }
  });

  it('declares distributed, and names the cluster (no credentials) in describe()', async () => {
    const backend = redisBackend({
      cluster: ['127.0.0.1:7100', 7101, { host: '127.0.0.1', port: 7102 }, 'redis://user:secret@127.0.0.1:7103'],
      prefix,
    });
    expect(backend.capabilities.guarantees).toMatchObject({ distributed: true, durable: true });
    expect(backend.clustered).toBe(true);
    const { target } = backend.describe();
    expect(target).toBe(`cluster 127.0.0.1:7100, localhost:7101, 127.0.0.1:7102 (+1), prefix ${prefix}`);
    expect(target).not.toContain('secret');
    expect(redisBackend({ prefix }).clustered).toBe(false);
    await backend.close();
  });

  it('computes key slots as the server does (CLUSTER KEYSLOT), one slot per stream', async () => {
    const c = nodeClient(all[0].port);
    try {
      const k = new StreamKeys(prefix, 'orders{eu}:v1%');
      const g = k.group('billing:{x}');
      const keys = [
        k.meta,
        k.ids,
        k.wake,
        k.log(3),
        g.cfg,
        g.deliveries,
        g.leased(0),
        registryKey(prefix),
        layoutKey(prefix),
        'plain',
        'a{}b',
      ];
      for (const key of keys) expect(keySlot(key)).toBe(Number(await c.call('CLUSTER', 'KEYSLOT', key)));
      for (const key of [k.ids, k.wake, k.log(3), g.cfg, g.deliveries, g.leased(0)]) expect(keySlot(key)).toBe(keySlot(k.meta));
    } finally {
      c.disconnect();
    }
  });

  it('runs every stream on the master that owns its slot, and keeps the registry in its own slot', async () => {
    const backend = redisBackend({ cluster: CLUSTER_NODES, prefix });
    const rheo = new Rheo(backend);
    try {
      const streams = all.map((m) => streamOn(m, 'placed'));
      for (const s of streams) {
        await rheo.createStream(s, { partitions: 2 });
        await rheo.createGroup(s, 'g');
        await rheo.appendBatch(s, [
          { partition: 0, payload: { s } },
          { partition: 1, payload: { s } },
        ]);
      }
      for (const [i, s] of streams.entries()) {
        const k = new StreamKeys(prefix, s);
        for (const key of [k.meta, k.ids, k.log(0), k.log(1), k.group('g').cfg]) {
          expect(await holds(all[i].port, key)).toBe(true);
          for (const other of all.filter((m) => m.id !== all[i].id)) expect(await holds(other.port, key)).toBe(false);
        }
      }
      const registry = masterOf(all, keySlot(registryKey(prefix)));
      expect(await holds(registry.port, registryKey(prefix))).toBe(true);
      expect((await rheo.listStreams()).map((s) => s.name)).toEqual([...streams].sort());
      // streamNode: the cluster's connection to the stream's master (where WAIT must go).
      for (const [i, s] of streams.entries())
        expect((backend.streamNode(s) as unknown as { options: { port: number } }).options.port).toBe(all[i].port);
    } finally {
      await rheo.close();
    }
  });

  it('settles leases of streams on all three masters in one call, a lease that expired and was re-claimed failing alone', async () => {
    const clock = new ManualClock();
    const backend = redisBackend({ cluster: CLUSTER_NODES, prefix, clock });
    const rheo = new Rheo(backend);
    try {
      const streams = all.map((m) => streamOn(m, 'bulk'));
      const leases: Lease[] = [];
      for (const s of streams) {
        await rheo.createStream(s, { partitions: 2 });
        await rheo.createGroup(s, 'g', { maxAttempts: 5 });
        await rheo.appendBatch(
          s,
          Array.from({ length: 150 }, (_, i) => ({ partition: i % 2, payload: i })),
        );
        leases.push(...(await rheo.fetch(s, 'g', { limit: 150, leaseMs: 1000 })));
      }
      expect(leases).toHaveLength(450);
      // The first stream's leases expire and another consumer claims them again.
      clock.advance(1001);
      const reclaimed = await rheo.fetch(streams[0], 'g', { limit: 150, leaseMs: 60_000 });
      expect(reclaimed).toHaveLength(150);
      // The other streams' leases are renewed in time, in one call across two masters.
      const others = leases.filter((l) => l.stream !== streams[0]);
      // (their leases expired too by the clock; renewing is refused, then they are claimed afresh)
      expect((await rheo.renewMany(others, { leaseMs: 60_000 })).every((r) => !r.ok)).toBe(true);
      const fresh = [
        ...(await rheo.fetch(streams[1], 'g', { limit: 150, leaseMs: 60_000 })),
        ...(await rheo.fetch(streams[2], 'g', { limit: 150, leaseMs: 60_000 })),
      ];
      expect(fresh).toHaveLength(300);
      // One bulk settle: the stale leases of stream 0, and the live ones of all three streams.
      const stale = leases.filter((l) => l.stream === streams[0]);
      const results = await rheo.settleMany([
        ...stale.map((lease) => ({ kind: 'ack' as const, lease })),
        ...reclaimed.map((lease) => ({ kind: 'ack' as const, lease })),
        ...fresh.map((lease, i) => (i % 3 === 0 ? { kind: 'nack' as const, lease, delayMs: 0 } : { kind: 'ack' as const, lease })),
      ]);
      expect(results.slice(0, 150).every((r) => !r.ok && r.error.code === 'stale_lease')).toBe(true);
      expect(results.slice(150).every((r) => r.ok)).toBe(true);
      expect((await rheo.lag(streams[0], 'g')).lag).toBe(0);
      // The nacked ones come back (attempt 3: two deliveries before), then everything is acked.
      for (const s of streams.slice(1)) {
        const again = await rheo.fetch(s, 'g', { limit: 150 });
        expect(again).toHaveLength(50);
        expect(again.every((l) => l.attempt === 3)).toBe(true);
        expect((await rheo.settleMany(again.map((lease) => ({ kind: 'ack' as const, lease })))).every((r) => r.ok)).toBe(true);
      }
      for (const s of streams) expect(await rheo.groupInfo(s, 'g')).toMatchObject({ lag: { lag: 0 }, inflight: 0, deadLetters: 0 });
    } finally {
      await rheo.close();
    }
  });

  it('runs on masters that lost their scripts (NOSCRIPT per node: EVAL, also inside pipelines)', async () => {
    const backend = redisBackend({ cluster: CLUSTER_NODES, prefix });
    const rheo = new Rheo(backend);
    try {
      await rheo.init();
      const streams = all.map((m) => streamOn(m, 'noscript'));
      for (const s of streams) {
        await rheo.createStream(s);
        await rheo.createGroup(s, 'g');
      }
      for (const m of all) {
        const c = nodeClient(m.port);
        await c.script('FLUSH');
        c.disconnect();
      }
      for (const s of streams) await rheo.appendBatch(s, [{ payload: 1 }, { payload: 2 }]);
      const leases = (await Promise.all(streams.map((s) => rheo.fetch(s, 'g', { limit: 10 })))).flat();
      expect(leases).toHaveLength(6);
      for (const m of all) {
        const c = nodeClient(m.port);
        await c.script('FLUSH');
        c.disconnect();
      }
      // A bulk settle over three masters: three pipelines, each answered NOSCRIPT, each call re-sent as EVAL.
      expect((await rheo.settleMany(leases.map((lease) => ({ kind: 'ack' as const, lease })))).every((r) => r.ok)).toBe(true);
      for (const s of streams) expect((await rheo.lag(s, 'g')).lag).toBe(0);
      // init() loads every script on every master.
      await rheo.close();
      const again = new Rheo(redisBackend({ cluster: CLUSTER_NODES, prefix }));
      await again.init();
      const settle = createHash('sha1').update(SCRIPTS.settle).digest('hex');
      for (const m of all) {
        const c = nodeClient(m.port);
        expect(await c.script('EXISTS', settle)).toEqual([1]);
        c.disconnect();
      }
      await again.close();
    } finally {
      await rheo.close();
    }
  });

  it('lists a stream only once its keys exist: a crash between the registry and the stream leaves nothing half-listed', async () => {
    const p = freshPrefix('cluster-registry');
    const backend = redisBackend({ cluster: CLUSTER_NODES, prefix: p });
    const rheo = new Rheo(backend);
    const cluster = new Redis.Cluster(CLUSTER_NODES);
    try {
      await rheo.createStream('whole');
      // A creation that stopped after the registry write (the order createStream writes in).
      await cluster.sadd(registryKey(p), 'half');
      expect((await rheo.listStreams()).map((s) => s.name)).toEqual(['whole']);
      expect(await backend.getStream('half')).toBeNull();
      // Retried, it completes.
      await rheo.createStream('half', { partitions: 3 });
      expect((await rheo.listStreams()).map((s) => [s.name, s.partitions])).toEqual([
        ['half', 3],
        ['whole', 1],
      ]);
      // A stream whose registration was lost (written by an older version, meta first):
      // creating it again answers already_exists and lists it.
      await cluster.srem(registryKey(p), 'whole');
      expect((await rheo.listStreams()).map((s) => s.name)).toEqual(['half']);
      await expect(rheo.createStream('whole')).rejects.toMatchObject({ code: 'already_exists' });
      expect((await rheo.listStreams()).map((s) => s.name)).toEqual(['half', 'whole']);
    } finally {
      await rheo.close();
      cluster.disconnect();
      await deleteClusterKeys(p);
    }
  });

  it('maps a MOVED it is handed, and TRYAGAIN of a slot mid-migration, to backend_unavailable; nothing is lost', async () => {
    // A MOVED straight from a node that does not own the slot (no cluster client to follow it).
    const stream = streamOn(all[0], 'moved');
    const wrong = nodeClient(all[1].port);
    try {
      const err = await wrong.get(new StreamKeys(prefix, stream).meta).catch((e: unknown) => e);
      expect(String((err as Error).message)).toMatch(/^MOVED /);
      expect(mapRedisError(err, 'write').code).toBe('backend_unavailable');
    } finally {
      wrong.disconnect();
    }

    // TRYAGAIN: the slot is being migrated and only some of a script's keys have moved.
    const backend = redisBackend({ cluster: CLUSTER_NODES, prefix });
    const rheo = new Rheo(backend);
    const s = streamOn(all[2], 'tryagain');
    const k = new StreamKeys(prefix, s);
    const slot = slotOf(s);
    const src = nodeClient(all[2].port);
    const dst = nodeClient(all[0].port);
    /** Move the slot's remaining keys to dst and give it the slot everywhere (idempotent). */
    const finishMigration = async () => {
      for (;;) {
        const keys = (await src.call('CLUSTER', 'GETKEYSINSLOT', slot, 100)) as string[];
        if (keys.length === 0) break;
        await src.call('MIGRATE', '127.0.0.1', all[0].port, '', 0, 5000, 'KEYS', ...keys);
      }
      for (const m of all) {
        const c = nodeClient(m.port);
        await c.call('CLUSTER', 'SETSLOT', slot, 'NODE', all[0].id);
        c.disconnect();
      }
    };
    try {
      await rheo.createStream(s);
      await rheo.createGroup(s, 'g');
      await rheo.append(s, { id: 'kept', payload: 1 });
      await dst.call('CLUSTER', 'SETSLOT', slot, 'IMPORTING', all[2].id);
      await src.call('CLUSTER', 'SETSLOT', slot, 'MIGRATING', all[0].id);
      await src.call('MIGRATE', '127.0.0.1', all[0].port, '', 0, 5000, 'KEYS', k.meta);
      // What the slot's owner answers a command on the stream's keys now: TRYAGAIN.
      const reply = await src.call('EXISTS', k.meta, k.ids).catch((e: unknown) => e);
      expect(String((reply as Error).message)).toMatch(/^TRYAGAIN/);
      expect(mapRedisError(reply, 'write').code).toBe('backend_unavailable');
      // The backend's fetch meets it (ioredis retries, between the nodes, then gives up).
      const failed = await rheo.fetch(s, 'g').catch((e: unknown) => e);
      expect(failed).toBeInstanceOf(RheoError);
      expect((failed as RheoError).code).toBe('backend_unavailable');
      expect((failed as RheoError).message).toMatch(/Too many Cluster redirections.*(TRYAGAIN|MOVED|ASK)/);
      // The migration finishes: the event is there, delivered once.
      await finishMigration();
      const [lease] = await rheo.fetch(s, 'g');
      expect(lease.event.id).toBe('kept');
      await rheo.ack(lease);
      expect((await rheo.lag(s, 'g')).lag).toBe(0);
      expect(await holds(all[0].port, k.log(0))).toBe(true);
    } finally {
      await finishMigration().catch(() => undefined);
      src.disconnect();
      dst.disconnect();
      await moveSlot(slot, all[2]);
      await rheo.close();
    }
  });
});

describe('wake-ups on the cluster', () => {
  it('wakes waiters on streams of all three masters, one blocking connection per slot, the shared ones left free', async () => {
    const backend = redisBackend({ cluster: CLUSTER_NODES, prefix });
    const rheo = new Rheo(backend);
    const controller = new AbortController();
    try {
      const streams = all.map((m) => streamOn(m, 'wake'));
      for (const s of streams) {
        await rheo.createStream(s);
        await rheo.createGroup(s, 'a');
        await rheo.createGroup(s, 'b');
        expect(await rheo.fetch(s, 'a')).toEqual([]);
        expect(await rheo.fetch(s, 'b')).toEqual([]);
      }
      // Two groups per stream, six waits: far longer than the test may take, so only a wake-up ends them.
      const woken = new Set<string>();
      const waits = streams.flatMap((s) =>
        ['a', 'b'].map((g) =>
          backend.wait({ stream: s, group: g, timeoutMs: 600_000, signal: controller.signal }).then(() => woken.add(`${s}/${g}`)),
        ),
      );
      await until('a blocking connection per slot', () => backend.wakeSlots.length === 3);
      expect(backend.wakeSlots.map((w) => w.slot).sort()).toEqual(streams.map((s) => slotOf(s)).sort());
      for (const w of backend.wakeSlots) expect(w.node).toBe(`127.0.0.1:${masterOf(all, w.slot).port}`);
      // While all three nodes hold a blocked read, the cluster's own connections still serve everything.
      for (const s of streams) {
        expect(woken.size).toBe(streams.indexOf(s) * 2);
        expect(await rheo.fetch(s, 'a')).toEqual([]);
        await rheo.append(s, { payload: s });
        await until(`the waiters of ${s}`, () => woken.has(`${s}/a`) && woken.has(`${s}/b`));
      }
      await Promise.all(waits);
    } finally {
      controller.abort();
      await rheo.close();
    }
  });

  it('follows a slot that moves to another master: the waiter is released, and the next wait blocks on the new owner', async () => {
    const backend = redisBackend({ cluster: CLUSTER_NODES, prefix });
    const rheo = new Rheo(backend);
    const controller = new AbortController();
    const stream = streamOn(all[0], 'moving');
    const slot = slotOf(stream);
    try {
      await rheo.createStream(stream);
      await rheo.createGroup(stream, 'g');
      expect(await rheo.fetch(stream, 'g')).toEqual([]);
      let first = false;
      const waiting = backend.wait({ stream, group: 'g', timeoutMs: 600_000, signal: controller.signal }).then(() => (first = true));
      await until('the blocking read on the first master', () => backend.wakeSlots.some((w) => w.slot === slot));
      expect(backend.wakeSlots).toEqual([{ slot, node: `127.0.0.1:${all[0].port}` }]);

      await moveSlot(slot, all[1]);
      await rheo.append(stream, { id: 'after-move', payload: 1 });
      // Released (by the wake-up, or by the read that met MOVED): never left to its ten minutes.
      await waiting;
      expect(first).toBe(true);
      const [lease] = await rheo.fetch(stream, 'g');
      expect(lease.event.id).toBe('after-move');
      await rheo.ack(lease);

      // The next wait blocks on the new owner, and a write there wakes it.
      let second = false;
      const again = backend.wait({ stream, group: 'g', timeoutMs: 600_000, signal: controller.signal }).then(() => (second = true));
      await until('the blocking read on the new master', () =>
        backend.wakeSlots.some((w) => w.slot === slot && w.node === `127.0.0.1:${all[1].port}`),
      );
      expect(second).toBe(false);
      await rheo.append(stream, { id: 'on-new-owner', payload: 2 });
      await again;
      // Woken by the append, not by a failed read: the slot's listener is still there, on the new owner.
      expect(backend.wakeSlots).toEqual([{ slot, node: `127.0.0.1:${all[1].port}` }]);
      const [next] = await rheo.fetch(stream, 'g');
      expect(next.event.id).toBe('on-new-owner');
      await rheo.ack(next);
    } finally {
      controller.abort();
      await rheo.close();
      await moveSlot(slot, all[0]);
    }
  });
});

describe('connections killed on every master mid-consumption', () => {
  it('CLIENT KILL of all our connections, three times: every group recovers and loses nothing', async () => {
    const p = freshPrefix('cluster-kill');
    const connectionName = `rheo-ckill-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
    // The node connections and the per-slot blocking ones (duplicates of them) carry the name.
    const backend = redisBackend({ cluster: CLUSTER_NODES, prefix: p, clusterOptions: { redisOptions: { connectionName } } });
    const rheo = new Rheo(backend);
    const streams = all.map((m) => streamOn(m, 'kill', p));
    const handled = new Map<string, number>();
    const groups: Consumer[] = [];
    const appended: string[] = [];
    let kills = 0;
    try {
      for (const s of streams) {
        await rheo.createStream(s, { partitions: 2 });
        await rheo.createGroup(s, 'g', { maxAttempts: 1000, retry: { initialMs: 0, maxMs: 0 } });
        const group = new Consumer(
          rheo,
          { stream: s, group: 'g', maxDemand: 50, concurrency: 8, leaseMs: 1000, pollMs: 100 },
          async (lease) => {
            handled.set(lease.event.id, (handled.get(lease.event.id) ?? 0) + 1);
            await new Promise((r) => setImmediate(r));
          },
        );
        group.start();
        groups.push(group);
      }
      for (let batch = 0; batch < 12; batch++) {
        for (const s of streams) appended.push(...(await appendRetrying(rheo, s, batch)));
        if (batch % 4 === 1) {
          await new Promise((r) => setTimeout(r, 150));
          kills += await killConnections(connectionName);
        }
      }
      expect(kills).toBeGreaterThanOrEqual(3 * 3);
      for (const s of streams) await until(`lag 0 on ${s}`, async () => (await rheo.lag(s, 'g').catch(() => null))?.lag === 0, 60_000);
      // The blocking reads came back: an append after the kills still wakes each idle group.
      for (const s of streams) {
        const [e] = await rheo.append(s, { id: `last-${s}`, payload: 'last' }).then((x) => [x]);
        appended.push(e.id);
      }
      await until('the last events', () => streams.every((s) => handled.has(`last-${s}`)), 60_000);
    } finally {
      for (const g of groups) await g.drain(5000);
    }
    expect(new Set(handled.keys())).toEqual(new Set(appended));
    for (const s of streams) {
      await until(`lag 0 again on ${s}`, async () => (await rheo.lag(s, 'g')).lag === 0, 60_000);
      expect(await rheo.groupInfo(s, 'g')).toMatchObject({ lag: { lag: 0 }, inflight: 0, deadLetters: 0 });
    }
    await rheo.close();
    await deleteClusterKeys(p);
  }, 120_000);
});

/** Kill every connection named `name` on every master; returns how many. */
async function killConnections(name: string): Promise<number> {
  let n = 0;
  for (const m of all) {
    const c = nodeClient(m.port);
    try {
      const ids = String(await c.client('LIST'))
        .split('\n')
        .filter((line) => line.includes(` name=${name} `))
        .map((line) => /\bid=(\d+)/.exec(line)![1]);
      for (const id of ids) await c.client('KILL', 'ID', id);
      n += ids.length;
    } finally {
      c.disconnect();
    }
  }
  return n;
}
