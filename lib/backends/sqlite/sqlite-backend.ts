import { existsSync } from 'node:fs';
import { resolve as resolvePath } from 'node:path';
import type { Clock } from '../../core/clock';
import { RheoError } from '../../core/errors';
import { loadOptionalPeer } from '../../core/optional-peer';
import type {
  DeadLetter,
  AppendOptions,
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
  TransactionalAck,
  TrimRequest,
  UpdateGroupRequest,
  WaitRequest,
} from '../backend';
import { createCapabilities } from '../capabilities';
import { SqlBackendBase } from '../sql/base';
import type { SqliteDriver, TypeormModule } from '../sql/external';
import { Checkpointer, FALLBACK_AUTOCHECKPOINT_PAGES } from './checkpointer';
import { SqliteContext, type SqliteBackendSettings } from './context';
import * as coordination from './coordination';
import * as delivery from './delivery';
import * as groupSettings from './group-settings';
import { requireSqliteVersion, upgradeSqlite } from './install';
import { SQLITE_BUSY_TIMEOUT_MS } from './locks';
import * as log from './log';
import { checkOptions, type SqliteBackendOptions } from './options';
import * as pause from './pause';
import * as recovery from './recovery';
import * as registry from './registry';
import * as retention from './retention';
import * as waiting from './waiting';

export type { SqliteBackendSettings } from './context';
export type { SqliteBackendOptions } from './options';

/**
 * SQLite (better-sqlite3) on a TypeORM DataSource: the embedded durable default.
 * Statements run on the DataSource's own better-sqlite3 connection, prepared once;
 * every read-modify-write is one short `BEGIN IMMEDIATE` transaction, and the sync
 * driver runs it without yielding, so one process never interleaves two of them.
 * Several processes may share the file (WAL; a lock another one holds is waited
 * for between attempts, off the event loop: locks.ts), but it is not a
 * distributed store. Wake-ups are in-process.
 */
export class SqliteBackend extends SqlBackendBase implements Backend {
  readonly name = 'sqlite';
  readonly capabilities = createCapabilities({
    guarantees: {
      durable: true,
      distributed: false,
      partitions: true,
      contiguousFrontier: true,
      replay: true,
      orderedPartitions: true,
      flowControl: true,
    },
    mechanisms: {
      notifications: false,
      blockingReads: false,
      batchWrites: true,
      secondaryIndexes: true,
      transactionalAppend: true,
      transactionalAck: true,
    },
  });
  readonly clock: Clock;
  /** What every contract section (registry.ts, log.ts, delivery.ts, recovery.ts, retention.ts, coordination.ts) runs on. */
  private readonly ctx: SqliteContext;
  private checkpointer: Checkpointer | null = null;
  /** Schema versions install() applied in this process (for describe()). */
  private readonly installed: number[] = [];

  constructor(private readonly settings: SqliteBackendSettings) {
    super();
    this.clock = settings.clock;
    this.ctx = new SqliteContext(settings, this.registrations, {
      init: () => this.init(),
      closed: () => this.closed,
      mustStream: (stream) => this.mustStream(stream),
      mustGroup: (stream, group) => this.mustGroup(stream, group),
      cachedGroup: (stream, group) => this.cachedGroup(stream, group),
      loadGroupsOf: (leases) => this.loadGroupsOf(leases),
      planTransactionalAck: (lease) => this.planTransactionalAck(lease),
      rememberStream: (info) => this.rememberStream(info),
      rememberGroup: (config) => this.rememberGroup(config),
      forgetGroup: (stream, group) => this.forgetGroup(stream, group),
      rotate: (stream, group, partitions) => this.rotate(stream, group, partitions),
      dedupe: (events, partitions) => this.dedupe(events, partitions),
      inInputOrder: (stored, indexOf) => this.inInputOrder(stored, indexOf),
    });
  }

  // ---------------------------------------------------------------- lifecycle

  protected async open(): Promise<void> {
    const ctx = this.ctx;
    const file = ctx.file;
    // The driver would make the missing folders of a missing file before refusing to open it.
    if (this.settings.readOnly && !existsSync(file))
      throw new RheoError('failed', `sqlite: file ${file} does not exist (readOnly opens a store)`);
    await this.initializeDataSource(ctx.ds, this.settings.owned);
    ctx.connect((ctx.ds.driver as SqliteDriver).databaseConnection);
    // Before anything is written (the journal mode below writes the file's header): a path to a file that is no
    // rheo store, another application's database or an empty file, is refused with the file as it was.
    if (this.settings.install === 'none') await ctx.locked('read', 'init', () => requireSqliteVersion(ctx.conn(), ctx.tables, file));
    if (this.settings.owned && !this.settings.readOnly) {
      // WAL lets readers run beside the writer; NORMAL sync is durable in WAL mode except for the last
      // transactions on power loss (never corruption). Set here rather than by TypeORM's enableWAL:
      // switching to WAL needs a lock another process may hold, and here that wait goes through
      // the lock waiter. A host DataSource keeps whatever journal it chose.
      await ctx.locked('write', 'init', () => {
        ctx.conn().pragma('journal_mode = WAL');
        ctx.conn().pragma('synchronous = NORMAL');
      });
    }
    if (this.settings.install === 'auto') await this.install();
    // Only once the file is usable: a refused one starts nothing. A read-only one is checkpointed by its writers.
    if (this.settings.owned && !this.settings.readOnly) this.startCheckpointer();
  }

