import { backoffDelay } from '../../core/backoff';
import { type Clock, StoreClock, storeClock } from '../../core/clock';
import { RheoError } from '../../core/errors';
import { checkPartition } from '../../core/requests';
import { checkKeys, keySet } from '../../core/validate';
import { newId } from '../../core/ids';
import type { DeadLetter, GroupConfig, GroupInfo, Lag, Lease, Retention, RheoEvent, StreamInfo, TrimResult } from '../../core/types';
import type {
  AppendedEvents,
  Backend,
  BackendDescription,
  CreateGroupRequest,
  ClaimDeadLetter,
  FetchedLeases,
  FetchRequest,
  NewEvent,
  QueryRequest,
  ReadRequest,
  RenewResult,
  ReplayRequest,
  ResolvedStart,
  SettleOp,
  SettleResult,
  TrimRequest,
  WaitRequest,
} from '../backend';
import { appended } from '../../core/appended';
import { createCapabilities } from '../capabilities';
import {
  appendArgs,
  appendOutcomes,
  eventFromEntry,
  eventOfLease,
  fetchedDeadLetters,
  fetchedLeases,
  leaseOf,
  type LeaseRows,
  parseDeadRecord,
} from './codec';
import { ClusterWakeListeners, isCluster, nodeKey, slotOwner } from './cluster';
import {
  BLOCKER_OVERRIDES,
  CREATED_CLIENT_DEFAULTS,
  CREATED_CLUSTER_DEFAULTS,
  disconnect,
  loadIoredis,
  loadIoredisCluster,
  sleep,
} from './connection';
import { runCountDeadLetters } from './dead-letter-count';
import { CallKind, mapRedisError, type RedisLink, scriptDetail } from './errors';
import type {
  RedisClient,
  RedisClientOptions,
  RedisCluster,
  RedisClusterNode,
  RedisClusterOptions,
  RedisCommands,
  RedisPipelineResult,
  RedisStreamEntry,
} from './external';
import { decodeGroupConfig, encodeGroupConfig, STORED_GROUP_FIELD_NAMES } from './group-config';
import { checkPrefix, GroupKeys, KeyCache, layoutKey, META_FIELDS, registryKey, StreamKeys, turnKey } from './keys';
import { BASE_LAYOUT, checkLayout, DELAYED_LAYOUT } from './layout';
import { DEFAULT_QUERY_SCAN_LIMIT, entryId, firstAtOrAfter, scanQuery, seqOf } from './log-scan';
import type { RedisOps } from './ops';
import { runPurge } from './purging';
import { decodeRetention, retentionArgs, setLimits } from './retention';
import { type ScriptCall, ScriptRunner } from './script-runner';
import type { ScriptName } from './scripts';
import { runTrim } from './trimming';
import { WakeListener } from './wake-listener';
import { copyGroupConfig, copyJson, copyStreamInfo, newGroupConfig } from '../copies';
import { claimPastDelays, type ClaimRound } from '../delays';
import { deadLetteredOf, fetched } from '../../core/fetched';
import { hostPort, urlTarget } from '../target';

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
 * How much one script call may do. A script blocks the whole server while it runs,
 * so work that grows with the backlog or with a bulk call is cut into calls of
 * about a millisecond each (docs/adr/014-redis-bounded-scripts.md). Measured on a
 * loaded 2-core machine: ~10 µs per lease claimed or op settled, ~1 µs per record
 * walked, so the slowest call stays well under 10 ms even when the OS preempts it.
 */
/** Delivery records and dead letters one call may walk over or drop (frontier walk, rewind). */
const SLICE = 500;
/** Renew, settle and release ops per script call; the calls of one bulk call go out in one pipeline. */
const OPS_PER_CALL = 100;
/** Leases one fetch script call claims; a larger fetch makes several calls. */
const FETCH_PER_CALL = 100;
/** Events per re-open call (replay by query, redrive by id) and dead letters per redrive-all page. */
const REOPEN_PER_CALL = 100;

/**
 * The Redis Streams backend (ioredis 6). Each partition is a stream whose entry
 * ids are `0-<sequence>`; per-group delivery state lives in hashes and sorted
 * sets next to it, under the stream's hash tag. Every state change (append,
 * claim, renew, settle, frontier advance, replay, reset, redrive) is one Lua
 * script, so a fence check and the write it guards are atomic. Times come from
 * the backend's clock, passed to each script: by default the store's time, the
 * process clock corrected by an offset measured with Redis `TIME` (ADR 041). See docs/redis.md.
 */
export class RedisBackend implements Backend {
  readonly name = 'redis';
  readonly capabilities = createCapabilities({
    guarantees: { durable: true, distributed: true, partitions: true, contiguousFrontier: true, replay: true, orderedPartitions: true },
    mechanisms: { notifications: false, blockingReads: true, batchWrites: true, secondaryIndexes: false, transactionalAppend: false },
  });
  readonly clock: Clock;
  /** The key prefix every key of this backend starts with. */
  readonly prefix: string;
  /** Log entries one query call may read (RedisBackendOptions.queryScanLimit). */
  readonly queryScanLimit: number;
  /** Replicas each append waits for, and for how long (RedisBackendOptions.durability); undefined: none. */
  readonly durability?: Readonly<Required<RedisDurability>>;

  private readonly options: RedisBackendOptions;
  private readonly owned: boolean;
  /** A client, or a cluster (ioredis `Cluster`: `isCluster`). */
  private client?: RedisClient | RedisCluster;
  private blocker?: RedisClient;
  private listener?: WakeListener;
  /** On a cluster: one blocking connection per waited slot, to the node that owns it (cluster.ts). */
  private clusterListeners?: ClusterWakeListeners;
  /** Scripts are loaded on every master of a cluster, on the client otherwise. */
  private readonly scripts = new ScriptRunner(
    () => this.redis(),
    () => {
      const c = this.redis();
      const masters = isCluster(c) ? c.nodes('master') : [];
      return masters.length > 0 ? masters : [c];
    },
  );
  /** Script and plain calls, errors mapped, for the modules that drive multi-call work (trimming.ts, purging.ts). */
  private readonly ops: RedisOps = {
    script: (kind, name, keys, args, on) => this.runScript(kind, name, keys, args, on),
    call: (kind, fn) => this.withMappedErrors(kind, () => fn(this.redis())),
  };
  private ready?: Promise<void>;
  private closed = false;
  /** The owned connection's last error while it is down (ioredis reports a refusal only as an event). */
  private connectionError?: Error;
  /** What an outage message names: the server and that error (errors.ts). */
  private readonly link: RedisLink = { where: () => this.where(), lastError: () => this.connectionError };
  /**
   * Partition counts, creation times and group configs never change once created, so
   * they are cached. A stream's retention can (setRetention, from any process): it is
   * never cached, getStream reads it every time.
   */
  private readonly streamInfos = new Map<string, StreamInfo>();
  private readonly groupConfigs = new Map<string, GroupConfig>();
  /** Bounded: names come from callers, unknown ones included (see KeyCache). */
  private readonly streamKeys: KeyCache;
  /** Wake id returned by the last fetch of each (stream, group): wait() blocks for anything newer. */
  private readonly lastWake = new Map<string, string>();
  /** Layout 3 is recorded under the prefix (recordDelayedLayout): this process may write delayed events. */
  private delayedLayout = false;
  /** What init found wrong with the server's durability settings (see checkDurability). */
  private durabilityWarnings: string[] = [];
  private warned = false;
  /** Stops the store clock's refresh through this backend (a StoreClock only). */
  private detachClock?: () => void;

