import { RheoError } from '../../core/errors';
import { hostPort, urlTarget } from '../target';
import { isCluster, nodeKey, slotOwner } from './cluster';
import { CREATED_CLIENT_DEFAULTS, CREATED_CLUSTER_DEFAULTS, disconnect, loadIoredis, loadIoredisCluster } from './connection';
import type { RedisContext } from './context';
import type { RedisLink } from './errors';
import type { RedisClient, RedisClientOptions, RedisCluster, RedisClusterNode, RedisClusterOptions, RedisCommands } from './external';
import { layoutKey, registryKey } from './keys';
import { BASE_LAYOUT, checkLayout, DELAYED_LAYOUT, FLOW_LAYOUT } from './layout';
import type { RedisSettings, RedisTarget } from './options';

/**
 * The backend's client (or cluster): created on first use from the options, or
 * borrowed; watched, so an outage message names the server and the connection's
 * last error (it is the {@link RedisLink} of errors.ts); closed once, and only when
 * the backend created it.
 */
export class RedisConnection implements RedisLink {
  /** The backend created the client (from url/options, or a cluster from its nodes), so it closes it. */
  readonly owned: boolean;
  /** A client, or a cluster (ioredis `Cluster`: `isCluster`). */
  private current?: RedisClient | RedisCluster;
  private ended = false;
  /** The owned connection's last error while it is down (ioredis reports a refusal only as an event). */
  private connectionError?: Error;

  constructor(private readonly target: RedisTarget) {
    this.owned = target.client === undefined && (target.cluster === undefined || Array.isArray(target.cluster));
    this.current = target.client ?? (Array.isArray(target.cluster) ? undefined : target.cluster);
  }

  /** Whether this backend runs on a Redis Cluster. */
  get clustered(): boolean {
    return this.target.cluster !== undefined;
  }

  /** Whether the backend was closed: nothing goes out any more. */
  get closed(): boolean {
    return this.ended;
  }

  /** The client or cluster every call goes through, created on first use; `backend_unavailable` once closed. */
  client(): RedisClient | RedisCluster {
    if (this.ended) throw new RheoError('backend_unavailable', 'the redis backend is closed');
    if (!this.current && Array.isArray(this.target.cluster)) {
      const Cluster = loadIoredisCluster();
      const given = this.target.clusterOptions ?? {};
      const opts: RedisClusterOptions = {
        ...CREATED_CLUSTER_DEFAULTS,
        ...given,
        redisOptions: { ...CREATED_CLUSTER_DEFAULTS.redisOptions, ...given.redisOptions },
      };
      this.current = new Cluster(this.target.cluster, opts);
      this.watch(this.current);
    }
    if (!this.current) {
      const IORedis = loadIoredis();
      const opts = { ...CREATED_CLIENT_DEFAULTS, ...this.target.options };
      this.current = this.target.url ? new IORedis(this.target.url, opts) : new IORedis(opts);
      this.watch(this.current);
    }
    return this.current;
  }

  /**
   * Failures surface through each call as RheoError (the listener keeps ioredis from
   * logging them as unhandled); the last one is kept for those messages until the
   * connection is ready again.
   */
  private watch(client: RedisClient | RedisCluster): void {
    client.on('error', (err) => {
      this.connectionError = err as Error;
    });
    client.on('ready', () => {
      this.connectionError = undefined;
    });
  }

  lastError(): Error | undefined {
    return this.connectionError;
  }

  /** `at host:port[, db n]` or `cluster host:port, ...`: the server(s), never credentials. */
  where(): string {
    if (this.target.cluster !== undefined) {
      const given = Array.isArray(this.target.cluster)
        ? this.target.cluster.map((n) => clusterNodeName(n))
        : this.target.cluster.nodes('master').map(nodeKey);
      const shown = given.length > 3 ? `${given.slice(0, 3).join(', ')} (+${given.length - 3})` : given.join(', ');
      return `cluster ${shown || '(nodes not known yet)'}`;
    }
    // A borrowed ioredis client exposes the options it was built with (host, port, db).
    const o: RedisClientOptions = this.target.options ?? (this.current as { options?: RedisClientOptions } | undefined)?.options ?? {};
    const fromUrl = this.target.url ? urlTarget(this.target.url) : null;
    const host = fromUrl?.host ?? hostPort(o.host, o.port, { host: 'localhost', port: 6379 });
    const db = fromUrl?.database ?? (o.db === undefined ? undefined : String(o.db));
    return `at ${host}${db && db !== '0' ? `, db ${db}` : ''}`;
  }

  /** The client, connected (a lazy one connects now). */
  async open(): Promise<RedisClient | RedisCluster> {
    const client = this.client();
    if (client.status === 'wait') {
      try {
        await client.connect();
      } catch (err) {
        // A client we own that never came up is dropped (its reconnect loop stopped);
        // the next init() starts over with a fresh one.
        if (this.owned) {
          client.disconnect();
          this.current = undefined;
        }
        throw err;
      }
    }
    return client;
  }