  /**
   * Create the tables, or bring them to this release's schema version (one immediate
   * transaction: concurrent starters queue on the write lock, and the later ones find
   * the work done). Returns the versions applied.
   */
  async install(): Promise<number[]> {
    const now = this.clock.now();
    const applied = await this.ctx.write('install', () => upgradeSqlite(this.ctx.conn(), this.ctx.tables, now));
    this.installed.push(...applied);
    return applied;
  }

  /** The database file, and the schema versions this process installed. */
  describe(): BackendDescription {
    return { target: `file ${this.ctx.file}`, installed: [...this.installed] };
  }

  /**
   * Checkpoints of a file we own go to a worker thread (checkpointer.ts), never into
   * a commit on the event loop; a host's DataSource keeps its own settings.
   */
  private startCheckpointer(): void {
    const database = this.ctx.file;
    if (database === ':memory:' || database === '' || this.checkpointer) return;
    const fallBack = () => {
      // No worker: commits checkpoint again, as SQLite does by default.
      this.checkpointer = null;
      const db = this.ctx.database;
      if (!this.closed && db?.open) db.pragma('wal_autocheckpoint = 1000');
    };
    try {
      this.checkpointer = new Checkpointer(resolvePath(database), require.resolve('better-sqlite3'), fallBack);
    } catch {
      return; // no worker threads here, or the driver cannot be found from here: SQLite's own checkpoints stay
    }
    this.ctx.conn().pragma(`wal_autocheckpoint = ${FALLBACK_AUTOCHECKPOINT_PAGES}`);
  }

  async ping(): Promise<void> {
    try {
      await this.init();
      await this.ctx.locked('read', 'ping', () => this.ctx.stmt(this.ctx.plans.ping).get());
    } catch (err) {
      throw new RheoError('backend_unavailable', `sqlite: ${(err as Error).message}`, { cause: err });
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.ready?.catch(() => undefined);
    this.ctx.board.close();
    await this.checkpointer?.close();
    this.checkpointer = null;
    this.ctx.disconnect();
    const ds = this.ctx.ds;
    if (this.settings.owned && ds.isInitialized) await ds.destroy().catch(() => undefined);
  }

  // ---------------------------------------------------------------- registry.ts

  createStream(stream: string, partitions: number, retention?: Retention): Promise<StreamInfo> {
    return registry.createStream(this.ctx, stream, partitions, retention);
  }
  protected loadStream(stream: string): Promise<StreamInfo | null> {
    return registry.loadStream(this.ctx, stream);
  }
  listStreams(): Promise<StreamInfo[]> {
    return registry.listStreams(this.ctx);
  }
  setRetention(stream: string, retention: Retention): Promise<StreamInfo> {
    return registry.setRetention(this.ctx, stream, retention);
  }
  createGroup(req: CreateGroupRequest): Promise<GroupConfig> {
    return registry.createGroup(this.ctx, req);
  }
  protected loadGroup(stream: string, group: string): Promise<GroupConfig | null> {
    return registry.loadGroup(this.ctx, stream, group);
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

  // ---------------------------------------------------------------- pause.ts

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

  // ---------------------------------------------------------------- log.ts

  append(stream: string, events: NewEvent[], options: AppendOptions): Promise<AppendedEvents> {
    return log.append(this.ctx, stream, events, options);
  }
  read(req: ReadRequest): Promise<RheoEvent[]> {
    return log.read(this.ctx, req);
  }
  query(req: QueryRequest): Promise<RheoEvent[]> {
    return log.query(this.ctx, req);
  }

  // ---------------------------------------------------------------- delivery.ts

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
  ackInTransaction(lease: Lease<unknown>, work: (manager: unknown) => Promise<boolean>): Promise<TransactionalAck> {
    return delivery.ackInTransaction(this.ctx, lease, work);
  }

  // ---------------------------------------------------------------- recovery.ts

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

  // ---------------------------------------------------------------- retention.ts

  trim(req: TrimRequest): Promise<TrimResult> {
    return retention.trim(this.ctx, req);
  }
  purgeDeadLetters(stream: string, group: string, before: Date | null): Promise<number> {
    return retention.purgeDeadLetters(this.ctx, stream, group, before);
  }

  // ---------------------------------------------------------------- coordination.ts

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
 * SQLite: the embedded durable default, one file, no server. Creates and owns its
 * DataSource (WAL; destroyed on close). Single node: several processes may share
 * the file, but it is not a distributed store. The options are checked first
 * (options.ts), before a driver is loaded.
 */
export function sqliteBackend(options: SqliteBackendOptions): SqliteBackend {
  const { database, readOnly, ...settings } = checkOptions(options);
  const { DataSource } = loadOptionalPeer<TypeormModule>('typeorm', 'sqliteBackend');
  loadOptionalPeer('better-sqlite3', 'sqliteBackend');
  // SQLite's busy timeout is a synchronous sleep on the event loop: a few ms only, the rest of a lock
  // wait is the backend's, on timers. WAL is switched on by the backend's init, under the same wait.
  const dataSource = new DataSource({
    type: 'better-sqlite3',
    database,
    timeout: SQLITE_BUSY_TIMEOUT_MS,
    ...(readOnly ? { readonly: true, fileMustExist: true } : {}),
  });
  return new SqliteBackend({ ...settings, dataSource, owned: true, readOnly });
}