  constructor(options: RedisBackendOptions = {}) {
    if (typeof options !== 'object' || options === null) throw RheoError.invalid('options', 'must be an object');
    // Its fields are named as they stand (`url`, `durability.replicas`): `options` is one of them (ioredis options).
    checkKeys('', options, OPTION_KEYS);
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
    const scanLimit = options.queryScanLimit ?? DEFAULT_QUERY_SCAN_LIMIT;
    if (!Number.isSafeInteger(scanLimit) || scanLimit < 1)
      throw RheoError.invalid('queryScanLimit', 'must be a whole number of at least 1');
    this.queryScanLimit = scanLimit;
    this.durability = checkDurabilityOption(options);
    this.options = options;
    this.prefix = checkPrefix(options.prefix ?? 'rheo');
    if (options.install !== undefined && options.install !== 'auto' && options.install !== 'none')
      throw RheoError.invalid('install', "must be 'auto' or 'none'");
    this.streamKeys = new KeyCache(this.prefix);
    if (
      options.clock !== undefined &&
      (typeof options.clock !== 'object' || options.clock === null || typeof options.clock.now !== 'function')
    )
      throw RheoError.invalid('clock', 'must be a Clock ({ now(): number })');
    this.clock = options.clock ?? storeClock();
    this.owned = options.client === undefined && (options.cluster === undefined || Array.isArray(options.cluster));
    this.client = options.client ?? (Array.isArray(options.cluster) ? undefined : options.cluster);
  }

  /** Whether this backend runs on a Redis Cluster. */
  get clustered(): boolean {
    return this.options.cluster !== undefined;
  }

  // ------------------------------------------------------------ connection

  private redis(): RedisClient | RedisCluster {
    if (this.closed) throw new RheoError('backend_unavailable', 'the redis backend is closed');
    if (!this.client && Array.isArray(this.options.cluster)) {
      const Cluster = loadIoredisCluster();
      const given = this.options.clusterOptions ?? {};
      const opts: RedisClusterOptions = {
        ...CREATED_CLUSTER_DEFAULTS,
        ...given,
        redisOptions: { ...CREATED_CLUSTER_DEFAULTS.redisOptions, ...given.redisOptions },
      };
      this.client = new Cluster(this.options.cluster, opts);
      this.watchConnection(this.client);
    }
    if (!this.client) {
      const IORedis = loadIoredis();
      const opts = { ...CREATED_CLIENT_DEFAULTS, ...this.options.options };
      this.client = this.options.url ? new IORedis(this.options.url, opts) : new IORedis(opts);
      this.watchConnection(this.client);
    }
    return this.client;
  }

  /**
   * Failures surface through each call as RheoError (the listener keeps ioredis from
   * logging them as unhandled); the last one is kept for those messages until the
   * connection is ready again.
   */
  private watchConnection(client: RedisClient | RedisCluster): void {
    client.on('error', (err) => {
      this.connectionError = err as Error;
    });
    client.on('ready', () => {
      this.connectionError = undefined;
    });
  }

  /** `at host:port[, db n]` or `cluster host:port, ...`: the server(s), never credentials. */
  private where(): string {
    if (this.options.cluster !== undefined) {
      const given = Array.isArray(this.options.cluster)
        ? this.options.cluster.map((n) => clusterNodeName(n))
        : this.options.cluster.nodes('master').map(nodeKey);
      const shown = given.length > 3 ? `${given.slice(0, 3).join(', ')} (+${given.length - 3})` : given.join(', ');
      return `cluster ${shown || '(nodes not known yet)'}`;
    }
    // A borrowed ioredis client exposes the options it was built with (host, port, db).
    const o: RedisClientOptions = this.options.options ?? (this.client as { options?: RedisClientOptions } | undefined)?.options ?? {};
    const fromUrl = this.options.url ? urlTarget(this.options.url) : null;
    const host = fromUrl?.host ?? hostPort(o.host, o.port, { host: 'localhost', port: 6379 });
    const db = fromUrl?.database ?? (o.db === undefined ? undefined : String(o.db));
    return `at ${host}${db && db !== '0' ? `, db ${db}` : ''}`;
  }

  /**
   * The connection that runs the scripts of `stream`: on a cluster, the cluster's own
   * connection to the master that owns the stream's slot, as the cluster last learned
   * it (after a script of the stream returned, the node that ran it), so a command sent
   * on it right after (`WAIT` for replicas, say) reaches that node on the connection
   * the script's writes went through; on one server, the client. `backend_unavailable`
   * when the cluster does not know the slot's owner (not connected yet).
   */
  streamNode(stream: string): RedisClient {
    const c = this.redis();
    if (!isCluster(c)) return c;
    const node = slotOwner(c, this.keys(stream).meta);
    if (!node) throw new RheoError('backend_unavailable', `redis cluster: no known node serves the slot of stream "${stream}"`);
    return node;
  }

  /** Host, port, database number and key prefix (never credentials); on a cluster, its startup nodes. */
  describe(): BackendDescription {
    return { target: `${this.where().replace(/^at /, '')}, prefix ${this.prefix}` };
  }

  async init(): Promise<void> {
    if (this.closed) throw new RheoError('backend_unavailable', 'the redis backend is closed');
    if (!this.ready) {
      this.ready = this.connect().catch((err) => {
        this.ready = undefined;
        throw mapRedisError(err, 'read', this.link);
      });
    }
    return this.ready;
  }

  private async connect(): Promise<void> {
    const client = this.redis();
    if (client.status === 'wait') {
      try {
        await client.connect();
      } catch (err) {
        // A client we own that never came up is dropped (its reconnect loop stopped);
        // the next init() starts over with a fresh one.
        if (this.owned) {
          client.disconnect();
          this.client = undefined;
        }
        throw err;
      }
    }
    await this.scripts.loadAll();
    if (this.options.install === 'none') await this.requireLayout(client);
    else await this.checkLayout();
    await this.checkDurability(client);
    if (this.clock instanceof StoreClock && !this.detachClock) this.detachClock = await this.clock.attach('redis', () => this.storeTime());
  }

  /**
   * Redis's own time (`TIME`), ms: what the store clock measures against, never on an operation's
   * path. On a cluster, the node ioredis sends a keyless command to: masters are taken to share
   * one time source (NTP), as they must for each other's failovers anyway.
   */
  private async storeTime(): Promise<number> {
    const [seconds, micros] = await this.withMappedErrors('read', () => this.redis().time());
    return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  }

  /**
   * Record the layout this code writes under the prefix (layout.ts), unless one at
   * least as new is recorded; a newer one refuses this process before it writes
   * anything it could get wrong.
   */
  private async checkLayout(): Promise<void> {
    const recorded = await this.scripts.callScript('layout', [layoutKey(this.prefix)], [BASE_LAYOUT]);
    checkLayout(recorded, this.prefix);
  }

  /**
   * `install: 'none'`: read the recorded layout (refusing a newer one) and write
   * nothing. Data of layout 1 has no layout key, only its registry of streams; a
   * prefix with neither holds no nestjs-rheo data.
   */
  private async requireLayout(client: RedisCommands): Promise<void> {
    const recorded = await client.get(layoutKey(this.prefix));
    if (recorded !== null) return checkLayout(recorded, this.prefix);
    if ((await client.exists(registryKey(this.prefix))) === 1) return;
    throw new RheoError(
      'failed',
      `Redis prefix "${this.prefix}" holds no nestjs-rheo data (neither ${layoutKey(this.prefix)} nor ${registryKey(this.prefix)} exists): ` +
        "check the prefix (the default is rheo); with install: 'none' nothing is written to it",
    );
  }

  /**
   * Before the first delayed event this process writes: record layout 3 under the
   * prefix (layout.ts), so code that would deliver delayed events at once refuses
   * the prefix from then on. Once per process; a prefix that never delays an event
   * stays at layout 2.
   */
  private async recordDelayedLayout(): Promise<void> {
    if (this.delayedLayout) return;
    const recorded = await this.withMappedErrors('write', () =>
      this.scripts.callScript('layout', [layoutKey(this.prefix)], [DELAYED_LAYOUT]),
    );
    checkLayout(recorded, this.prefix);
    this.delayedLayout = true;
  }

