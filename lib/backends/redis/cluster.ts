import { disconnect, SLOT_BLOCKER_OVERRIDES, sleep } from './connection';
import type { RedisCluster, RedisClusterNodeClient, RedisCommands } from './external';
import { WakeListener } from './wake-listener';

/** CRC16-XMODEM (polynomial 0x1021, initial 0), the hash Redis Cluster computes key slots with. */
function crc16(text: string): number {
  let crc = 0;
  for (const byte of Buffer.from(text)) {
    crc ^= byte << 8;
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc;
}

/**
 * The cluster slot (0-16383) of a key, as Redis computes it: of the hash tag (the
 * text between the first `{` and the next `}`) when it is not empty, else of the
 * whole key. Every key of a stream carries the escaped stream name as its tag
 * (keys.ts), so a stream has one slot.
 */
export function keySlot(key: string): number {
  const open = key.indexOf('{');
  if (open >= 0) {
    const close = key.indexOf('}', open + 1);
    if (close > open + 1) return crc16(key.slice(open + 1, close)) % 16384;
  }
  return crc16(key) % 16384;
}

/** Whether a client is an ioredis `Cluster`. */
export function isCluster(client: RedisCommands | undefined): client is RedisCluster {
  return (client as { isCluster?: unknown } | undefined)?.isCluster === true;
}

/** `host:port` of a node connection, as ioredis keys its slot table. */
export function nodeKey(node: RedisClusterNodeClient): string {
  return `${String(node.options.host ?? '127.0.0.1')}:${String(node.options.port ?? 6379)}`;
}

/**
 * The cluster's own connection to the master that owns `key`'s slot, as the cluster
 * last learned the slot table (it updates it on every MOVED, and every
 * `slotsRefreshInterval`); undefined while the slot's owner is not known. It is the
 * connection ioredis sends that key's commands on, so a command sent on it right
 * after a script (`WAIT`, for one) runs on the same node and the same connection.
 */
export function slotOwner(cluster: RedisCluster, key: string): RedisClusterNodeClient | undefined {
  const owner = cluster.slots[keySlot(key)]?.[0];
  if (owner === undefined) return undefined;
  return cluster.nodes('all').find((n) => nodeKey(n) === owner);
}

/** Drop a slot's listener after it has had no waiter this long. */
const IDLE_MS = 60_000;
/** How often idle listeners are looked for (on the next wait after this long). */
const SWEEP_MS = 10_000;

interface SlotListener {
  /** `host:port` of the node the blocking connection is open to. */
  node: string;
  blocker: RedisClusterNodeClient;
  listener: WakeListener;
  usedAt: number;
}

/**
 * The cluster's wake-ups. A blocking `XREAD` over several keys must name keys of
 * ONE slot (CROSSSLOT otherwise), and it holds its connection for the whole block,
 * so the cluster client's shared connection to a node must never carry one. Each
 * slot that has waiters gets its own blocking connection, opened to the master that
 * owns the slot (a {@link WakeListener} over it, multiplexing the waits of every
 * group of the streams in that slot):
 *
 * - A wait for a slot whose owner changed (a failover, a resharding: the cluster
 *   client learned it from a MOVED or its periodic refresh) closes the old slot
 *   listener, releasing its waiters, and opens one to the new owner.
 * - A blocking read that fails (the node died, the slot moved and the node answers
 *   MOVED, the connection was killed) ends its listener: its waiters are released
 *   (a wait is only a hint: they fetch and wait again), the cluster is asked to
 *   refresh its slot table, and the next wait opens a new connection to whichever
 *   node owns the slot then. These connections never reconnect by themselves.
 * - A slot nobody waited on for a minute has its connection closed.
 *
 * So a process holds one blocking connection per slot it waits on (about one per
 * stream it consumes), not one per node. See docs/redis.md, "Redis Cluster".
 */
export class ClusterWakeListeners {
  private readonly bySlot = new Map<number, SlotListener>();
  private sweptAt = Date.now();
  private closed = false;

  constructor(private readonly cluster: () => RedisCluster) {}

  /** Resolve when `key` gets an entry newer than `lastId`, after `timeoutMs`, on abort, or when the slot's listener ends. */
  wait(key: string, lastId: string, timeoutMs: number, signal: AbortSignal): Promise<void> {
    if (this.closed || signal.aborted) return Promise.resolve();
    this.sweep();
    const cluster = this.cluster();
    const slot = keySlot(key);
    const owner = slotOwner(cluster, key);
    // Slot table not known yet (connecting): a plain poll.
    if (!owner) return sleep(timeoutMs, signal);
    const node = nodeKey(owner);
    let entry = this.bySlot.get(slot);
    if (entry && entry.node !== node) {
      this.drop(slot, entry);
      entry = undefined;
    }
    if (!entry) entry = this.open(slot, owner, node);
    entry.usedAt = Date.now();
    return entry.listener.wait(key, lastId, timeoutMs, signal);
  }

  /** The slots with a blocking connection now, and the node (`host:port`) each is open to (tests look). */
  get slots(): Array<{ slot: number; node: string }> {
    return [...this.bySlot.entries()].map(([slot, e]) => ({ slot, node: e.node }));
  }

  /** Release every waiter and close every blocking connection. */
  async close(): Promise<void> {
    this.closed = true;
    const closing = [...this.bySlot.entries()].map(([slot, entry]) => this.drop(slot, entry));
    await Promise.all(closing);
  }

  private open(slot: number, owner: RedisClusterNodeClient, node: string): SlotListener {
    const blocker = owner.duplicate(SLOT_BLOCKER_OVERRIDES) as RedisClusterNodeClient;
    const entry: SlotListener = {
      node,
      blocker,
      usedAt: Date.now(),
      // CLIENT UNBLOCK goes to the same node, on the cluster's own connection to it.
      listener: new WakeListener(
        blocker,
        (id) => owner.client('UNBLOCK', id),
        () => this.broken(slot, entry),
      ),
    };
    // A connection that ended while nobody waited is forgotten at once.
    blocker.once('end', () => {
      if (this.bySlot.get(slot) === entry && entry.listener.idle) this.bySlot.delete(slot);
    });
    this.bySlot.set(slot, entry);
    return entry;
  }

  /** The listener's blocking read failed: forget it (its waiters are released by the listener) and refresh the slot table. */
  private broken(slot: number, entry: SlotListener): void {
    if (this.bySlot.get(slot) === entry) this.bySlot.delete(slot);
    void disconnect(entry.blocker);
    if (this.closed) return;
    try {
      this.cluster().refreshSlotsCache();
    } catch {
      // The cluster client is closing: nothing to refresh.
    }
  }

  private drop(slot: number, entry: SlotListener): Promise<void> {
    if (this.bySlot.get(slot) === entry) this.bySlot.delete(slot);
    entry.listener.close();
    return disconnect(entry.blocker);
  }

  private sweep(): void {
    const now = Date.now();
    if (now - this.sweptAt < SWEEP_MS) return;
    this.sweptAt = now;
    for (const [slot, entry] of [...this.bySlot.entries()]) {
      if (entry.listener.idle && now - entry.usedAt > IDLE_MS) void this.drop(slot, entry);
    }
  }
}
