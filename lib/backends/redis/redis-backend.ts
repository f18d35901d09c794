import { type Clock, StoreClock } from '../../core/clock';
import { RheoError } from '../../core/errors';
import type { Registrations } from '../../core/registrations';
import type {
  DeadLetter,
  GroupConfig,
  GroupInfo,
  GroupPause,
  Lag,
  Lease,
  Retention,
  RheoEvent,
  StreamInfo,
  TrimResult,
} from '../../core/types';
import type {
  AppendedEvents,
  Backend,
  BackendDescription,
  CancelDelayedRequest,
  CreateGroupRequest,
  FetchedLeases,
  FetchRequest,
  NewEvent,
  PauseGroupRequest,
  QueryRequest,
  ReadRequest,
  RenewResult,
  ReplayRequest,
  RescheduleRequest,
  ResolvedStart,
  SettleOp,
  SettleResult,
  SkipRequest,
  TrimRequest,
  UpdateGroupRequest,
  WaitRequest,
} from '../backend';
import { createCapabilities } from '../capabilities';
import { isCluster } from './cluster';
import { RedisContext } from './context';
import * as coordination from './coordination';
import * as delivery from './delivery';
import * as groupSettings from './group-settings';
import { checkDurability } from './durability';
import type { RedisClient } from './external';
import { checkStoredLayout, RedisConnection, storeTime, streamNode } from './lifecycle';
import * as log from './log';
import * as pause from './pause';
import { checkOptions, type RedisBackendOptions, type RedisDurability, type RedisSettings } from './options';
import * as recovery from './recovery';
import * as registry from './registry';
import * as retention from './retention';
import * as waiting from './waiting';

export type { RedisBackendOptions, RedisDurability } from './options';

/**
 * The Redis Streams backend (ioredis 6). Each partition is a stream whose entry
 * ids are `0-<sequence>`; per-group delivery state lives in hashes and sorted
 * sets next to it, under the stream's hash tag. Every state change (append,
 * claim, renew, settle, frontier advance, replay, reset, redrive) is one Lua
 * script, so a fence check and the write it guards are atomic. Times come from
 * the backend's clock, passed to each script: by default the store's time, the
 * process clock corrected by an offset measured with Redis `TIME` (ADR 041). See docs/redis.md.
 *
 * The work is done by the contract's sections (registry.ts, log.ts, delivery.ts,
 * recovery.ts, retention.ts, coordination.ts), each through the one RedisContext
 * (context.ts); this class opens, checks and closes, and hands every call on.
 */
export class RedisBackend implements Backend {
  readonly name = 'redis';
  readonly capabilities = createCapabilities({
    guarantees: {
      durable: true,
      distributed: true,
      partitions: true,
      contiguousFrontier: true,
      replay: true,
      orderedPartitions: true,
      flowControl: true,
    },
    mechanisms: { notifications: false, blockingReads: true, batchWrites: true, secondaryIndexes: false, transactionalAppend: false },
  });
  readonly clock: Clock;
  /** The key prefix every key of this backend starts with. */
  readonly prefix: string;
  /** Log entries one query call may read (RedisBackendOptions.queryScanLimit). */
  readonly queryScanLimit: number;
  /** Replicas each append waits for, and for how long (RedisBackendOptions.durability); undefined: none. */
  readonly durability?: Readonly<Required<RedisDurability>>;
  /** The stream and group registrations this process remembers; the facade shares them (ADR 044). */
  readonly registrations: Registrations;

  private readonly ctx: RedisContext;
  private readonly install: RedisSettings['install'];
  private ready?: Promise<void>;
  /** Stops the store clock's refresh through this backend (a StoreClock only). */
  private detachClock?: () => void;