  /**
   * `durable: true` is what the backend can be, not what every server is: Redis
   * acknowledges writes it can still lose (appendonly no: everything since the
   * last snapshot goes on a restart) and may evict keys (any maxmemory-policy but
   * noeviction). Read both once at init; what is wrong goes into one process
   * warning and into every groupInfo's `warnings`. A server that refuses CONFIG
   * (managed services, ACLs) is not an error: durability is then unverified, and
   * said so.
   */
  private async checkDurability(client: RedisCommands): Promise<void> {
    // On a cluster every master is asked (each keeps its own streams); the messages name the node.
    const servers: Array<[RedisCommands, string]> = isCluster(client)
      ? client.nodes('master').map((n) => [n, `the Redis node ${nodeKey(n)}`])
      : [[client, 'the Redis server']];
    const found: string[] = [];
    for (const [server, name] of servers) {
      try {
        const appendonly = await configValue(server, 'appendonly');
        const policy = await configValue(server, 'maxmemory-policy');
        if (appendonly !== 'yes') {
          found.push(
            `${name} runs with appendonly ${appendonly}: writes it acknowledged since its last snapshot (events, acks, dead letters) are lost if it restarts or crashes; set appendonly yes`,
          );
        }
        if (policy !== 'noeviction') {
          found.push(
            `${name}'s maxmemory-policy is ${policy}: under memory pressure it may evict this backend's keys, losing events and group state; set maxmemory-policy noeviction`,
          );
        }
      } catch (err) {
        found.push(
          `durability could not be verified${servers.length > 1 ? ` on ${name}` : ''}: CONFIG GET is not available on this connection (${err instanceof Error ? err.message : String(err)}); make sure the server runs with appendonly yes and maxmemory-policy noeviction`,
        );
      }
    }
    this.durabilityWarnings = found;
    if (found.length > 0 && !this.warned) {
      this.warned = true;
      process.emitWarning(`nestjs-rheo redis backend (prefix "${this.prefix}") may lose acknowledged data: ${found.join('; ')}`, {
        type: 'RheoWarning',
        code: 'RHEO_REDIS_NOT_DURABLE',
      });
    }
  }

  async ping(): Promise<void> {
    if (!this.ready) await this.init();
    try {
      const c = this.redis();
      // A cluster is up when every master it knows answers (each holds a share of the streams).
      const masters = isCluster(c) ? c.nodes('master') : [];
      await (masters.length > 0 ? Promise.all(masters.map((m) => m.ping())) : c.ping());
    } catch (err) {
      const mapped = mapRedisError(err, 'read', this.link);
      if (mapped.code === 'backend_unavailable') throw mapped;
      throw new RheoError('backend_unavailable', `redis ${this.where()} did not answer: ${mapped.message}`, { cause: err });
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.detachClock?.();
    this.listener?.close();
    const closing: Array<Promise<void>> = [];
    if (this.clusterListeners) closing.push(this.clusterListeners.close());
    if (this.blocker) closing.push(disconnect(this.blocker));
    if (this.owned && this.client) closing.push(disconnect(this.client));
    await Promise.all(closing);
  }

  /** Run `fn` (ioredis calls), turning whatever ioredis throws into a RheoError. */
  private async withMappedErrors<T>(kind: CallKind, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      throw mapRedisError(err, kind, this.link);
    }
  }

  /** Run a script, errors mapped; with `on`, a missing stream or group is explained in its terms (see {@link explain}). */
  private async runScript(
    kind: CallKind,
    name: ScriptName,
    keys: string[],
    args: Array<string | number>,
    on?: { stream: string; group?: string },
  ): Promise<unknown> {
    try {
      return await this.withMappedErrors(kind, () => this.scripts.callScript(name, keys, args));
    } catch (err) {
      throw on ? this.explain(err as RheoError, on.stream, on.group) : err;
    }
  }

  private keys(stream: string): StreamKeys {
    return this.streamKeys.get(stream);
  }

  /** Entries in the key-object cache: bounded by its capacity whatever names are looked up. */
  get keyCacheSize(): number {
    return this.streamKeys.size;
  }

  /**
   * A script's `stream_not_found` / `group_not_found` / missing log entry, in words.
   * Streams and groups are never deleted through the API, so a stream or group this
   * process has seen whose keys are now missing was flushed, evicted or deleted
   * behind our back: that is said plainly, and nothing is recreated (the group
   * scripts check before they write).
   */
  private explain(err: RheoError, stream: string, group?: string): RheoError {
    const k = this.keys(stream);
    const lost = 'possibly flushed (FLUSHDB/FLUSHALL), evicted (maxmemory-policy) or deleted; nothing is recreated automatically';
    if (err.code === 'stream_not_found') {
      if (!this.streamInfos.has(stream)) return RheoError.streamNotFound(stream, err);
      return new RheoError(
        'stream_not_found',
        `stream "${stream}": its keys are gone from Redis (${k.meta} no longer exists), ${lost}: restore the data, or recreate the stream and its groups`,
        { cause: err },
      );
    }
    if (err.code === 'group_not_found' && group !== undefined) {
      if (!this.groupConfigs.has(groupId(stream, group))) return RheoError.groupNotFound(stream, group, err);
      return new RheoError(
        'group_not_found',
        `group "${group}" of stream "${stream}": its keys are gone from Redis (${k.group(group).cfg} no longer exists), ${lost}: restore the data, or recreate the group`,
        { cause: err },
      );
    }
    const missing = err.code === 'failed' ? /^log:(\d+):(\d+)$/.exec(scriptDetail(err) ?? '') : null;
    if (missing) {
      return new RheoError(
        'failed',
        `stream "${stream}": event ${missing[2]} of partition ${missing[1]} is missing from ${k.log(Number(missing[1]))} below the high watermark: the stream's keys are gone from Redis, possibly evicted (maxmemory-policy) or deleted`,
        { cause: err },
      );
    }
    return err;
  }

  private remember(info: StreamInfo): void {
    this.streamInfos.set(info.name, info);
  }

  private async partitions(stream: string): Promise<number> {
    const cached = this.streamInfos.get(stream);
    if (cached) return cached.partitions;
    const info = await this.getStream(stream);
    if (!info) throw RheoError.streamNotFound(stream);
    return info.partitions;
  }

  private async config(stream: string, group: string): Promise<GroupConfig> {
    const cached = this.groupConfigs.get(groupId(stream, group));
    if (cached) return cached;
    const cfg = await this.getGroup(stream, group);
    if (!cfg) throw RheoError.groupNotFound(stream, group);
    return cfg;
  }

  // ------------------------------------------------------------ streams and groups

  async createStream(stream: string, partitions: number, retention?: Retention): Promise<StreamInfo> {
    const createdAt = this.clock.now();
    const k = this.keys(stream);
    // The registry is an index in another slot (on a cluster, possibly another node), so it cannot be
    // written in the creation script (see keys.ts). It is written FIRST: a stream whose meta exists is
    // then always registered, and a crash between the two leaves a registered name without meta, which
    // listStreams leaves out (the meta is the authority) until a retry creates it. On already_exists the
    // name is registered again, which repairs a stream created before this order (meta first) whose
    // registration was lost.
    const registered = () => this.withMappedErrors('write', () => this.redis().sadd(registryKey(this.prefix), stream));
    await registered();
    try {
      await this.runScript('write', 'createStream', [k.meta], [partitions, createdAt, ...retentionArgs(retention)]);
    } catch (err) {
      if ((err as RheoError).code !== 'already_exists') throw err;
      throw RheoError.streamExists(stream);
    }
    const info: StreamInfo = { name: stream, partitions, createdAt: new Date(createdAt) };
    this.remember(info);
    return withRetention(info, setLimits(retention));
  }

  /**
   * The registration with its current retention, read from Redis every time (another
   * process may have changed it); partitions and createdAt of a known stream come from
   * memory. A known stream whose keys vanished is answered from memory: the scripts
   * then report the loss in words (see explain).
   */
  async getStream(stream: string): Promise<StreamInfo | null> {
    const [partitions, createdAt, ...retention] = await this.withMappedErrors('read', () =>
      this.redis().hmget(
        this.keys(stream).meta,
        META_FIELDS.partitions,
        META_FIELDS.createdAt,
        META_FIELDS.retentionMaxAgeMs,
        META_FIELDS.retentionMaxEvents,
        META_FIELDS.retentionDeadLetterMaxAgeMs,
      ),
    );
    const known = this.streamInfos.get(stream);
    if (partitions === null) return known ? copyStreamInfo(known) : null;
    const info = known ?? { name: stream, partitions: Number(partitions), createdAt: new Date(Number(createdAt)) };
    if (!known) this.remember(info);
    return withRetention(info, decodeRetention(retention));
  }

