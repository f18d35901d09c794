import { type Clock, StoreClock } from '../../core/clock';
import { RheoError } from '../../core/errors';
import { loadOptionalPeer } from '../../core/optional-peer';
import type {
  AppendOptions,
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
  TransactionalAck,
  TrimRequest,
  UpdateGroupRequest,
  WaitRequest,
} from '../backend';
import { createCapabilities } from '../capabilities';
import { SqlBackendBase } from '../sql/base';
import { mapDriverError, type StatementKind } from '../sql/errors';
import type { PgDataSourceOptions, PostgresDriver, TypeormDataSource, TypeormModule, TypeormQueryable } from '../sql/external';
import { notifyChannel, pgTables } from '../sql/names';
import type { InstallMode } from '../sql/options';
import type { Sql } from '../sql/statement';
import { WakeBoard } from '../sql/wake-board';
import { hostPort, urlTarget } from '../target';
import { PgRunner, pgPool, type PostgresContext, type SqlBaseHelpers } from './context';
import * as coordination from './coordination';
import * as delivery from './delivery';
import * as groupSettings from './group-settings';
import { PG_INSTALL_LOCK, requirePgVersion, upgradePg } from './install';
import { listenerClientConfig, PgListener } from './listener';
import * as log from './log';
import { checkOptions, type PostgresBackendOptions } from './options';
import * as pause from './pause';
import { pgPlans } from './plans';
import * as recovery from './recovery';
import * as registry from './registry';
import * as retention from './retention';
import * as waiting from './waiting';

export type { PostgresBackendOptions } from './options';