  /** From checked settings ({@link redisBackend}, options.ts `checkOptions`): nothing here checks them again. */
  constructor(settings: RedisSettings) {
    this.ctx = new RedisContext(new RedisConnection(settings.target), settings);
    this.install = settings.install;
    this.clock = settings.clock;
    this.prefix = settings.prefix;
    this.queryScanLimit = settings.queryScanLimit;
    this.durability = settings.durability;
    this.registrations = this.ctx.registrations;
  }

  /** Whether this backend runs on a Redis Cluster. */
  get clustered(): boolean {
    return this.ctx.connection.clustered;
  }

  /** The connection that runs the scripts of `stream`: on a cluster, to the master of its slot (lifecycle.ts). */
  streamNode(stream: string): RedisClient {
    return streamNode(this.ctx, stream);
  }

  /** Entries in the key-object cache: bounded by its capacity whatever names are looked up. */
  get keyCacheSize(): number {
    return this.ctx.keyCacheSize;
  }

  /** On a cluster, the slots with a blocking connection for wait() now, and the node each is open to (tests look). */
  get wakeSlots(): Array<{ slot: number; node: string }> {
    return coordination.wakeSlots(this.ctx);
  }

  /** Host, port, database number and key prefix (never credentials); on a cluster, its startup nodes. */
  describe(): BackendDescription {
    return { target: `${this.ctx.connection.where().replace(/^at /, '')}, prefix ${this.prefix}` };
  }

  async init(): Promise<void> {
    if (this.ctx.connection.closed) throw new RheoError('backend_unavailable', 'the redis backend is closed');
    if (!this.ready) {
      this.ready = this.connect().catch((err) => {
        this.ready = undefined;
        throw this.ctx.mapError(err, 'read');
      });
    }
    return this.ready;
  }

  /** Connect, load the scripts, check the data layout and the server's durability settings, then follow the store's time. */
  private async connect(): Promise<void> {
    const client = await this.ctx.connection.open();
    await this.ctx.scripts.loadAll();
    await checkStoredLayout(this.ctx, client, this.install);
    await checkDurability(this.ctx, client);
    if (this.clock instanceof StoreClock && !this.detachClock)
      this.detachClock = await this.clock.attach('redis', () => storeTime(this.ctx));
  }

  async ping(): Promise<void> {
    if (!this.ready) await this.init();
    try {
      const c = this.ctx.redis();
      // A cluster is up when every master it knows answers (each holds a share of the streams).
      const masters = isCluster(c) ? c.nodes('master') : [];
      await (masters.length > 0 ? Promise.all(masters.map((m) => m.ping())) : c.ping());
    } catch (err) {
      const mapped = this.ctx.mapError(err, 'read');
      if (mapped.code === 'backend_unavailable') throw mapped;
      throw new RheoError('backend_unavailable', `redis ${this.ctx.connection.where()} did not answer: ${mapped.message}`, { cause: err });
    }
  }

  async close(): Promise<void> {
    const connection = this.ctx.connection;
    if (connection.closed) return;
    this.detachClock?.();
    const closing = coordination.closeWaits(this.ctx);
    closing.push(connection.close());
    await Promise.all(closing);
  }

  // registry.ts
  createStream(stream: string, partitions: number, retention?: Retention): Promise<StreamInfo> {
    return registry.createStream(this.ctx, stream, partitions, retention);
  }
  getStream(stream: string): Promise<StreamInfo | null> {
    return registry.getStream(this.ctx, stream);
  }
  listStreams(): Promise<StreamInfo[]> {
    return registry.listStreams(this.ctx);
  }
  setRetention(stream: string, limits: Retention): Promise<StreamInfo> {
    return registry.setRetention(this.ctx, stream, limits);
  }
  createGroup(req: CreateGroupRequest): Promise<GroupConfig> {
    return registry.createGroup(this.ctx, req);
  }
  getGroup(stream: string, group: string): Promise<GroupConfig | null> {
    return registry.getGroup(this.ctx, stream, group);
  }
  listGroups(stream: string): Promise<GroupConfig[]> {
    return registry.listGroups(this.ctx, stream);
  }
  deleteGroup(stream: string, group: string): Promise<void> {
    return registry.deleteGroup(this.ctx, stream, group);
  }
  updateGroup(req: UpdateGroupRequest): Promise<GroupConfig> {
    return groupSettings.updateGroup(this.ctx, req);
  }

