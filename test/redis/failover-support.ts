// Redis servers of their own for the tests that kill them (cluster-failover.spec.ts,
// durability-wait.spec.ts) or change what every client of the server sees (CLIENT
// PAUSE, SCRIPT FLUSH, CONFIG SET: backend.spec.ts, durability.spec.ts): never a node
// of the shared servers (6379, the cluster on 7100-7105) that other test files use.
// Ports are picked free at start, so a run never meets a leftover of another, and a
// file with a server of its own can run beside the others.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Redis from 'ioredis';
import { until } from '../support/until';

/** The cluster helper's starter: RHEO_CLUSTER_PORT (first of 6 ports) and RHEO_CLUSTER_DIR choose where. */
const CLUSTER_SCRIPT = join(__dirname, '..', '..', 'scripts', 'redis-cluster.sh');

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** The first of `count` consecutive ports from `from` (stepping by 10) that are free, with their cluster bus ports (+10000). */
export async function freePortBase(from: number, count: number): Promise<number> {
  for (let base = from; base < from + 1000; base += 10) {
    let free = true;
    for (let i = 0; i < count && free; i++) free = (await portFree(base + i)) && (await portFree(base + i + 10000));
    if (free) return base;
  }
  throw new Error(`no ${count} free ports (and bus ports) between ${from} and ${from + 1000}`);
}

