/**
 * The few shapes of ioredis the Redis backend uses, written out by hand (as
 * @nestjs/microservices does in its `external/` folder) so that no typing of this
 * backend imports 'ioredis'. The driver is an optional peer: a project that
 * compiles with `skipLibCheck: false` and has not installed it must still compile.
 *
 * An ioredis 6 `Redis` client satisfies {@link RedisClient}, and ioredis
 * `RedisOptions` satisfy {@link RedisClientOptions} (test/redis/external.typecheck.ts
 * checks both against the installed ioredis); an ioredis `Cluster` and its
 * `ClusterOptions` satisfy {@link RedisCluster} and {@link RedisClusterOptions}
 * (test/redis/cluster-external.typecheck.ts). Replies the backend reads are typed
 * `unknown` here and narrowed where they are used: ioredis types them per protocol
 * (RESP2 / RESP3), which this file does not reproduce.
 */

/** A stream entry as the backend reads it: entry id and flat field list. */
export type RedisStreamEntry = [id: string, fields: string[]];

/** One answer of a pipeline: the command's error, or null and its reply. */
export type RedisPipelineResult = [error: Error | null, reply: unknown];

/**
 * Options of an ioredis client (ioredis `RedisOptions`). The ones the backend sets
 * on the clients it creates are named; every other ioredis option (host, port,
 * password, tls, db, sentinels, protocol, ...) is passed through as given.
 */
export interface RedisClientOptions {
  lazyConnect?: boolean;
  enableOfflineQueue?: boolean;
  maxRetriesPerRequest?: number | null;
  connectTimeout?: number;
  commandTimeout?: number;
  retryStrategy?: ((times: number) => number | void | null) | null;
  /** Any other ioredis option. `any`, not `unknown`: only an `any` index signature accepts an ioredis `RedisOptions` value. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  [option: string]: any;
}

/** A pipeline (ioredis `ChainableCommander`): the commands the backend queues on one, and `exec`. */
export interface RedisPipeline {
  evalsha(sha: string, numKeys: number, keysAndArgs: string[]): unknown;
  script(subcommand: 'LOAD', script: string): unknown;
  xrange(key: string, start: string, end: string): unknown;
  xrevrange(key: string, end: string, start: string): unknown;
  hget(key: string, field: string): unknown;
  /** Redis WAIT: replicas that acknowledged this connection's writes (durability option). */
  wait(numReplicas: number, timeoutMs: number): unknown;
  exec(): Promise<RedisPipelineResult[] | null>;
}

/**
 * The commands the backend sends that name their keys, and the connection calls a
 * client and a cluster share: an ioredis `Redis` and an ioredis `Cluster` both have
 * them (a cluster sends each to the node that owns the key's slot).
 */
export interface RedisCommands {
  /** 'wait' (lazy, not connected yet), 'connecting', 'ready', ..., 'end'. */
  readonly status: string;
  connect(): Promise<void>;
  disconnect(): void;
  /** `ready`: connected (again). */
  on(event: 'error' | 'close' | 'end' | 'ready', listener: (...args: unknown[]) => void): unknown;
  once(event: 'error' | 'close' | 'end', listener: (...args: unknown[]) => void): unknown;
  pipeline(): RedisPipeline;
  evalsha(sha: string, numKeys: number, keysAndArgs: string[]): Promise<unknown>;
  eval(script: string, numKeys: number, keysAndArgs: string[]): Promise<unknown>;
  ping(): Promise<unknown>;
  /** `TIME`: the server's clock, [seconds, microseconds] as strings. */
  time(): Promise<Array<string | number>>;
  config(subcommand: 'GET', parameter: string): Promise<unknown>;
  hmget(key: string, ...fields: string[]): Promise<Array<string | null>>;
  get(key: string): Promise<string | null>;
  exists(key: string): Promise<number>;
  sadd(key: string, member: string): Promise<unknown>;
  smembers(key: string): Promise<string[]>;
  xrange(key: string, start: string, end: string, countToken: 'COUNT', count: number): Promise<unknown>;
  xrevrange(key: string, end: string, start: string, countToken: 'COUNT', count: number): Promise<unknown>;
}

/** A client (ioredis `Redis`): the connection calls and commands the backend sends. */
export interface RedisClient extends RedisCommands {
  /** A new client with the same options, `overrides` applied. */
  duplicate(overrides?: RedisClientOptions): RedisClient;
  client(subcommand: 'ID'): Promise<unknown>;
  client(subcommand: 'UNBLOCK', clientId: number): Promise<unknown>;
  xread(blockToken: 'BLOCK', ms: number, streamsToken: 'STREAMS', ...keysThenIds: string[]): Promise<unknown>;
}

/** One node of a cluster as ioredis keeps it: a client whose options name the node's host and port. */
export interface RedisClusterNodeClient extends RedisClient {
  readonly options: RedisClientOptions;
}

/** A startup node of a cluster (ioredis `ClusterNode`): `"host:port"`, a port, or `{ host, port }`. */
export type RedisClusterNode = string | number | { host?: string; port?: number };

/**
 * Options of an ioredis `Cluster` (ioredis `ClusterOptions`). The ones the backend
 * sets on a cluster it creates are named; `redisOptions` are the options of every
 * node connection; any other ioredis cluster option passes through as given.
 */
export interface RedisClusterOptions {
  lazyConnect?: boolean;
  enableOfflineQueue?: boolean;
  clusterRetryStrategy?: ((times: number, reason?: Error) => number | void | null) | null;
  maxRedirections?: number;
  retryDelayOnFailover?: number;
  retryDelayOnClusterDown?: number;
  retryDelayOnTryAgain?: number;
  slotsRefreshTimeout?: number;
  slotsRefreshInterval?: number;
  /** Options of the connection to each node (ioredis `RedisOptions` without host, port, retryStrategy, ...). */
  redisOptions?: RedisClientOptions;
  /** Any other ioredis cluster option. `any`, as in {@link RedisClientOptions}. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  [option: string]: any;
}

/**
 * A Redis Cluster client (ioredis `Cluster`): it sends every keyed command to the
 * master that owns the key's slot, following MOVED and ASK redirections.
 */
export interface RedisCluster extends RedisCommands {
  /** Always true for an ioredis `Cluster`. */
  readonly isCluster: boolean;
  /** The options it was created with. */
  readonly options: RedisClusterOptions;
  /** Per slot (0-16383), the node keys (`host:port`) that serve it, master first, as this client last learned them. */
  readonly slots: string[][];
  /** The connections to the cluster's nodes this client holds. */
  nodes(role?: 'all' | 'master' | 'slave'): RedisClusterNodeClient[];
  /** Ask a node for the slot table again (ioredis does this itself on MOVED). */
  refreshSlotsCache(): void;
}

/** The ioredis `Redis` constructor, as the backend calls it once the driver is loaded. */
export interface RedisClientConstructor {
  new (url: string, options: RedisClientOptions): RedisClient;
  new (options: RedisClientOptions): RedisClient;
}

/** The ioredis `Cluster` constructor. */
export interface RedisClusterConstructor {
  new (startupNodes: RedisClusterNode[], options: RedisClusterOptions): RedisCluster;
}