/** Settings of a {@link PostgresBackend}, checked; built by `typeormBackend` / `postgresBackend`. */
export interface PostgresBackendSettings {
  dataSource: TypeormDataSource;
  /** True when the backend created the DataSource and must destroy it on close. */
  owned: boolean;
  schema: string;
  install: InstallMode;
  clock: Clock;
}
/**
 * PostgreSQL on a TypeORM DataSource. Claims are one statement with
 * `FOR UPDATE SKIP LOCKED`, settles one statement over arrays, appends one
 * statement whose per-partition counter lock makes commit order equal sequence
 * order; wake-ups come from LISTEN/NOTIFY. Safe across processes and nodes.
 */ export class PostgresBackend extends SqlBackendBase implements Backend {
  readonly name = 'postgres';
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
    mechanisms: {
      notifications: true,
      blockingReads: false,
      batchWrites: true,
      secondaryIndexes: true,
      transactionalAppend: true,
      transactionalAck: true,
    },
  });
  readonly clock: Clock;
  readonly schema: string;
  private readonly ds: TypeormDataSource;
  private readonly runner: PgRunner;
  /** What every section works with (context.ts). */
  private readonly ctx: PostgresContext;
  /** Schema versions install() applied in this process (for describe()). */
  private readonly installed: number[] = [];
  /** Stops the store clock's refresh through this backend (a StoreClock only). */
  private detachClock?: () => void;

  constructor(private readonly settings: PostgresBackendSettings) {
    super();
    this.ds = settings.dataSource;
    this.clock = settings.clock;
    this.schema = settings.schema;
    this.runner = new PgRunner(this.ds, () => this.closed);
    const tables = pgTables(settings.schema);
    this.ctx = {
      ds: this.ds,
      tables,
      plans: pgPlans(tables),
      clock: this.clock,
      registrations: this.registrations,
      channel: notifyChannel(settings.schema),
      board: new WakeBoard(),
      listener: null,
      isClosed: () => this.closed,
      // Through this.q, not the runner itself: every statement outside a transaction passes one method of the backend.
      q: (sql, params, kind, what, runner) => this.q(sql, params, kind, what, runner),
      tx: (what, fn) => this.runner.tx(what, fn),
      preparedTx: (what, fn) => this.runner.preparedTx(what, fn),
      ...this.baseHelpers(),
    };
  }

  /** The base class's helpers the sections use, bound to this backend (they are protected: the sections reach them through the context). */
  private baseHelpers(): SqlBaseHelpers {
    return {
      mustStream: (stream) => this.mustStream(stream),
      mustGroup: (stream, group) => this.mustGroup(stream, group),
      cachedGroup: (stream, group) => this.cachedGroup(stream, group),
      loadGroupsOf: (leases) => this.loadGroupsOf(leases),
      rotate: (stream, group, partitions) => this.rotate(stream, group, partitions),
      dedupe: (events, partitions) => this.dedupe(events, partitions),
      inInputOrder: (stored, indexOf) => this.inInputOrder(stored, indexOf),
      planTransactionalAck: (lease) => this.planTransactionalAck(lease),
      rememberStream: (info) => this.rememberStream(info),
      rememberGroup: (config) => this.rememberGroup(config),
      forgetGroup: (stream, group) => this.forgetGroup(stream, group),
    };
  }

  // ---------------------------------------------------------------- lifecycle

  protected async open(): Promise<void> {
    await this.initializeDataSource(this.ds, this.settings.owned);
    if (this.settings.install === 'auto') await this.install();
    else await this.checkInstalled();
    if (this.clock instanceof StoreClock) this.detachClock = await this.clock.attach('postgres', () => this.storeTime());
    this.ctx.listener = new PgListener(
      (this.ds.driver as PostgresDriver).postgres,
      listenerClientConfig(this.ds.options as PgDataSourceOptions, this.schema),
      this.ctx.channel,
      this.ctx.board,
      (stream, group) => this.forgetGroup(stream, group),
    );
  }

  /**
   * Create the tables, or bring them from any earlier schema version to this
   * release's, under a transaction-scoped advisory lock so that concurrent starts
   * queue up (the second finds the work done). One transaction: an upgrade that
   * fails leaves the schema as it was. A schema newer than this release is refused.
   */
  async install(): Promise<void> {
    const qr = this.ds.createQueryRunner();
    try {
      await qr.connect();
      await qr.startTransaction();
      await qr.query(PG_INSTALL_LOCK, [`rheo:${this.schema}`]);
      const applied = await upgradePg(qr, this.schema, this.ctx.tables, this.clock.now());
      await qr.commitTransaction();
      this.installed.push(...applied);
    } catch (err) {
      if (qr.isTransactionActive) await qr.rollbackTransaction().catch(() => undefined);
      throw mapDriverError(err, 'write', 'install');
    } finally {
      await qr.release().catch(() => undefined);
    }
  }

  /** Host, database and schema (never credentials), and the schema versions this process installed. */
  describe(): BackendDescription {
    const o = this.ds.options as PgDataSourceOptions;
    const fromUrl = o.url ? urlTarget(o.url) : null;
    const host = fromUrl?.host ?? hostPort(o.host, o.port, { host: 'localhost', port: 5432 });
    const database = fromUrl?.database ?? o.database;
    return { target: `${host}${database ? `, database ${database}` : ''}, schema ${this.schema}`, installed: [...this.installed] };
  }

  /** `install: 'none'`: refuse to start on tables that are not at this release's schema version. */
  private async checkInstalled(): Promise<void> {
    try {
      await requirePgVersion(this.ds, this.schema, this.ctx.tables);
    } catch (err) {
      throw mapDriverError(err, 'read', 'install');
    }
  }

  /** PostgreSQL's own time, ms: what the store clock measures against (never on an operation's path). */
  private async storeTime(): Promise<number> {
    const pool = pgPool(this.ds);
    try {
      const rows = (await pool.query({ name: 'rheo_store_time', text: STORE_TIME_SQL, values: [] })).rows as Array<{ ms: number | string }>;
      return Number(rows[0]?.ms);
    } catch (err) {
      throw mapDriverError(err, 'read', 'clock');
    }
  }

  async ping(): Promise<void> {
    await this.init().catch((err) => {
      throw new RheoError('backend_unavailable', `postgres: ${(err as Error).message}`, { cause: err });
    });
    try {
      await this.ds.query(this.ctx.plans.ping);
    } catch (err) {
      throw new RheoError('backend_unavailable', `postgres ping: ${(err as Error).message}`, { cause: err });
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.ready?.catch(() => undefined);
    this.detachClock?.();
    this.ctx.board.close();
    await this.ctx.listener?.stop();
    if (this.settings.owned && this.ds.isInitialized) await this.ds.destroy().catch(() => undefined);
  }
  /** One statement, driver errors mapped (context.ts, PgRunner.q). */
  private q<Row>(sql: Sql<Row>, params: unknown[], kind: StatementKind, what: string, runner?: TypeormQueryable): Promise<Row[]> {
    return this.runner.q(sql, params, kind, what, runner);
  }

  // ---------------------------------------------------------------- registry (registry.ts)

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

  // ---------------------------------------------------------------- pause (pause.ts)

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

  // ---------------------------------------------------------------- the log (log.ts)

  append(stream: string, events: NewEvent[], options: AppendOptions): Promise<AppendedEvents> {
    return log.append(this.ctx, stream, events, options);
  }

  read(req: ReadRequest): Promise<RheoEvent[]> {
    return log.read(this.ctx, req);
  }

  query(req: QueryRequest): Promise<RheoEvent[]> {
    return log.query(this.ctx, req);
  }

  // ---------------------------------------------------------------- delivery (delivery.ts)

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

  // ---------------------------------------------------------------- recovery (recovery.ts)

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

  // ---------------------------------------------------------------- retention (retention.ts)

  trim(req: TrimRequest): Promise<TrimResult> {
    return retention.trim(this.ctx, req);
  }

  purgeDeadLetters(stream: string, group: string, before: Date | null): Promise<number> {
    return retention.purgeDeadLetters(this.ctx, stream, group, before);
  }

  // ---------------------------------------------------------------- coordination (coordination.ts)

  claimTurn(job: string, holder: string, ttlMs: number): Promise<boolean> {
    return coordination.claimTurn(this.ctx, job, holder, ttlMs);
  }

  releaseTurn(job: string, holder: string): Promise<boolean> {
    return coordination.releaseTurn(this.ctx, job, holder);
  }

  wait(req: WaitRequest): Promise<void> {
    return coordination.wait(this.ctx, req);
  }

  /** The LISTEN connection (exposed for tests and diagnostics). */
  get listenerConnections(): number {
    return this.ctx.listener?.connections ?? 0;
  }

  /** Start the LISTEN connection now instead of at the first wait(). */
  async listen(): Promise<void> {
    await this.init();
    await this.ctx.listener?.start();
  }
}

/** The server's wall clock now (not the transaction's start, as now() would be), ms since the epoch. */
const STORE_TIME_SQL = 'SELECT (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS ms';

/**
 * PostgreSQL: multi-node production store. Creates and owns its DataSource
 * (destroyed on close). `FOR UPDATE SKIP LOCKED` claims, LISTEN/NOTIFY wake-ups.
 * The options are checked first (options.ts), before a driver is loaded.
 */
export function postgresBackend(options: PostgresBackendOptions): PostgresBackend {
  const { url, poolSize, ...settings } = checkOptions(options);
  const { DataSource } = loadOptionalPeer<TypeormModule>('typeorm', 'postgresBackend');
  loadOptionalPeer('pg', 'postgresBackend');
  const dataSource = new DataSource({ type: 'postgres', url, poolSize, connectTimeoutMS: 10_000, applicationName: 'rheo' });
  return new PostgresBackend({ ...settings, dataSource, owned: true });
}
