import { checkClock, type Clock, storeClock } from '../../core/clock';
import { RheoError } from '../../core/errors';
import { checkKeys, keySet } from '../../core/validate';
import { isCluster } from './cluster';
import { CREATED_CLIENT_DEFAULTS, CREATED_CLUSTER_DEFAULTS } from './connection';
import type { RedisClient, RedisClientOptions, RedisCluster, RedisClusterNode, RedisClusterOptions, RedisCommands } from './external';
import { checkPrefix } from './keys';
import { DEFAULT_QUERY_SCAN_LIMIT } from './log-scan';

/**
 * Options of {@link redisBackend}: `url` and/or `options` (the backend creates its client), or `client` (borrowed),
 * or `cluster` (a Redis Cluster: its startup nodes, or a Cluster client to borrow). None: localhost:6379.
 */
export interface RedisBackendOptions {
  /** `redis://[user:password@]host:port[/db]` or `rediss://...`; the backend creates (and later closes) its client. */
  url?: string;
  /**
   * A connected or lazy ioredis 6 client to borrow: it is never closed by the
   * backend, and its options (offline queue, retries) are left as they are.
   * (Typed by the shape the backend uses, external.ts, so these typings need no ioredis.)
   */
  client?: RedisClient;
  /** ioredis options for a client the backend creates (merged over the fail-fast defaults). */
  options?: RedisClientOptions;
  /**
   * A Redis Cluster: its startup nodes (`'host:port'`, a port, or `{ host, port }`; the
   * backend creates, and later closes, an ioredis `Cluster`), or an ioredis `Cluster` to
   * borrow (never closed, its options left as they are). Every script runs on the master
   * that owns its stream's slot. Cannot be combined with `url`, `options` or `client`.
   * See docs/redis.md, "Redis Cluster".
   */
  cluster?: RedisClusterNode[] | RedisCluster;
  /** ioredis `ClusterOptions` for a cluster the backend creates from `cluster` nodes (merged over the fail-fast defaults). */
  clusterOptions?: RedisClusterOptions;
  /** Key prefix, default `rheo`. No braces or whitespace. */
  prefix?: string;
  /**
   * `'auto'` (default): record the data layout this release writes under the prefix
   * at start-up (the `<prefix>:layout` key). `'none'`: write nothing at start-up:
   * the prefix must already hold nestjs-rheo data (a recorded layout, or registered
   * streams), else start-up fails with `failed`. What an inspecting tool uses (the
   * `rheo` CLI), so a mistyped prefix is refused, not claimed.
   */
  install?: 'auto' | 'none';
  /**
   * Time source for timestamps, lease expiry, retry delays and delayed events. Default: the
   * store's time (`storeClock()`: this process's clock corrected by an offset measured with
   * Redis `TIME`, docs/adr/041). Any other clock is used as it is.
   */
  clock?: Clock;
  /**
   * Log entries one query call may read to fill its page (there are no secondary
   * indexes: a query reads the log in query order and filters here). A query that
   * reads this many with its page still short fails with invalid_argument on `where`.
   * Default 1,000,000 (docs/redis.md, "Queries").
   */
  queryScanLimit?: number;
  /**
   * Replicated appends: an append returns only once `replicas` replicas of the master
   * that ran it confirm they have it (Redis `WAIT`, on the same connection, after the
   * append); otherwise it throws `ambiguous` (the append may have been applied). Without
   * it an append returns once the master has it, and a failover can lose it. Not strong
   * consistency: see docs/redis.md ("Durability and replicas") and docs/adr/033.
   */
  durability?: RedisDurability;
}

/** The `durability` option of {@link redisBackend}. */
export interface RedisDurability {
  /** Replicas that must confirm an append before it returns: a whole number of at least 1. */
  replicas: number;
  /**
   * How long an append waits for them (WAIT's timeout), in ms; default 1000. Below the
   * client's `commandTimeout` (5000 on clients the backend creates).
   */
  timeoutMs?: number;
}

/** Where the backend connects: the options that name its client or cluster, checked together ({@link checkOptions}). */
export type RedisTarget = Pick<RedisBackendOptions, 'url' | 'client' | 'options' | 'cluster' | 'clusterOptions'>;

/** What the backend runs with, from its options once checked ({@link checkOptions}). */
export interface RedisSettings {
  /** The client or cluster to borrow, or what to create one from (lifecycle.ts `RedisConnection`). */
  target: RedisTarget;
  /** What start-up writes under the prefix (RedisBackendOptions.install). */
  install: 'auto' | 'none';
  /** The key prefix every key of the backend starts with. */
  prefix: string;
  clock: Clock;
  /** Log entries one query call may read (RedisBackendOptions.queryScanLimit). */
  queryScanLimit: number;
  /** Replicas each append waits for, and for how long; undefined: none. */
  durability?: Readonly<Required<RedisDurability>>;
}

const OPTION_KEYS = keySet('a redisBackend option', [
  'url',
  'client',
  'options',
  'cluster',
  'clusterOptions',
  'prefix',
  'install',
  'clock',
  'queryScanLimit',
  'durability',
]);
const DURABILITY_KEYS = keySet('a durability option', ['replicas', 'timeoutMs']);

/** Default of `durability.timeoutMs`. */
const DEFAULT_DURABILITY_TIMEOUT_MS = 1000;

/**
 * The options of {@link redisBackend}, checked (the first thing wrong refuses them, as
 * `invalid_argument` on its field), and what the backend runs with taken from them.
 */