/** Run `fn` on a short-lived connection to 127.0.0.1:port that fails at once when nothing answers. */
export async function onNode<T>(port: number, fn: (redis: Redis) => Promise<T>): Promise<T> {
  const redis = new Redis({
    host: '127.0.0.1',
    port,
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    return await fn(redis);
  } finally {
    redis.disconnect();
  }
}

/** Whether a server answers PING on the port. */
export async function answers(port: number): Promise<boolean> {
  return onNode(port, async (r) => (await r.ping()) === 'PONG').catch(() => false);
}

/** SIGKILL the server on `port` (its pid from INFO server) and wait until it no longer answers. */
export async function killServer(port: number): Promise<number> {
  const info = await onNode(port, (r) => r.info('server'));
  const pid = Number(/process_id:(\d+)/.exec(info)?.[1]);
  if (!Number.isSafeInteger(pid) || pid <= 0) throw new Error(`no process_id in INFO server of port ${port}`);
  process.kill(pid, 'SIGKILL');
  await until(`the server on port ${port} (pid ${pid}) to die`, async () => !(await answers(port)), 60_000);
  return pid;
}

/** One line of CLUSTER NODES. */
export interface ClusterNodeInfo {
  id: string;
  port: number;
  master: boolean;
  /** For a replica: its master's id. */
  masterId?: string;
  /** Flagged fail or fail? by the node that answered. */
  failing: boolean;
  slots: Array<[number, number]>;
}

function parseClusterNodes(text: string): ClusterNodeInfo[] {
  return text
    .trim()
    .split('\n')
    .map((line) => {
      const [id, address, flags, masterId, , , , , ...slots] = line.trim().split(' ');
      const flagList = flags.split(',');
      return {
        id,
        port: Number(/:(\d+)@/.exec(address)?.[1]),
        master: flagList.includes('master'),
        ...(masterId !== '-' ? { masterId } : {}),
        failing: flagList.includes('fail') || flagList.includes('fail?'),
        slots: slots
          .filter((s) => /^\d+(-\d+)?$/.test(s))
          .map((s) => {
            const [a, b] = s.split('-').map(Number);
            return [a, b ?? a] as [number, number];
          }),
      };
    });
}

/**
 * A Redis Cluster of 3 masters and 3 replicas of its own, started with the project's
 * scripts/redis-cluster.sh on free ports and a temporary folder (cluster-node-timeout
 * 2000 ms, appendonly everysec), for a test that kills its nodes. `stop()` shuts it
 * down and removes the folder.
 */
export class TestCluster {
  private constructor(
    readonly ports: number[],
    private readonly dir: string,
  ) {}

  static async start(): Promise<TestCluster> {
    const first = await freePortBase(Number(process.env.RHEO_FAILOVER_CLUSTER_PORT ?? 7200), 6);
    const dir = mkdtempSync(join(tmpdir(), 'rheo-failover-'));
    const cluster = new TestCluster(
      Array.from({ length: 6 }, (_, i) => first + i),
      dir,
    );
    try {
      await cluster.script();
    } catch (err) {
      await cluster.stop();
      throw err;
    }
    return cluster;
  }

  /** Seed nodes for an ioredis Cluster. */
  get seeds(): Array<{ host: string; port: number }> {
    return this.ports.map((port) => ({ host: '127.0.0.1', port }));
  }

  /** Run the starter: starts any node that does not answer (a killed one rejoins as a replica) and waits until healthy. */
  heal(): Promise<void> {
    return this.script();
  }

  async stop(): Promise<void> {
    try {
      await this.script('stop');
    } finally {
      rmSync(this.dir, { recursive: true, force: true });
    }
  }

  /** CLUSTER NODES as seen by the first node that answers (skipping `except`). */
  async nodes(except: number[] = []): Promise<ClusterNodeInfo[]> {
    for (const port of this.ports) {
      if (except.includes(port)) continue;
      const text = await onNode(port, (r) => r.call('CLUSTER', 'NODES') as Promise<string>).catch(() => null);
      if (text) return parseClusterNodes(text);
    }
    throw new Error(`no node of the cluster on ${this.ports.join(', ')} answers`);
  }

  /** The slot of a key (CLUSTER KEYSLOT). */
  async slotOf(key: string): Promise<number> {
    return Number(await onNode(this.ports[0], (r) => r.call('CLUSTER', 'KEYSLOT', key)));
  }

  /** The master that owns `slot`, as the cluster sees it now. */
  async masterOf(slot: number, except: number[] = []): Promise<ClusterNodeInfo> {
    const owner = (await this.nodes(except)).find((n) => n.master && !n.failing && n.slots.some(([a, b]) => slot >= a && slot <= b));
    if (!owner) throw new Error(`no live master owns slot ${slot}`);
    return owner;
  }

  /** Wait until a node other than `killed` is master of `slot` and every live node reports cluster_state:ok. */
  async waitForPromotion(slot: number, killed: number): Promise<ClusterNodeInfo> {
    let promoted: ClusterNodeInfo | undefined;
    await until(
      `a replica to take over slot ${slot} from the master on port ${killed}`,
      async () => {
        promoted = await this.masterOf(slot, [killed]).catch(() => undefined);
        if (!promoted || promoted.port === killed) return false;
        for (const port of this.ports) {
          if (port === killed) continue;
          const info = await onNode(port, (r) => r.call('CLUSTER', 'INFO') as Promise<string>).catch(() => '');
          if (!info.includes('cluster_state:ok')) return false;
        }
        return true;
      },
      30_000,
    );
    return promoted!;
  }

  private script(...args: string[]): Promise<void> {
    return new Promise((resolve, reject) => {
      execFile(
        'bash',
        [CLUSTER_SCRIPT, ...args],
        { env: { ...process.env, RHEO_CLUSTER_PORT: String(this.ports[0]), RHEO_CLUSTER_DIR: this.dir }, timeout: 90_000 },
        (err, _stdout, stderr) =>
          err
            ? reject(
                new Error(`scripts/redis-cluster.sh ${args.join(' ')} on ports ${this.ports.join(', ')} failed: ${err.message}\n${stderr}`),
              )
            : resolve(),
      );
    });
  }
}

/** A port the kernel has just handed out free (listening on 0): no scan, so two files starting at once do not pick the same. */
function kernelPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/**
 * One redis-server, a child of this process on 127.0.0.1 with a temporary folder of its
 * own, no RDB snapshots and appendonly no (`args` add to those or override them): for a
 * test file that changes what every client of its server sees, or kills it. Without a
 * `port`, the kernel picks a free one. `stop()` kills it and removes the folder.
 */
export class RedisServer {
  private constructor(
    readonly port: number,
    private readonly child: ChildProcess,
    private readonly dir: string,
  ) {}

  /** The server answers, and it is this one (its pid): a port taken meanwhile by another start is tried again, elsewhere. */
  static async start(options: { port?: number; args?: string[] } = {}): Promise<RedisServer> {
    for (let attempt = 1; ; attempt++) {
      const port = options.port ?? (await kernelPort());
      const server = RedisServer.spawn(port, options.args ?? []);
      try {
        await server.ready();
        return server;
      } catch (err) {
        await server.stop();
        if (options.port !== undefined || attempt === 5 || !(err instanceof PortTaken)) throw err;
      }
    }
  }

  /** `redis://127.0.0.1:<port>` */
  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** SIGKILL the server: no shutdown, no save. */
  kill(): void {
    this.child.kill('SIGKILL');
  }

  async stop(): Promise<void> {
    const child = this.child;
    // No pid: it never started (no redis-server), and no 'exit' will come.
    if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }

  private static spawn(port: number, args: string[]): RedisServer {
    const dir = mkdtempSync(join(tmpdir(), 'rheo-redis-'));
    const child = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, ...args],
      { stdio: 'ignore' },
    );
    return new RedisServer(port, child, dir);
  }

  private ready(): Promise<void> {
    const { child, port } = this;
    return new Promise((resolve, reject) => {
      let failed = false;
      const fail = (err: Error) => {
        failed = true;
        reject(err);
      };
      const onExit = () => fail(new PortTaken(port));
      const onError = (err: Error) =>
        fail(new Error(`redis-server could not be started on port ${port} (${err.message}): install Debian's redis-server`));
      child.once('exit', onExit);
      child.once('error', onError);
      until(
        `redis-server on port ${port} to answer`,
        // Its pid: on a port another start took meanwhile, that server answers and ours exits (address in use).
        async () => failed || (await onNode(port, (r) => r.info('server'))).includes(`process_id:${child.pid}\r\n`),
        60_000,
      )
        .then(() => resolve(), reject)
        .finally(() => {
          child.off('exit', onExit);
          child.off('error', onError);
        });
    });
  }
}

