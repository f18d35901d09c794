import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import Redis from 'ioredis';

/** The local cluster's first port (scripts/redis-cluster.sh; RHEO_CLUSTER_PORT moves it). */
export const CLUSTER_PORT = Number(process.env.RHEO_CLUSTER_PORT ?? 7100);
/** Its ports: 3 masters and 3 replicas, in whichever roles they hold now. */
export const CLUSTER_PORTS = [0, 1, 2, 3, 4, 5].map((i) => CLUSTER_PORT + i);
/** The startup nodes the tests give the backend: one is enough, the rest are discovered. */
export const CLUSTER_NODES = [{ host: '127.0.0.1', port: CLUSTER_PORT }];

/**
 * Start the local cluster unless it is up and healthy, with the script CI runs
 * (scripts/redis-cluster.sh): tests never skip for a missing cluster, and fail with
 * the script's own words when it cannot be started.
 */
export function ensureCluster(): void {
  try {
    execFileSync('bash', [join(__dirname, '..', '..', 'scripts', 'redis-cluster.sh')], {
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 120_000,
      env: { ...process.env, RHEO_CLUSTER_PORT: String(CLUSTER_PORT) },
    });
  } catch (err) {
    const e = err as { stderr?: Buffer; message: string };
    throw new Error(`the Redis Cluster for the tests could not be started: ${e.stderr?.toString().trim() || e.message}`, { cause: err });
  }
}

/** A plain connection to one node (not a cluster client): for CLUSTER commands, SCAN, SCRIPT FLUSH. */
export function nodeClient(port: number): Redis {
  return new Redis({ host: '127.0.0.1', port, lazyConnect: false, maxRetriesPerRequest: 1 });
}

export interface Master {
  id: string;
  port: number;
  /** Slot ranges, inclusive. */
  slots: Array<[number, number]>;
}

/** The masters and their slot ranges, as CLUSTER SHARDS on a node that answers reports them. */
export async function masters(): Promise<Master[]> {
  for (const port of CLUSTER_PORTS) {
    const c = nodeClient(port);
    try {
      const shards = (await c.call('CLUSTER', 'SHARDS')) as unknown[][];
      const out: Master[] = [];
      for (const shard of shards) {
        const fields = toMap(shard);
        const ranges = fields.get('slots') as number[];
        const nodes = (fields.get('nodes') as unknown[][]).map(toMap);
        const master = nodes.find((n) => n.get('role') === 'master' && n.get('health') === 'online');
        if (!master || ranges.length === 0) continue;
        const slots: Array<[number, number]> = [];
        for (let i = 0; i + 1 < ranges.length; i += 2) slots.push([Number(ranges[i]), Number(ranges[i + 1])]);
        out.push({ id: String(master.get('id')), port: Number(master.get('port')), slots });
      }
      return out.sort((a, b) => a.slots[0][0] - b.slots[0][0]);
    } catch {
      // This node is down (a failover test ran?): ask the next.
    } finally {
      c.disconnect();
    }
  }
  throw new Error('no node of the test cluster answered CLUSTER SHARDS');
}

/** The master that serves `slot`. */
export function masterOf(all: Master[], slot: number): Master {
  const m = all.find((x) => x.slots.some(([lo, hi]) => slot >= lo && slot <= hi));
  if (!m) throw new Error(`no master serves slot ${slot}`);
  return m;
}

/** Delete every key under `prefix` on every master (SCAN on each, never KEYS). */
export async function deleteClusterKeys(prefix: string): Promise<number> {
  let deleted = 0;
  for (const m of await masters()) {
    const c = nodeClient(m.port);
    try {
      let cursor = '0';
      do {
        const [next, keys] = await c.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
        cursor = next;
        // One DEL per key: keys of different slots cannot share a command.
        for (const key of keys) deleted += await c.del(key);
      } while (cursor !== '0');
    } finally {
      c.disconnect();
    }
  }
  return deleted;
}

/**
 * Move one slot, with its keys, from the master that serves it to `to`, the way
 * `redis-cli --cluster reshard` does: IMPORTING / MIGRATING, MIGRATE the keys in
 * batches, then SETSLOT NODE on both and on every other master.
 */
export async function moveSlot(slot: number, to: Master): Promise<void> {
  const all = await masters();
  const from = masterOf(all, slot);
  if (from.id === to.id) return;
  const src = nodeClient(from.port);
  const dst = nodeClient(to.port);
  try {
    await dst.call('CLUSTER', 'SETSLOT', slot, 'IMPORTING', from.id);
    await src.call('CLUSTER', 'SETSLOT', slot, 'MIGRATING', to.id);
    for (;;) {
      const keys = (await src.call('CLUSTER', 'GETKEYSINSLOT', slot, 100)) as string[];
      if (keys.length === 0) break;
      await src.call('MIGRATE', '127.0.0.1', to.port, '', 0, 5000, 'KEYS', ...keys);
    }
    await dst.call('CLUSTER', 'SETSLOT', slot, 'NODE', to.id);
    await src.call('CLUSTER', 'SETSLOT', slot, 'NODE', to.id);
    for (const other of all.filter((m) => m.id !== from.id && m.id !== to.id)) {
      const c = nodeClient(other.port);
      try {
        await c.call('CLUSTER', 'SETSLOT', slot, 'NODE', to.id);
      } finally {
        c.disconnect();
      }
    }
  } finally {
    src.disconnect();
    dst.disconnect();
  }
}

/** A RESP2 flat `[name, value, name, value, ...]` (or a RESP3 map) as a Map. */
function toMap(reply: unknown): Map<string, unknown> {
  if (reply instanceof Map) return reply as Map<string, unknown>;
  if (!Array.isArray(reply)) return new Map(Object.entries(reply as object));
  const m = new Map<string, unknown>();
  for (let i = 0; i + 1 < reply.length; i += 2) m.set(String(reply[i]), reply[i + 1]);
  return m;
}
