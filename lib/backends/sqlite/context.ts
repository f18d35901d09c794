// What every section of the SQLite backend (registry.ts, log.ts, delivery.ts,
// recovery.ts, retention.ts, coordination.ts) works with: the one connection and
// the runner of its statements and transactions (lock waits, the connection gate,
// the pacer, driver errors mapped), the plans, the clock, the registrations, the
// wake board, and what the SQL base class does for both dialects, bound to the
// backend. The backend (sqlite-backend.ts) builds one and hands it to each call.
import type { Clock } from '../../core/clock';
import { RheoError } from '../../core/errors';
import type { Registrations } from '../../core/registrations';
import type { GroupConfig, Lease, RheoEvent, StreamInfo } from '../../core/types';
import type { AppendedEvents, NewEvent } from '../backend';
import type { StatementKind } from '../sql/errors';
import type { SqliteDatabase, SqliteStatement, TypeormDataSource } from '../sql/external';
import { groupRemovalPlans } from '../sql/group-removal';
import { sqliteTables, type TableNames } from '../sql/names';
import type { InstallMode } from '../sql/options';
import type { PlannedLease } from '../sql/settle-plan';
import type { Sql } from '../sql/statement';
import { WakeBoard } from '../sql/wake-board';
import { ConnectionGate } from './connection-gate';
import { LockWaiter, SQLITE_BUSY_TIMEOUT_MS } from './locks';
import { Pacer } from './pacer';
import { sqliteFlowPlans } from './flow-plans';
import { sqliteGroupSettingsPlans } from './group-settings-plans';
import { sqlitePausePlans } from './pause-plans';
import { sqlitePlans } from './plans';
import { sqliteRetentionPlans } from './retention-plans';
import { sqliteWaitingPlans } from './waiting-plans';

/** Settings of a {@link SqliteBackend}; built by `typeormBackend` / `sqliteBackend`. */
export interface SqliteBackendSettings {
  dataSource: TypeormDataSource;
  owned: boolean;
  install: InstallMode;
  clock: Clock;
  /** Bound on the whole wait for a lock another connection holds, in ms (see locks.ts). */
  lockTimeoutMs: number;
  /** Opened read-only (sqliteBackend's `readOnly`): nothing is written, every write refused. */
  readOnly?: boolean;
}

/**
 * What the SQL base class (sql/base.ts `SqlBackendBase`) does for the sections, bound
 * to the backend: opening once, the registrations' lookups (from what this process
 * remembers, else the store), the fetch rotation, batch dedupe.
 */
export interface SqlBaseCalls {
  init(): Promise<void>;
  /** Whether close() has begun (the base's flag: nothing may use the connection from then on). */
  closed(): boolean;
  mustStream(stream: string): Promise<StreamInfo>;
  mustGroup(stream: string, group: string): Promise<GroupConfig>;
  cachedGroup(stream: string, group: string): GroupConfig | null;
  loadGroupsOf(leases: Iterable<{ stream: string; group: string }>): Promise<void>;
  planTransactionalAck(lease: Lease<unknown>): Promise<{ planned: PlannedLease & { config: GroupConfig } } | { error: RheoError }>;
  rememberStream(info: StreamInfo): StreamInfo;
  rememberGroup(config: GroupConfig): GroupConfig;
  forgetGroup(stream: string, group: string): void;
  rotate(stream: string, group: string, partitions: number): number;
  dedupe(events: NewEvent[], partitions: number): { unique: NewEvent[]; indexOf: number[] };
  inInputOrder(stored: RheoEvent[], indexOf: number[]): AppendedEvents;
}

/** better-sqlite3's statement in raw mode: rows as arrays of their columns (rawStmt). */
interface RawStatement<Row> extends SqliteStatement<Row> {
  raw(on: boolean): RawStatement<Row>;
}

/**
 * The SQLite backend's one context. A class, not a plain record: it owns the
 * connection's state (the connection once open, its prepared statements, the
 * lock waiter, the gate, the pacer), which every statement goes through.
 */
export class SqliteContext {
  readonly ds: TypeormDataSource;
  readonly clock: Clock;
  readonly tables: TableNames = sqliteTables();
  readonly plans = sqlitePlans(this.tables);
  readonly retention = sqliteRetentionPlans(this.tables);
  readonly removal = groupRemovalPlans(this.tables, 'sqlite');
  readonly groupSettings = sqliteGroupSettingsPlans(this.tables);
  readonly pause = sqlitePausePlans(this.tables);
  readonly waiting = sqliteWaitingPlans(this.tables);
  readonly flow = sqliteFlowPlans(this.tables);
  /** In-process wake-ups: SQLite has no notifications, so only this process's writes wake its waiters. */
  readonly board = new WakeBoard();
  /** Lets other operations in between a long job's chunks (trim, purge). */
  readonly pacer = new Pacer();
  /** Held by a transactional consumer's handler transaction: everything else on the connection waits for it (connection-gate.ts). */
  readonly gate = new ConnectionGate();
  private readonly locks: LockWaiter;
  private db: SqliteDatabase | null = null;
  private readonly statements = new Map<string, SqliteStatement>();
  /** The statements run in raw mode (rows as arrays), apart from `statements`: a statement's mode is its own. */
  private readonly rawStatements = new Map<string, SqliteStatement>();