  // pause.ts
  pauseGroup(req: PauseGroupRequest): Promise<GroupPause> {
    return pause.pauseGroup(this.ctx, req);
  }
  resumeGroup(stream: string, group: string): Promise<boolean> {
    return pause.resumeGroup(this.ctx, stream, group);
  }

  // ---------------------------------------------------------------- waiting.ts

  skip(req: SkipRequest): Promise<SettleResult[]> {
    return waiting.skip(this.ctx, req);
  }
  reschedule(req: RescheduleRequest): Promise<SettleResult[]> {
    return waiting.reschedule(this.ctx, req);
  }
  cancelDelayed(req: CancelDelayedRequest): Promise<number> {
    return waiting.cancelDelayed(this.ctx, req);
  }

  // log.ts
  append(stream: string, events: NewEvent[]): Promise<AppendedEvents> {
    return log.append(this.ctx, stream, events);
  }
  read(req: ReadRequest): Promise<RheoEvent[]> {
    return log.read(this.ctx, req);
  }
  query(req: QueryRequest): Promise<RheoEvent[]> {
    return log.query(this.ctx, req);
  }

  // delivery.ts
  fetch(req: FetchRequest): Promise<FetchedLeases> {
    return delivery.fetch(this.ctx, req);
  }
  renew(leases: Lease<unknown>[], leaseMs: number): Promise<RenewResult[]> {
    return delivery.renew(this.ctx, leases, leaseMs);
  }
  settle(ops: SettleOp[]): Promise<SettleResult[]> {
    return delivery.settle(this.ctx, ops);
  }
  release(leases: Lease<unknown>[]): Promise<SettleResult[]> {
    return delivery.release(this.ctx, leases);
  }

  // recovery.ts
  replay(req: ReplayRequest): Promise<number> {
    return recovery.replay(this.ctx, req);
  }
  reset(stream: string, group: string, start: ResolvedStart): Promise<void> {
    return recovery.reset(this.ctx, stream, group, start);
  }
  redrive(stream: string, group: string, eventIds: string[] | 'all'): Promise<number> {
    return recovery.redrive(this.ctx, stream, group, eventIds);
  }
  deadLetters(stream: string, group: string, limit: number, after?: string): Promise<DeadLetter[]> {
    return recovery.deadLetters(this.ctx, stream, group, limit, after);
  }
  countDeadLetters(stream: string, group: string, since: Date | null): Promise<number> {
    return recovery.countDeadLetters(this.ctx, stream, group, since);
  }
  lag(stream: string, group: string): Promise<Lag> {
    return recovery.lag(this.ctx, stream, group);
  }
  groupInfo(stream: string, group: string): Promise<GroupInfo> {
    return recovery.groupInfo(this.ctx, stream, group);
  }

  // retention.ts
  trim(req: TrimRequest): Promise<TrimResult> {
    return retention.trim(this.ctx, req);
  }
  purgeDeadLetters(stream: string, group: string, before: Date | null): Promise<number> {
    return retention.purgeDeadLetters(this.ctx, stream, group, before);
  }

  // coordination.ts
  claimTurn(job: string, holder: string, ttlMs: number): Promise<boolean> {
    return coordination.claimTurn(this.ctx, job, holder, ttlMs);
  }
  releaseTurn(job: string, holder: string): Promise<boolean> {
    return coordination.releaseTurn(this.ctx, job, holder);
  }
  wait(req: WaitRequest): Promise<void> {
    return coordination.wait(this.ctx, req);
  }
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
  return new RedisBackend(checkOptions(options));
}