export function checkOptions(options: RedisBackendOptions): RedisSettings {
  if (typeof options !== 'object' || options === null) throw RheoError.invalid('options', 'must be an object');
  // Its fields are named as they stand (`url`, `durability.replicas`): `options` is one of them (ioredis options).
  checkKeys('', options, OPTION_KEYS);
  checkTarget(options);
  const queryScanLimit = options.queryScanLimit ?? DEFAULT_QUERY_SCAN_LIMIT;
  if (!Number.isSafeInteger(queryScanLimit) || queryScanLimit < 1)
    throw RheoError.invalid('queryScanLimit', 'must be a whole number of at least 1');
  const durability = checkDurabilityOption(options);
  const prefix = checkPrefix(options.prefix ?? 'rheo');
  if (options.install !== undefined && options.install !== 'auto' && options.install !== 'none')
    throw RheoError.invalid('install', "must be 'auto' or 'none'");
  if (options.clock !== undefined) checkClock('clock', options.clock);
  const { url, client, options: clientOptions, cluster, clusterOptions } = options;
  return {
    target: { url, client, options: clientOptions, cluster, clusterOptions },
    install: options.install ?? 'auto',
    prefix,
    clock: options.clock ?? storeClock(),
    queryScanLimit,
    durability,
  };
}

/** Where the backend connects: `url`/`options`, a borrowed `client`, or a `cluster`, each only with what fits it. */
function checkTarget(options: RedisBackendOptions): void {
  if (options.cluster !== undefined) {
    const other = (['url', 'options', 'client'] as const).find((k) => options[k] !== undefined);
    if (other) throw RheoError.invalid(other, 'cannot be combined with cluster: give the cluster options in clusterOptions');
    if (Array.isArray(options.cluster)) {
      if (options.cluster.length === 0) throw RheoError.invalid('cluster', 'must name at least one startup node');
    } else if (!isCluster(options.cluster as RedisCommands)) {
      throw RheoError.invalid('cluster', 'must be a list of startup nodes or an ioredis Cluster');
    } else if (options.clusterOptions !== undefined) {
      throw RheoError.invalid('clusterOptions', 'cannot be combined with a borrowed cluster: it is used as it is');
    }
    // Reads from replicas could miss what this process just wrote (replication is asynchronous):
    // an append reads back the events it found stored, a fetch follows a read of the stream.
    const scaleReads = Array.isArray(options.cluster) ? options.clusterOptions?.scaleReads : options.cluster.options?.scaleReads;
    if (scaleReads !== undefined && scaleReads !== 'master') {
      throw RheoError.invalid(
        Array.isArray(options.cluster) ? 'clusterOptions.scaleReads' : 'cluster',
        "must be 'master' (the default): reads from replicas can miss writes just made",
      );
    }
  } else if (options.clusterOptions !== undefined) {
    throw RheoError.invalid('clusterOptions', 'needs cluster (the startup nodes)');
  }
  if (options.client !== undefined && isCluster(options.client)) {
    throw RheoError.invalid('client', 'is an ioredis Cluster: pass it as cluster');
  }
  if (options.client !== undefined) {
    const other = (['url', 'options'] as const).find((k) => options[k] !== undefined);
    if (other) throw RheoError.invalid(other, 'cannot be combined with client: a borrowed client is used as it is');
  }
  if (options.url !== undefined && (typeof options.url !== 'string' || !/^rediss?:\/\//.test(options.url))) {
    throw RheoError.invalid('url', 'must be a redis:// or rediss:// URL');
  }
  if (options.client !== undefined && typeof (options.client as { evalsha?: unknown }).evalsha !== 'function') {
    throw RheoError.invalid('client', 'must be an ioredis client');
  }
}

/**
 * The `durability` option, checked: `replicas` a whole number >= 1, `timeoutMs` a whole
 * number >= 1 (WAIT 0 would wait forever) and, on a client the backend creates, below its
 * `commandTimeout`: a WAIT the client gives up on first would fail as a timed-out command,
 * not as the replicas that did not answer.
 */
function checkDurabilityOption(options: RedisBackendOptions): Required<RedisDurability> | undefined {
  const d = options.durability;
  if (d === undefined) return undefined;
  if (typeof d !== 'object' || d === null) throw RheoError.invalid('durability', 'must be an object: { replicas, timeoutMs? }');
  checkKeys('durability', d, DURABILITY_KEYS);
  if (!Number.isSafeInteger(d.replicas) || d.replicas < 1)
    throw RheoError.invalid('durability.replicas', 'must be a whole number of at least 1 (leave durability out for none)');
  const timeoutMs = d.timeoutMs ?? DEFAULT_DURABILITY_TIMEOUT_MS;
  if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1)
    throw RheoError.invalid('durability.timeoutMs', 'must be a whole number of ms, at least 1');
  // Known only for what the backend creates: a client from url/options, a cluster from its nodes (per node connection).
  const commandTimeout: unknown = Array.isArray(options.cluster)
    ? { ...CREATED_CLUSTER_DEFAULTS.redisOptions, ...options.clusterOptions?.redisOptions }.commandTimeout
    : options.client === undefined && options.cluster === undefined
      ? { ...CREATED_CLIENT_DEFAULTS, ...options.options }.commandTimeout
      : undefined;
  if (typeof commandTimeout === 'number' && timeoutMs >= commandTimeout) {
    throw RheoError.invalid('durability.timeoutMs', `must be below the client's commandTimeout (${commandTimeout} ms)`);
  }
  return { replicas: d.replicas, timeoutMs };
}