  constructor(
    readonly settings: SqliteBackendSettings,
    /** The backend's registrations (`Backend.registrations`), which the base calls read and fill. */
    readonly registrations: Registrations,
    readonly base: SqlBaseCalls,
  ) {
    this.ds = settings.dataSource;
    this.clock = settings.clock;
    this.locks = new LockWaiter(settings.lockTimeoutMs, this.file);
  }

  /** The database file, as the DataSource names it. */
  get file(): string {
    return String(this.ds.options.database);
  }

  /** The connection opened (init), or null: no statement runs on a connection the backend no longer holds. */
  get database(): SqliteDatabase | null {
    return this.db;
  }

  /** Start using the DataSource's connection (init). */
  connect(db: SqliteDatabase): void {
    this.db = db;
  }

  /** Let the connection go (close): its statements with it. */
  disconnect(): void {
    this.statements.clear();
    this.rawStatements.clear();
    this.db = null;
  }

  conn(): SqliteDatabase {
    if (this.base.closed() || !this.db || !this.db.open) throw new RheoError('backend_unavailable', 'the sqlite backend is closed');
    return this.db;
  }

  /** The statement prepared once on this connection; its `get` and `all` return the rows its tag names. */
  stmt<Row>(sql: Sql<Row>): SqliteStatement<Row> {
    let s = this.statements.get(sql);
    if (!s) {
      s = this.conn().prepare(sql);
      this.statements.set(sql, s);
    }
    return s as SqliteStatement<Row>;
  }

  /** {@link stmt} in raw mode: `all` returns each row as an array of its columns (no object per row). */
  rawStmt<Row>(sql: Sql<Row>): SqliteStatement<Row> {
    let s = this.rawStatements.get(sql);
    if (!s) {
      s = (this.conn().prepare(sql) as RawStatement<unknown>).raw(true);
      this.rawStatements.set(sql, s);
    }
    return s as SqliteStatement<Row>;
  }

  /**
   * Every statement and transaction of this backend runs through here: sync work,
   * attempted until it gets its lock (waiting between attempts on timers, never on
   * the event loop) for at most lockTimeoutMs, driver errors mapped. `fn` must be
   * repeatable: build results inside it and return them.
   */
  locked<T>(kind: StatementKind, what: string, fn: () => T): Promise<T> {
    if (kind === 'write' && this.settings.readOnly) {
      return Promise.reject(new RheoError('failed', `sqlite: ${what} writes, and file ${this.file} was opened read-only (readOnly: true)`));
    }
    // A handler's transaction is open on the connection: wait for its end (unless we run inside it).
    const turn = this.gate.blocked();
    if (turn) return turn.then(() => this.locked(kind, what, fn));
    try {
      return this.locks.run(kind, what, (busyTimeoutMs) => {
        this.gate.check(); // a retry after a wait: a handler's transaction may have begun meanwhile
        return this.withBusyTimeout(busyTimeoutMs, fn);
      });
    } finally {
      // Done with the connection (or waiting for another process's lock): a paused trim may go on.
      this.pacer.poke();
    }
  }

  /** One `BEGIN IMMEDIATE` transaction (a savepoint inside a running one), through {@link locked}. */
  write<T>(what: string, fn: () => T): Promise<T> {
    return this.locked('write', what, () => this.conn().transaction(fn).immediate());
  }

  /** Wake this process's consumers waiting on `stream` (wait). */
  wake(stream: string): void {
    this.board.wake(stream);
  }

  /**
   * Run `fn` with SQLite's own wait for a lock (it sleeps on the event loop) set
   * to `ms`: a few milliseconds, or 0 for a probe (see LockWaiter). A connection we
   * own was opened with the few milliseconds, and is put back to them. A host's
   * DataSource keeps its busy timeout (TypeORM's default is 5 s) for the host's
   * own queries, so ours is set around each attempt and the host's put back after
   * it (all synchronous: nothing else runs on the connection in between).
   */
  private withBusyTimeout<T>(ms: number, fn: () => T): T {
    const before = this.settings.owned ? SQLITE_BUSY_TIMEOUT_MS : this.stmt(this.plans.busyTimeout).get()!.timeout;
    if (before === ms) return fn();
    this.stmt(this.plans.setBusyTimeout(ms)).get();
    try {
      return fn();
    } finally {
      this.stmt(this.plans.setBusyTimeout(before)).get();
    }
  }
}