/** redis-server exited before it answered: on a free port, that is the port taken since it was picked. */
class PortTaken extends Error {
  constructor(port: number) {
    super(`redis-server on port ${port} exited at once (the port was taken)`);
  }
}

/**
 * A standalone master and its replica, children of this process on free ports
 * (appendonly yes): for WAIT with and without a replica to confirm it.
 */
export class ReplicatedPair {
  private constructor(
    readonly master: RedisServer,
    private readonly replica: RedisServer,
  ) {}

  get masterPort(): number {
    return this.master.port;
  }

  static async start(): Promise<ReplicatedPair> {
    const first = await freePortBase(Number(process.env.RHEO_PAIR_PORT ?? 7300), 2);
    const aof = ['--appendonly', 'yes'];
    const master = await RedisServer.start({ port: first, args: aof });
    let replica: RedisServer | undefined;
    try {
      replica = await RedisServer.start({ port: first + 1, args: [...aof, '--replicaof', '127.0.0.1', String(first)] });
      await until(
        'the replica to sync',
        async () => (await onNode(first + 1, (r) => r.info('replication')).catch(() => '')).includes('master_link_status:up'),
        60_000,
      );
    } catch (err) {
      await Promise.all([master.stop(), replica?.stop()]);
      throw err;
    }
    return new ReplicatedPair(master, replica);
  }

  /** SIGKILL the replica and wait until the master no longer counts it. */
  async killReplica(): Promise<void> {
    this.replica.kill();
    await until(
      'the master to lose its replica',
      async () => (await onNode(this.master.port, (r) => r.info('replication'))).includes('connected_slaves:0'),
      60_000,
    );
  }

  async stop(): Promise<void> {
    await Promise.all([this.master.stop(), this.replica.stop()]);
  }
}