  /** Refuse every call from now on and close the client if the backend created it (a borrowed one is the host's). */
  close(): Promise<void> {
    this.ended = true;
    return this.owned && this.current ? disconnect(this.current) : Promise.resolve();
  }
}

/**
 * The data layout under the prefix at start-up (layout.ts): recorded (`install: 'auto'`),
 * or only read and required (`'none'`); a newer one than this code knows refuses it.
 */
export async function checkStoredLayout(ctx: RedisContext, client: RedisCommands, install: RedisSettings['install']): Promise<void> {
  if (install === 'none') await requireLayout(ctx, client);
  else await recordLayout(ctx);
}

/**
 * Redis's own time (`TIME`), ms: what the store clock measures against, never on an operation's
 * path. On a cluster, the node ioredis sends a keyless command to: masters are taken to share
 * one time source (NTP), as they must for each other's failovers anyway.
 */
export async function storeTime(ctx: RedisContext): Promise<number> {
  const [seconds, micros] = await ctx.call('read', (redis) => redis.time());
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}

/**
 * The connection that runs the scripts of `stream`: on a cluster, the cluster's own
 * connection to the master that owns the stream's slot, as the cluster last learned
 * it (after a script of the stream returned, the node that ran it), so a command sent
 * on it right after (`WAIT` for replicas, say) reaches that node on the connection
 * the script's writes went through; on one server, the client. `backend_unavailable`
 * when the cluster does not know the slot's owner (not connected yet).
 */
export function streamNode(ctx: RedisContext, stream: string): RedisClient {
  const c = ctx.redis();
  if (!isCluster(c)) return c;
  const node = slotOwner(c, ctx.keys(stream).meta);
  if (!node) throw new RheoError('backend_unavailable', `redis cluster: no known node serves the slot of stream "${stream}"`);
  return node;
}

/**
 * Record the layout this code writes under the prefix (layout.ts), unless one at
 * least as new is recorded; a newer one refuses this process before it writes
 * anything it could get wrong.
 */
async function recordLayout(ctx: RedisContext): Promise<void> {
  const recorded = await ctx.scripts.callScript('layout', [layoutKey(ctx.prefix)], [BASE_LAYOUT]);
  checkLayout(recorded, ctx.prefix);
}

/**
 * `install: 'none'`: read the recorded layout (refusing a newer one) and write
 * nothing. Data of layout 1 has no layout key, only its registry of streams; a
 * prefix with neither holds no nestjs-rheo data.
 */
async function requireLayout(ctx: RedisContext, client: RedisCommands): Promise<void> {
  const recorded = await client.get(layoutKey(ctx.prefix));
  if (recorded !== null) return checkLayout(recorded, ctx.prefix);
  if ((await client.exists(registryKey(ctx.prefix))) === 1) return;
  throw new RheoError(
    'failed',
    `Redis prefix "${ctx.prefix}" holds no nestjs-rheo data (neither ${layoutKey(ctx.prefix)} nor ${registryKey(ctx.prefix)} exists): ` +
      "check the prefix (the default is rheo); with install: 'none' nothing is written to it",
  );
}

/**
 * Before the first delayed event this process writes: record layout 3 under the
 * prefix (layout.ts), so code that would deliver delayed events at once refuses
 * the prefix from then on. Once per process; a prefix that never delays an event
 * stays at layout 2.
 */
export async function recordDelayedLayout(ctx: RedisContext): Promise<void> {
  if (ctx.delayedLayout) return;
  const recorded = await ctx.call('write', () => ctx.scripts.callScript('layout', [layoutKey(ctx.prefix)], [DELAYED_LAYOUT]));
  checkLayout(recorded, ctx.prefix);
  ctx.delayedLayout = true;
}

/**
 * Before the first group with a flow limit this process writes (createGroup, updateGroup):
 * record layout 4 under the prefix (layout.ts), so code that knows nothing of key places and
 * group-wide limits refuses the prefix from then on. Once per process.
 */
export async function recordFlowLayout(ctx: RedisContext): Promise<void> {
  if (ctx.flowLayout) return;
  const recorded = await ctx.call('write', () => ctx.scripts.callScript('layout', [layoutKey(ctx.prefix)], [FLOW_LAYOUT]));
  checkLayout(recorded, ctx.prefix);
  ctx.flowLayout = true;
}

/** A startup node as describe() shows it: `host:port`, never credentials. */
function clusterNodeName(node: RedisClusterNode): string {
  const fallback = { host: 'localhost', port: 6379 };
  if (typeof node === 'number') return hostPort(undefined, node, fallback);
  if (typeof node === 'object') return hostPort(node.host, node.port, fallback);
  if (/^rediss?:\/\//.test(node)) return urlTarget(node)?.host ?? 'a cluster node';
  return /^[^@]*$/.test(node) ? node : 'a cluster node';
}