  async setRetention(stream: string, retention: Retention): Promise<StreamInfo> {
    const [partitions, createdAt] = (await this.runScript('write', 'setRetention', [this.keys(stream).meta], retentionArgs(retention), {
      stream,
    })) as [string, string];
    const info = this.streamInfos.get(stream) ?? { name: stream, partitions: Number(partitions), createdAt: new Date(Number(createdAt)) };
    this.remember(info);
    return withRetention(info, setLimits(retention));
  }

  /**
   * The registered names whose stream exists: a name without its `meta` (a creation that
   * did not finish, see createStream) is left out, and nothing is removed from the
   * registry (a creation may be under way in another process).
   */
  async listStreams(): Promise<StreamInfo[]> {
    const names = await this.withMappedErrors('read', () => this.redis().smembers(registryKey(this.prefix)));
    const infos = await Promise.all(names.map((n) => this.getStream(n)));
    return infos.filter((i): i is StreamInfo => i !== null).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  async createGroup(req: CreateGroupRequest): Promise<GroupConfig> {
    const P = await this.partitions(req.stream);
    const k = this.keys(req.stream);
    const g = k.group(req.group);
    const createdAt = this.clock.now();
    const { mode, after } = await this.startArgs(req.stream, P, req.start);
    const config = newGroupConfig(req, createdAt);
    const stored = encodeGroupConfig(config);
    await this.runScript('write', 'createGroup', [k.meta, g.cfg, k.groups], [req.group, mode, stored.length, ...stored, ...after], {
      stream: req.stream,
    }).catch((err: RheoError) => {
      throw err.code === 'already_exists' ? RheoError.groupExists(req.stream, req.group) : err;
    });
    this.groupConfigs.set(groupId(req.stream, req.group), config);
    return copyGroupConfig(config);
  }

  /** A start position as script arguments: 'end' is resolved inside the script (atomic with appends), the rest here. */
  private async startArgs(stream: string, P: number, start: ResolvedStart): Promise<{ mode: 'end' | 'after'; after: number[] }> {
    if (start.kind === 'end') return { mode: 'end', after: [] };
    const after: number[] = [];
    for (let p = 0; p < P; p++) {
      if (start.kind === 'beginning') after.push(0);
      else if (start.kind === 'after') after.push(typeof start.sequences === 'number' ? start.sequences : (start.sequences[p] ?? 0));
      else
        after.push(
          (await this.withMappedErrors('read', () => firstAtOrAfter(this.redis(), this.keys(stream).log(p), start.time.getTime()))) - 1,
        );
    }
    return { mode: 'after', after };
  }

  async getGroup(stream: string, group: string): Promise<GroupConfig | null> {
    // A group's config never changes, but the group may be deleted (deleteGroup, from any process), so this
    // reads Redis; the hot paths answer from the cache, and their scripts say when the group is gone.
    const g = this.keys(stream).group(group);
    const values = await this.withMappedErrors('read', () => this.redis().hmget(g.cfg, ...STORED_GROUP_FIELD_NAMES));
    const config = decodeGroupConfig(stream, group, values);
    if (!config) {
      this.groupConfigs.delete(groupId(stream, group));
      // A stream this process knew whose keys are gone (flushed, evicted) is said so, as every group operation says it.
      if (this.streamInfos.has(stream)) {
        const [partitions] = await this.withMappedErrors('read', () => this.redis().hmget(this.keys(stream).meta, META_FIELDS.partitions));
        if (partitions === null) throw this.explain(RheoError.streamNotFound(stream), stream);
      }
      return null;
    }
    this.groupConfigs.set(groupId(stream, group), config);
    return copyGroupConfig(config);
  }

  async deleteGroup(stream: string, group: string): Promise<void> {
    const P = await this.partitions(stream);
    const k = this.keys(stream);
    const g = k.group(group);
    // Forgotten first: a group deleted by another process is then reported as missing, not as lost keys (explain).
    this.groupConfigs.delete(groupId(stream, group));
    this.lastWake.delete(groupId(stream, group));
    const all = Array.from({ length: P }, (_, p) => p);
    const keys = [k.meta, g.cfg, k.groups, g.deliveries, g.dead, g.deadOrder, g.deadTimes, k.wake, ...this.slotKeys(g, all)];
    await this.runScript('write', 'deleteGroup', keys, [group], { stream, group });
  }

  async listGroups(stream: string): Promise<GroupConfig[]> {
    await this.partitions(stream);
    const names = await this.withMappedErrors('read', () => this.redis().smembers(this.keys(stream).groups));
    // The set is read fresh, and deleteGroup removes a name with its keys: a cached config of a listed name is current.
    const known = (n: string) => this.groupConfigs.get(groupId(stream, n));
    const configs = await Promise.all(names.map((n) => (known(n) ? copyGroupConfig(known(n)!) : this.getGroup(stream, n))));
    return configs.filter((c): c is GroupConfig => c !== null).sort((a, b) => (a.group < b.group ? -1 : a.group > b.group ? 1 : 0));
  }

  // ------------------------------------------------------------ the log

  async append(stream: string, events: NewEvent[]): Promise<AppendedEvents> {
    // The returned events' metadata and payloads, copied before the first await: what the facade
    // serialised just before this call, whatever the caller changes while the append waits.
    const copies = events.map((e) => ({ metadata: copyJson(e.metadata), payload: copyJson(e.payload) }));
    const P = await this.partitions(stream);
    // Validate the whole batch before writing anything, so a batch is all or nothing.
    for (const e of events) checkPartition('partition', e.partition, P);
    if (events.length === 0) return appended([], 0);
    const k = this.keys(stream);
    const call = appendArgs(events);
    if (call.delayed) await this.recordDelayedLayout();
    const keys = [k.meta, k.ids, k.wake, ...call.partitions.map((p) => k.log(p))];
    // Per event: its new sequence, or for a known id `[ref, fields]` (read in the same step), or just the
    // ref when the stored event's partition was not among this call's keys (read here; see scripts/append.ts).
    for (let attempt = 1; ; attempt++) {
      const reply = (await this.runScript('write', 'append', keys, call.args, { stream })) as unknown[];
      const result = appendOutcomes(reply, events, call.partitions);
      if (this.durability) await this.confirmReplicas(stream, events[0], result[0], this.durability);
      const known = new Map<string, RheoEvent>();
      for (const r of result) {
        if (Array.isArray(r)) {
          const [part, seq] = r[0].split(':').map(Number);
          known.set(r[0], eventFromEntry(stream, part, seq, r[1]));
        }
      }
      const unread = [...new Set(result.filter((r): r is string => typeof r === 'string' && !known.has(r)))];
      if (unread.length && !(await this.readKnown(stream, unread, known))) {
        // Trimmed between the append and the read: appending again stores those events anew (their ids
        // left the index with them), and returns the others as stored.
        if (attempt < 3) continue;
        throw new RheoError('failed', `redis: appended events of stream "${stream}" were trimmed while they were read back`);
      }
      // A known id (stored before, or earlier in this batch) is not a new sequence: a repeat.
      const repeats = result.filter((r) => typeof r !== 'number').length;
      const stored = events.map((e, i) => {
        const r = result[i];
        if (typeof r !== 'number') {
          const stored = known.get(Array.isArray(r) ? r[0] : r)!;
          const copy = { ...stored, metadata: copyJson(stored.metadata), payload: copyJson(stored.payload) };
          if (stored.deliverAt) copy.deliverAt = new Date(stored.deliverAt.getTime());
          return copy;
        }
        const event: RheoEvent = {
          id: e.id,
          stream,
          partition: e.partition,
          sequence: Number(r),
          timestamp: new Date(e.timestamp.getTime()),
          key: e.key,
          type: e.type,
          metadata: copies[i].metadata,
          payload: copies[i].payload,
        };
        if (e.deliverAt !== undefined) event.deliverAt = new Date(e.deliverAt.getTime());
        return event;
      });
      return appended(stored, repeats);
    }
  }

  /**
   * `durability`: return only once `replicas` replicas have the append. WAIT counts the
   * replicas that acknowledged everything the master had when this connection last
   * wrote, so it goes on the connection that ran the append, right after it: on a
   * cluster, the cluster's own connection to the node that owns the stream's slot
   * (streamNode), with no redirection (a WAIT that followed a MOVED or a reconnection
   * elsewhere would count another connection's writes). The HGET of the first event's
   * id in front of it tells whether that node still holds the event (a failover between
   * the append and the WAIT could answer from a master that does not). Anything short
   * of N confirmations throws `ambiguous`: the master applied the append, but it may be lost.
   */
  private async confirmReplicas(
    stream: string,
    first: NewEvent,
    stored: number | string | [string, string[]],
    { replicas, timeoutMs }: Required<RedisDurability>,
  ): Promise<void> {
    const unconfirmed = (why: string, cause?: unknown) =>
      new RheoError(
        'ambiguous',
        `redis: the append to stream "${stream}" ${why}; it may have been applied, and an append no replica has is lost if its master fails. Appending the same events again (same ids) is safe: appends are idempotent by event id`,
        cause === undefined ? {} : { cause },
      );
    const expected = typeof stored === 'number' ? `${first.partition}:${stored}` : Array.isArray(stored) ? stored[0] : stored;
    let rows: RedisPipelineResult[];
    try {
      const p = this.streamNode(stream).pipeline();
      p.hget(this.keys(stream).ids, first.id);
      p.wait(replicas, timeoutMs);
      rows = (await p.exec()) ?? [];
    } catch (err) {
      throw unconfirmed(`was not confirmed by ${replicas} replica(s) (${mapRedisError(err, 'write', this.link).message})`, err);
    }
    const [[readErr, ref] = [null, null], [waitErr, acked] = [null, null]] = rows;
    const failed = readErr ?? waitErr;
    if (failed)
      throw unconfirmed(`was not confirmed by ${replicas} replica(s) (${mapRedisError(failed, 'write', this.link).message})`, failed);
    if (ref !== expected) {
      throw unconfirmed(
        `is gone from the master of its slot right after it was written (a failover lost it, or a trim took it at once): event "${first.id}" is not where the append put it`,
      );
    }
    const confirmed = Number(acked);
    if (!(confirmed >= replicas)) {
      throw unconfirmed(
        `was written on the master, but only ${confirmed} of ${replicas} replica(s) confirmed it within ${timeoutMs} ms (Redis WAIT)`,
      );
    }
  }

  /** Read stored events by `<p>:<seq>` into `known`; false when one is gone from the log. */
  private async readKnown(stream: string, refs: string[], known: Map<string, RheoEvent>): Promise<boolean> {
    const k = this.keys(stream);
    const p = this.redis().pipeline();
    for (const ref of refs) {
      const [part, seq] = ref.split(':').map(Number);
      p.xrange(k.log(part), entryId(seq), entryId(seq));
    }
    const rows = await this.withMappedErrors('read', async () => (await p.exec()) ?? []);
    for (const [i, ref] of refs.entries()) {
      const [err, entries] = rows[i] as [Error | null, RedisStreamEntry[]];
      if (err) throw mapRedisError(err, 'read', this.link);
      if (!entries?.[0]) return false;
      const [part, seq] = ref.split(':').map(Number);
      known.set(ref, eventFromEntry(stream, part, seq, entries[0][1]));
    }
    return true;
  }

  async read(req: ReadRequest): Promise<RheoEvent[]> {
    const entries = (await this.withMappedErrors('read', () =>
      this.redis().xrange(this.keys(req.stream).log(req.partition), entryId(req.afterSequence + 1), '+', 'COUNT', req.limit),
    )) as RedisStreamEntry[];
    return entries.map(([id, fields]) => eventFromEntry(req.stream, req.partition, seqOf(id), fields));
  }

  async query(req: QueryRequest): Promise<RheoEvent[]> {
    const P = await this.partitions(req.stream);
    return this.withMappedErrors('read', () => scanQuery(this.redis(), this.keys(req.stream), req, P, this.queryScanLimit));
  }

  // ------------------------------------------------------------ leases

  /**
   * Claims in calls of at most FETCH_PER_CALL leases. When a call reports work
   * left unfinished (a frontier walk cut short, a rewind under way: by this
   * process, or by one that died between slices), it is finished here, so a
   * crash never leaves a group stuck; a fetch that found nothing because of it
   * tries once more.
   */
  async fetch(req: FetchRequest): Promise<FetchedLeases> {
    const P = await this.partitions(req.stream);
    const parts = req.partitions ?? Array.from({ length: P }, (_, p) => p);
    let pending = false;
    // One claim, and more only while claims park delayed events (../delays.ts).
    const leases = await claimPastDelays(req.limit, async (limit) => {
      const round = await this.claim({ ...req, limit }, parts);
      pending ||= round.pending;
      return round;
    });
    if (!pending) return leases;
    await this.tidy(req.stream, req.group, parts);
    if (leases.length > 0) return leases;
    // The claim after tidy may dead-letter too: both claims' dead letters are told.
    const again = await this.claim(req, parts);
    const before = deadLetteredOf(leases);
    return fetched(
      again.leases,
      before && again.deadLettered ? [...before, ...again.deadLettered] : (again.deadLettered ?? before?.slice()),
    );
  }

  /**
   * One call first: most fetches find fewer than FETCH_PER_CALL events, and an idle
   * poll must stay one script call. When the first call came back full, the calls
   * for the rest of the limit go out together, in one pipeline (one round trip,
   * not one per hundred leases).
   */
  private async claim(req: FetchRequest, parts: number[]): Promise<ClaimRound<Lease> & { pending: boolean }> {
    const k = this.keys(req.stream);
    const g = k.group(req.group);
    const keys = [k.meta, g.cfg, g.deliveries, k.wake];
    for (const p of parts) keys.push(k.log(p), g.leased(p), g.available(p));
    // Where a claim files a lease that expired on the last attempt (scripts/fetch.ts).
    keys.push(g.dead, g.deadOrder, g.deadTimes);
    const now = this.clock.now();
    const call = (want: number): ScriptCall => ({ name: 'fetch', keys, args: [now, want, req.leaseMs, newId(), ...parts] });
    const first = call(Math.min(FETCH_PER_CALL, req.limit));
    const answers: FetchAnswer[] = [fetchAnswer(await this.runScript('write', 'fetch', keys, first.args, req))];
    // The first call's wake id: wait() then wakes for anything written since this fetch began.
    this.lastWake.set(groupId(req.stream, req.group), answers[0].wakeId);
    if (answers[0].leases.count === first.args[1] && req.limit > FETCH_PER_CALL) {
      const rest: ScriptCall[] = [];
      for (let left = req.limit - FETCH_PER_CALL; left > 0; left -= FETCH_PER_CALL) rest.push(call(Math.min(FETCH_PER_CALL, left)));
      const replies = await this.withMappedErrors('write', () => this.scripts.runPipelined(rest));
      for (const [err, reply] of replies) {
        if (err) throw this.explain(mapRedisError(err, 'write', this.link), req.stream, req.group);
        answers.push(fetchAnswer(reply));
      }
    }
    const leases: Lease[] = [];
    let pending = false;
    let parked = 0;
    let deadLettered: ClaimDeadLetter[] | undefined;
    for (const out of answers) {
      pending ||= out.pending;
      parked += out.parked;
      if (out.deadLettered) deadLettered = deadLettered ? [...deadLettered, ...out.deadLettered] : out.deadLettered;
      for (let n = 0; n < out.leases.count; n++) {
        const event = eventOfLease(req.stream, out.leases, n);
        const { leaseId, attempt } = leaseOf(out.leases, n);
        leases.push({
          leaseId,
          receipt: entryId(event.sequence),
          stream: req.stream,
          group: req.group,
          consumerId: req.consumerId,
          attempt,
          leasedAt: new Date(now),
          expiresAt: new Date(now + req.leaseMs),
          event,
        });
      }
    }
    return deadLettered ? { leases, pending, parked, deadLettered } : { leases, pending, parked };
  }

  /**
   * Finish the bounded work other calls left on these partitions (a frontier walk,
   * a rewind), one slice per script call, until none is left. Every slice leaves a
   * consistent state, so stopping anywhere (an error, a crash) loses nothing.
   */
  private async tidy(stream: string, group: string, parts: number[]): Promise<void> {
    const k = this.keys(stream);
    const g = k.group(group);
    let left = parts;
    while (left.length > 0) {
      const keys = [k.meta, g.cfg, g.deliveries, g.dead, g.deadOrder, k.wake, g.deadTimes, ...this.slotKeys(g, left)];
      left = ((await this.runScript('write', 'tidy', keys, [SLICE, ...left], { stream, group })) as unknown[]).map(Number);
    }
  }

  /**
   * Bulk ops: grouped by (stream, group), cut into script calls of at most
   * OPS_PER_CALL ops, all sent in one pipeline (one round trip), the per-op
   * answers mapped back. `build` returns an op's values: a call's ops go as ONE
   * JSON text after the `head` args (one argument to encode and to convert, not
   * five to eight per op), and the script numbers the partitions' KEYS slots by
   * first appearance, as done here. A settle whose
   * frontier walk was cut short is finished (tidy) before this returns, so lag
   * is exact once a settle resolved.
   */
  private async bulk<T extends { lease: Lease<unknown> }, R>(
    items: T[],
    name: 'renew' | 'settle' | 'release',
    head: (now: number, cfg: GroupConfig) => Array<string | number>,
    build: (item: T) => OpValue[],
    ok: (now: number) => R,
    fail: (error: RheoError) => R,
  ): Promise<R[]> {
    const now = this.clock.now();
    const results: R[] = new Array(items.length);
    const byGroup = new Map<string, number[]>();
    items.forEach((it, i) => {
      const key = groupId(it.lease.stream, it.lease.group);
      const list = byGroup.get(key);
      if (list) list.push(i);
      else byGroup.set(key, [i]);
    });
    /** One script call, and what it answers for: the items at `index`, of one group, on `parts`. */
    type Call = ScriptCall & { index: number[]; stream: string; group: string; parts: number[] };
    const calls: Call[] = [];
    for (const indexes of byGroup.values()) {
      const { stream, group } = items[indexes[0]].lease;
      let P: number;
      let cfg: GroupConfig;
      try {
        P = await this.partitions(stream);
        cfg = await this.config(stream, group);
      } catch (err) {
        for (const i of indexes) results[i] = fail(mapRedisError(err, 'read', this.link));
        continue;
      }
      const k = this.keys(stream);
      const g = k.group(group);
      const valid: number[] = [];
      for (const i of indexes) {
        const { partition, sequence } = items[i].lease.event;
        if (!Number.isInteger(partition) || partition < 0 || partition >= P || !Number.isInteger(sequence) || sequence < 1) {
          results[i] = fail(RheoError.staleLease(name));
        } else valid.push(i);
      }
      for (let from = 0; from < valid.length; from += OPS_PER_CALL) {
        const index = valid.slice(from, from + OPS_PER_CALL);
        const slots = new Map<number, number>();
        const ops: OpValue[] = [];
        for (const i of index) {
          const { partition } = items[i].lease.event;
          if (!slots.has(partition)) slots.set(partition, slots.size);
          for (const v of build(items[i])) ops.push(v);
        }
        const args = [...head(now, cfg), JSON.stringify(ops)];
        const parts = [...slots.keys()];
        calls.push({ name, keys: bulkKeys(name, k, g, parts), args, index, stream, group, parts });
      }
    }
    if (calls.length === 0) return results;
    let answers: RedisPipelineResult[];
    try {
      // One pipeline; on a cluster one per slot (streams on several nodes), all sent at once.
      answers = await this.withMappedErrors('write', () => this.scripts.runPipelined(calls));
    } catch (err) {
      answers = calls.map(() => [err as Error, null]);
    }
    const unfinished = new Map<string, { stream: string; group: string; parts: Set<number> }>();
    calls.forEach((c, n) => {
      const [err, reply] = answers[n];
      const codes = reply as Array<string | number>;
      c.index.forEach((i, j) => {
        if (err) results[i] = fail(this.explain(mapRedisError(err, 'write', this.link), c.stream, c.group));
        else if (codes[j] === 'ok') results[i] = ok(now);
        else results[i] = fail(this.opError(name, String(codes[j]), c.stream, c.group));
      });
      // The settle script ends with a flag: 1 when its frontier walk was cut short by the budget.
      if (!err && name === 'settle' && Number(codes[c.index.length]) === 1) {
        const key = groupId(c.stream, c.group);
        const u = unfinished.get(key) ?? { stream: c.stream, group: c.group, parts: new Set<number>() };
        for (const p of c.parts) u.parts.add(p);
        unfinished.set(key, u);
      }
    });
    for (const u of unfinished.values()) {
      // The settles are done whatever happens here; a walk left unfinished is finished by the next fetch or lag.
      await this.tidy(u.stream, u.group, [...u.parts]).catch(() => undefined);
    }
    return results;
  }

  /** The error of one op of a bulk call, from the code its script answered. */
  private opError(op: string, code: string, stream: string, group: string): RheoError {
    switch (code) {
      case 'stream_not_found':
        return this.explain(RheoError.streamNotFound(stream), stream, group);
      case 'group_not_found':
        return this.explain(RheoError.groupNotFound(stream, group), stream, group);
      case 'stale_lease':
        return RheoError.staleLease(op);
      case 'receipt_mismatch':
        return RheoError.receiptMismatch(op);
      default:
        return new RheoError('failed', `${op}: the script answered an unknown code ${code}`);
    }
  }

  async renew(leases: Lease<unknown>[], leaseMs: number): Promise<RenewResult[]> {
    return this.bulk<{ lease: Lease<unknown> }, RenewResult>(
      leases.map((lease) => ({ lease })),
      'renew',
      (now) => [now, leaseMs],
      ({ lease }) => leaseOpValues(lease),
      (now) => ({ ok: true, expiresAt: new Date(now + leaseMs) }),
      (error) => ({ ok: false, error }),
    );
  }

  async settle(ops: SettleOp[]): Promise<SettleResult[]> {
    return this.bulk<SettleOp, SettleResult>(
      ops,
      'settle',
      // The delay after each attempt comes from core's one backoff; the script picks it by the stored attempt.
      (now, cfg) => {
        const delays = Array.from({ length: cfg.maxAttempts }, (_, i) => backoffDelay(cfg.retry, i + 1));
        return [now, SLICE, delays.length, ...delays];
      },
      settleOpValues,
      () => ({ ok: true }),
      (error) => ({ ok: false, error }),
    );
  }

  async release(leases: Lease<unknown>[]): Promise<SettleResult[]> {
    return this.bulk<{ lease: Lease<unknown> }, SettleResult>(
      leases.map((lease) => ({ lease })),
      'release',
      (now) => [now],
      ({ lease }) => leaseOpValues(lease),
      () => ({ ok: true }),
      (error) => ({ ok: false, error }),
    );
  }

  // ------------------------------------------------------------ replay, reset, redrive

  /** KEYS shared by reopen / redrive / reset / tidy after their fixed part: per partition slot, leased then available. */
  private slotKeys(g: GroupKeys, parts: number[]): string[] {
    return parts.flatMap((p) => [g.leased(p), g.available(p)]);
  }

  /**
   * Replay by sequence or time rewinds partitions: the replay script records the target (or
   * applies it at once when nothing was delivered above it) and tidy brings the
   * cursor down in bounded slices. Replay by events re-opens them in bounded calls.
   */
  async replay(req: ReplayRequest): Promise<number> {
    const P = await this.partitions(req.stream);
    await this.config(req.stream, req.group);
    const k = this.keys(req.stream);
    const g = k.group(req.group);
    if (req.kind === 'events') {
      return this.reopen(req.stream, req.group, 'events', req.events);
    }
    const parts = req.partitions ?? Array.from({ length: P }, (_, p) => p);
    // Finish what an earlier replay of these partitions left, so this one starts from a settled state.
    await this.tidy(req.stream, req.group, parts);
    const args: Array<string | number> = [req.kind === 'sequence' ? 'sequence' : 'after'];
    for (const p of parts) {
      args.push(
        p,
        req.kind === 'sequence'
          ? req.afterSequence
          : (await this.withMappedErrors('read', () => firstAtOrAfter(this.redis(), k.log(p), req.from.getTime()))) - 1,
      );
    }
    const out = (await this.runScript('write', 'replay', [k.meta, g.cfg, k.wake], args, req)) as unknown[];
    await this.tidy(req.stream, req.group, out.slice(1).map(Number));
    return Number(out[0]);
  }

  /** Re-open events in calls of at most REOPEN_PER_CALL; returns the sum of the calls' counts. */
  private async reopen(
    stream: string,
    group: string,
    mode: 'events' | 'redrive',
    events: Array<{ id: string; partition: number; sequence: number }>,
  ): Promise<number> {
    const k = this.keys(stream);
    const g = k.group(group);
    let n = 0;
    for (let from = 0; from < events.length; from += REOPEN_PER_CALL) {
      const slots = new Map<number, number>();
      const args: Array<string | number> = [mode, this.clock.now()];
      for (let i = from; i < Math.min(from + REOPEN_PER_CALL, events.length); i++) {
        const e = events[i];
        if (!slots.has(e.partition)) slots.set(e.partition, slots.size);
        args.push(slots.get(e.partition)!, e.partition, e.sequence, e.id);
      }
      const keys = [k.meta, g.cfg, g.deliveries, g.dead, g.deadOrder, k.wake, g.deadTimes, ...this.slotKeys(g, [...slots.keys()])];
      n += Number(await this.runScript('write', 'reopen', keys, args, { stream, group }));
    }
    return n;
  }

  async reset(stream: string, group: string, start: ResolvedStart): Promise<void> {
    const P = await this.partitions(stream);
    await this.config(stream, group);
    const k = this.keys(stream);
    const g = k.group(group);
    const { mode, after } = await this.startArgs(stream, P, start);
    const all = Array.from({ length: P }, (_, p) => p);
    const keys = [k.meta, g.cfg, g.deliveries, g.dead, g.deadOrder, k.wake, g.deadTimes, ...this.slotKeys(g, all)];
    await this.runScript('write', 'reset', keys, [mode, ...after], { stream, group });
  }

  /**
   * `all`: page through the dead letters in (partition, sequence) order, one
   * bounded script call per page, each resuming after the last member of the
   * previous one. By id: look the records up and re-open them, in bounded calls.
   */
  async redrive(stream: string, group: string, eventIds: string[] | 'all'): Promise<number> {
    const P = await this.partitions(stream);
    await this.config(stream, group);
    const k = this.keys(stream);
    const g = k.group(group);
    if (eventIds === 'all') {
      const all = Array.from({ length: P }, (_, p) => p);
      const keys = [k.meta, g.cfg, g.deliveries, g.dead, g.deadOrder, k.wake, g.deadTimes, ...this.slotKeys(g, all)];
      let total = 0;
      let start = '-';
      for (;;) {
        const [n, seen, last] = (await this.runScript('write', 'redrive', keys, [this.clock.now(), start, REOPEN_PER_CALL], {
          stream,
          group,
        })) as [number, number, string];
        total += Number(n);
        // Pages are cut by what was looked at: dead letters of trimmed events stay, skipped.
        if (Number(seen) < REOPEN_PER_CALL) return total;
        start = `(${last}`;
      }
    }
    const ids = [...new Set(eventIds)];
    let total = 0;
    for (let from = 0; from < ids.length; from += REOPEN_PER_CALL) {
      const chunk = ids.slice(from, from + REOPEN_PER_CALL);
      const recs = await this.withMappedErrors('read', () => this.redis().hmget(g.dead, ...chunk));
      const events: Array<{ id: string; partition: number; sequence: number }> = [];
      chunk.forEach((id, i) => {
        const rec = recs[i];
        if (rec === null) return;
        const d = parseDeadRecord(rec);
        events.push({ id, partition: d.partition, sequence: d.sequence });
      });
      total += await this.reopen(stream, group, 'redrive', events);
    }
    return total;
  }

  // ------------------------------------------------------------ retention

  /** In bounded slices, partition by partition (trimming.ts, scripts/trim.ts). */
  async trim(req: TrimRequest): Promise<TrimResult> {
    const P = await this.partitions(req.stream);
    return runTrim(this.ops, this.keys(req.stream), req, P);
  }

  /** All at once by UNLINK, or before a time in bounded steps through the time index (purging.ts, scripts/purge.ts). */
  async purgeDeadLetters(stream: string, group: string, before: Date | null): Promise<number> {
    await this.partitions(stream);
    await this.config(stream, group);
    const k = this.keys(stream);
    return runPurge(this.ops, k, k.group(group), { stream, group }, before);
  }

  /** One constant-time script call (dead-letter-count.ts, scripts/count-dead-letters.ts). */
  async countDeadLetters(stream: string, group: string, since: Date | null): Promise<number> {
    await this.partitions(stream);
    await this.config(stream, group);
    const k = this.keys(stream);
    return runCountDeadLetters(this.ops, k, k.group(group), { stream, group }, since);
  }

  /**
   * One script on the job's own key (`<prefix>:turn:<job>`, outside every stream): the
   * turn's end is a time of the backend's clock, so processes sharing a clock agree.
   */
  async claimTurn(job: string, holder: string, ttlMs: number): Promise<boolean> {
    if (typeof job !== 'string' || job.length === 0) throw RheoError.invalid('job', 'must be a non-empty string');
    if (typeof holder !== 'string' || holder.length === 0) throw RheoError.invalid('holder', 'must be a non-empty string');
    if (!Number.isInteger(ttlMs) || ttlMs < 1) throw RheoError.invalid('ttlMs', 'must be a whole number of at least 1');
    const granted = await this.runScript('write', 'claimTurn', [turnKey(this.prefix, job)], [this.clock.now(), holder, ttlMs]);
    return Number(granted) === 1;
  }

  async releaseTurn(job: string, holder: string): Promise<boolean> {
    if (typeof job !== 'string' || job.length === 0) throw RheoError.invalid('job', 'must be a non-empty string');
    if (typeof holder !== 'string' || holder.length === 0) throw RheoError.invalid('holder', 'must be a non-empty string');
    return Number(await this.runScript('write', 'releaseTurn', [turnKey(this.prefix, job)], [holder])) === 1;
  }

  // ------------------------------------------------------------ inspection

  /** One consistent read; work found unfinished (a cut-short walk, a rewind) is finished and the read repeated. */
  private async inspect(
    stream: string,
    group: string,
  ): Promise<{ lag: Lag; inflight: number; dead: number; oldest: number | null; now: number }> {
    const first = await this.inspectOnce(stream, group);
    if (first.pending.length === 0) return first;
    await this.tidy(stream, group, first.pending);
    return this.inspectOnce(stream, group);
  }

  private async inspectOnce(
    stream: string,
    group: string,
  ): Promise<{ lag: Lag; inflight: number; dead: number; oldest: number | null; now: number; pending: number[] }> {
    const P = await this.partitions(stream);
    const k = this.keys(stream);
    const g = k.group(group);
    const keys = [k.meta, g.cfg, g.deliveries, g.dead];
    for (let p = 0; p < P; p++) keys.push(g.leased(p), k.log(p));
    const now = this.clock.now();
    const out = (await this.runScript('read', 'inspect', keys, [now], { stream, group })) as Array<number | string>;
    const partitions = [];
    const pending: number[] = [];
    let inflight = 0;
    let oldest: number | null = null;
    for (let p = 0; p < P; p++) {
      const [hw, f, live, ts, unfinished] = out.slice(1 + 5 * p, 6 + 5 * p);
      const highWatermark = Number(hw);
      const frontier = Number(f);
      partitions.push({ partition: p, frontier, highWatermark, lag: Math.max(0, highWatermark - frontier) });
      inflight += Number(live);
      if (ts !== '' && (oldest === null || Number(ts) < oldest)) oldest = Number(ts);
      if (Number(unfinished) === 1) pending.push(p);
    }
    const lag: Lag = { stream, group, lag: partitions.reduce((n, x) => n + x.lag, 0), partitions };
    return { lag, inflight, dead: Number(out[0]), oldest, now, pending };
  }

  async lag(stream: string, group: string): Promise<Lag> {
    return (await this.inspect(stream, group)).lag;
  }

  async groupInfo(stream: string, group: string): Promise<GroupInfo> {
    const config = await this.config(stream, group);
    const { lag, inflight, dead, oldest, now } = await this.inspect(stream, group);
    return {
      stream,
      group,
      lag,
      inflight,
      deadLetters: dead,
      oldestUnsettledAgeMs: oldest === null ? null : Math.max(0, now - oldest),
      config: copyGroupConfig(config),
      ...(this.durabilityWarnings.length > 0 ? { warnings: [...this.durabilityWarnings] } : {}),
    };
  }

  async deadLetters(stream: string, group: string, limit: number, after?: string): Promise<DeadLetter[]> {
    const P = await this.partitions(stream);
    const k = this.keys(stream);
    const g = k.group(group);
    const keys = [k.meta, g.cfg, g.dead, g.deadOrder, ...Array.from({ length: P }, (_, p) => k.log(p))];
    const out = (await this.runScript('read', 'deadLetters', keys, [limit, after ?? ''], { stream, group }).catch((err: RheoError) => {
      throw err.code === 'invalid_argument' ? RheoError.invalid('after', `is not a dead-lettered event id of group "${group}"`) : err;
    })) as unknown[];
    const letters: DeadLetter[] = [];
    for (let i = 0; i + 2 < out.length; i += 3) {
      const d = parseDeadRecord(String(out[i + 1]));
      const fields = out[i + 2] as string[];
      letters.push({
        stream,
        group,
        eventId: String(out[i]),
        partition: d.partition,
        sequence: d.sequence,
        reason: d.reason,
        attempt: d.attempt,
        deadLetteredAt: new Date(d.at),
        event: fields.length ? eventFromEntry(stream, d.partition, d.sequence, fields) : null,
      });
    }
    return letters;
  }

  // ------------------------------------------------------------ wake-ups

  /**
   * Blocks (XREAD BLOCK on the stream's wake key, on the dedicated connection)
   * until a write that may create work for the group happens after its last
   * fetch, `timeoutMs` passes, or `signal` aborts. Never throws: a failure only
   * turns the wait into a plain sleep.
   */
  async wait(req: WaitRequest): Promise<void> {
    if (this.closed || req.signal.aborted) return;
    const key = this.keys(req.stream).wake;
    try {
      let lastId = this.lastWake.get(groupId(req.stream, req.group));
      if (lastId === undefined) {
        const last = (await this.redis().xrevrange(key, '+', '-', 'COUNT', 1)) as RedisStreamEntry[];
        lastId = last[0]?.[0] ?? '0-0';
      }
      const c = this.redis();
      if (isCluster(c)) {
        this.clusterListeners ??= new ClusterWakeListeners(() => this.redis() as RedisCluster);
        await this.clusterListeners.wait(key, lastId, req.timeoutMs, req.signal);
      } else {
        await this.wakeListener().wait(key, lastId, req.timeoutMs, req.signal);
      }
    } catch {
      await sleep(req.timeoutMs, req.signal);
    }
  }

  /** On a cluster, the slots with a blocking connection for wait() now, and the node each is open to (tests look). */
  get wakeSlots(): Array<{ slot: number; node: string }> {
    return this.clusterListeners?.slots ?? [];
  }

  private wakeListener(): WakeListener {
    if (!this.listener) {
      const client = this.redis() as RedisClient;
      this.blocker = client.duplicate(BLOCKER_OVERRIDES);
      this.listener = new WakeListener(this.blocker, (id) => client.client('UNBLOCK', id));
    }
    return this.listener;
  }
}

/** A startup node as describe() shows it: `host:port`, never credentials. */
function clusterNodeName(node: RedisClusterNode): string {
  const fallback = { host: 'localhost', port: 6379 };
  if (typeof node === 'number') return hostPort(undefined, node, fallback);
  if (typeof node === 'object') return hostPort(node.host, node.port, fallback);
  if (/^rediss?:\/\//.test(node)) return urlTarget(node)?.host ?? 'a cluster node';
  return /^[^@]*$/.test(node) ? node : 'a cluster node';
}

/** One CONFIG GET value; ioredis answers `[name, value]` (RESP2 and RESP3 alike), or a map. */
async function configValue(client: RedisCommands, name: string): Promise<string> {
  const reply = (await client.config('GET', name)) as unknown;
  const value = Array.isArray(reply) ? reply[1] : (reply as Record<string, unknown> | null)?.[name];
  if (value === undefined || value === null) throw new Error(`CONFIG GET ${name} answered nothing`);
  return String(value);
}

/** KEYS of renew / settle / release for the partitions of one call (each script's module documents its layout). */
function bulkKeys(name: 'renew' | 'settle' | 'release', k: StreamKeys, g: GroupKeys, parts: number[]): string[] {
  switch (name) {
    case 'renew':
      return [k.meta, g.cfg, g.deliveries, ...parts.map((p) => g.leased(p))];
    case 'settle':
      return [
        k.meta,
        g.cfg,
        g.deliveries,
        g.dead,
        g.deadOrder,
        k.wake,
        g.deadTimes,
        ...parts.flatMap((p) => [g.leased(p), g.available(p), k.log(p)]),
      ];
    case 'release':
      return [k.meta, g.cfg, g.deliveries, k.wake, ...parts.flatMap((p) => [g.leased(p), g.available(p)])];
  }
}

/** A caller's copy of a registration, with `retention` only when one is set. */
function withRetention(info: StreamInfo, retention: Retention | undefined): StreamInfo {
  const copy = copyStreamInfo(info);
  delete copy.retention;
  if (retention) copy.retention = { ...retention };
  return copy;
}

/** The in-process map key of a (stream, group); names never contain NUL (core/validate.ts). */
function groupId(stream: string, group: string): string {
  return `${stream}\u0000${group}`;
}

/** A caller's copy of a (cached) group config: nothing shared with the cache. */

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

/**
 * A backend on Redis Streams (Redis >= 6.2, ioredis 6). Give `url`, `options`
 * (the backend creates and closes its client) or `client` (borrowed, never
 * closed). A second connection, created with `duplicate()`, serves the blocking
 * reads behind `wait()`. On a Redis Cluster give `cluster` (startup nodes, or an
 * ioredis `Cluster` to borrow): each stream's scripts run on the master that owns
 * its slot, and `wait()` opens a blocking connection per waited slot (cluster.ts).
 */
export function redisBackend(options: RedisBackendOptions = {}): RedisBackend {
  return new RedisBackend(options);
}

/** One value of a bulk op (see bulk): an element of its call's JSON text. */
type OpValue = string | number | boolean | null;

/**
 * A lease as the renew, release and settle scripts take it (scripts/renew.ts):
 * partition, sequence (strings, as they name keys), receiptOk, leaseId. The receipt
 * is compared here; the script still answers receipt_mismatch only for a lease that
 * fenced. The lease id is made well-formed as UTF-8 encoding of an argument made it
 * (a lone surrogate becomes U+FFFD): cjson.decode refuses a lone surrogate escape.
 */
function leaseOpValues(lease: Lease<unknown>): OpValue[] {
  const seq = String(lease.event.sequence);
  return [String(lease.event.partition), seq, lease.receipt === `0-${seq}`, wellFormed(lease.leaseId)];
}

/**
 * One settle op's values (scripts/settle.ts), by kind: ack `a` then the lease's
 * values (leaseOpValues); reject `r`, the lease's, reason; nack `n`, the lease's,
 * reason, delayMs (null = the group's backoff).
 */
function settleOpValues(op: SettleOp): OpValue[] {
  const lease = leaseOpValues(op.lease);
  if (op.kind === 'ack') return ['a', ...lease];
  const reason = wellFormed(op.reason ?? '');
  if (op.kind === 'reject') return ['r', ...lease, reason];
  return ['n', ...lease, reason, op.delayMs ?? null];
}

/** `s` as UTF-8 encoding would carry it: a lone surrogate replaced by U+FFFD. */
function wellFormed(s: string): string {
  return typeof s === 'string' ? s.toWellFormed() : String(s);
}

/** A fetch script reply (scripts/fetch.ts): its header, and its leases parsed from their JSON texts. */
interface FetchAnswer {
  wakeId: string;
  pending: boolean;
  parked: number;
  leases: LeaseRows;
  deadLettered: ClaimDeadLetter[] | undefined;
}

function fetchAnswer(reply: unknown): FetchAnswer {
  const out = reply as unknown[];
  const leases = fetchedLeases(out);
  return {
    wakeId: String(out[0]),
    pending: Number(out[1]) === 1,
    parked: Number(out[2]),
    leases,
    deadLettered: fetchedDeadLetters(out, leases.count),
  };
}
