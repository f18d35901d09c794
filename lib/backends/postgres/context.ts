// The PostgreSQL backend's one context: what every section (registry.ts, log.ts,
// delivery.ts, recovery.ts, retention.ts, coordination.ts) needs of the backend.
// The backend builds it once, in its constructor; each section is plain functions
// that take it first, and reach one another's state only through it.
import type { Clock } from '../../core/clock';
import { RheoError } from '../../core/errors';
import type { Registrations } from '../../core/registrations';
import type { GroupConfig, Lease, RheoEvent, StreamInfo } from '../../core/types';
import type { AppendedEvents, NewEvent } from '../backend';
import { mapDriverError, type StatementKind } from '../sql/errors';
import type { PgPoolClient, PostgresDriver, TypeormDataSource, TypeormQueryable } from '../sql/external';
import type { TableNames } from '../sql/names';
import type { PlannedLease } from '../sql/settle-plan';
import { query, type Sql } from '../sql/statement';
import type { WakeBoard } from '../sql/wake-board';
import type { PgListener } from './listener';
import type { PgPlans } from './plans';

/** What the sections use of `SqlBackendBase` (sql/base.ts, which documents each): its methods, bound to the backend. */
export interface SqlBaseHelpers {
  mustStream(stream: string): Promise<StreamInfo>;
  mustGroup(stream: string, group: string): Promise<GroupConfig>;
  cachedGroup(stream: string, group: string): GroupConfig | null;
  loadGroupsOf(leases: Iterable<{ stream: string; group: string }>): Promise<void>;
  rotate(stream: string, group: string, partitions: number): number;
  dedupe(events: NewEvent[], partitions: number): { unique: NewEvent[]; indexOf: number[] };
  inInputOrder(stored: RheoEvent[], indexOf: number[]): AppendedEvents;
  planTransactionalAck(lease: Lease<unknown>): Promise<{ planned: PlannedLease & { config: GroupConfig } } | { error: RheoError }>;
  rememberStream(info: StreamInfo): StreamInfo;
  rememberGroup(config: GroupConfig): GroupConfig;
  forgetGroup(stream: string, group: string): void;
}

/** What every section of the PostgreSQL backend works with. */
export interface PostgresContext extends SqlBaseHelpers {
  readonly ds: TypeormDataSource;
  readonly tables: TableNames;
  readonly plans: PgPlans;
  readonly clock: Clock;
  /** The backend's registrations (`SqlBackendBase.registrations`), which the helpers above keep. */
  readonly registrations: Registrations;
  /** The NOTIFY channel of the schema: statements that make work due notify it. */
  readonly channel: string;
  /** Wakes this process's waiting consumers at once, without the NOTIFY round trip. */
  readonly board: WakeBoard;
  /** The LISTEN connection, from the backend's start on (null before). */
  listener: PgListener | null;
  isClosed(): boolean;
  /** One statement, driver errors mapped (see {@link PgRunner.q}). */
  q<Row>(sql: Sql<Row>, params: unknown[], kind: StatementKind, what: string, runner?: TypeormQueryable): Promise<Row[]>;
  /** `fn` in a transaction on one connection (see {@link PgRunner.tx}). */
  tx<T>(what: string, fn: (qr: TypeormQueryable) => Promise<T>): Promise<T>;
  /** `fn` in a transaction of named prepared statements (see {@link PgRunner.preparedTx}). */
  preparedTx<T>(what: string, fn: (run: PreparedRun) => Promise<T>): Promise<T>;
}

/** One statement of a {@link PgRunner.preparedTx} transaction. */
export type PreparedRun = <Row>(sql: Sql<Row>, params: unknown[]) => Promise<Row[]>;

/** The error of any statement run once the backend is closed. */
export function backendClosed(): RheoError {
  return new RheoError('backend_unavailable', 'the postgres backend is closed');
}

/** The DataSource's pg pool; none before it is initialized or once it is destroyed. */
export function pgPool(ds: TypeormDataSource) {
  const pool = (ds.driver as PostgresDriver).master;
  if (!pool) throw new RheoError('backend_unavailable', 'the DataSource has no connection pool (not initialized or destroyed)');
  return pool;
}

/** A short, stable tag of a statement's text (prepared statement names must differ per text on one connection). */
function sqlHash(sql: string): string {
  let h = 5381;
  for (let i = 0; i < sql.length; i++) h = ((h << 5) + h + sql.charCodeAt(i)) | 0;
  return (h >>> 0).toString(36);
}

/** Runs the backend's statements and transactions on its DataSource, mapping driver errors. */
export class PgRunner {
  private readonly prepared = new Map<string, string>();

  constructor(
    private readonly ds: TypeormDataSource,
    private readonly isClosed: () => boolean,
  ) {}

  /**
   * Run one statement, mapping driver errors. In the caller's transaction it goes
   * through that EntityManager; otherwise straight to the DataSource's pg pool as
   * a named prepared statement, so PostgreSQL plans each of our statements once
   * per connection instead of on every call (planning was most of a claim's cost).
   */
  async q<Row>(sql: Sql<Row>, params: unknown[], kind: StatementKind, what: string, runner?: TypeormQueryable): Promise<Row[]> {
    if (this.isClosed()) throw backendClosed();
    try {
      if (runner) return await query(runner, sql, params);
      return (await pgPool(this.ds).query({ name: this.nameOf(sql), text: sql, values: params })).rows as Row[];
    } catch (err) {
      throw mapDriverError(err, kind, what);
    }
  }

  /** The name of `sql` as a prepared statement (the same on every connection; pg prepares it once per connection). */
  private nameOf(sql: string): string {
    let name = this.prepared.get(sql);
    if (name === undefined) this.prepared.set(sql, (name = `rheo_${this.prepared.size}_${sqlHash(sql)}`));
    return name;
  }

  /**
   * Run `fn` in a transaction on one of the pool's connections, each statement a
   * named prepared statement as {@link q} runs it: for a transaction on the hot
   * path (the claim of a group with flow limits), whose statements would otherwise
   * be planned on every call. Driver errors are mapped as {@link tx} maps them.
   */
  async preparedTx<T>(what: string, fn: (run: PreparedRun) => Promise<T>): Promise<T> {
    if (this.isClosed()) throw backendClosed();
    let client: PgPoolClient;
    try {
      client = await pgPool(this.ds).connect();
    } catch (err) {
      throw err instanceof RheoError ? err : mapDriverError(err, 'read', what);
    }
    const run: PreparedRun = async <Row>(sql: Sql<Row>, params: unknown[]) =>
      (await client.query({ name: this.nameOf(sql), text: sql, values: params })).rows as Row[];
    let broken = false;
    try {
      await client.query('BEGIN');
      const out = await fn(run);
      await client.query('COMMIT');
      return out;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {
        broken = true;
      });
      throw err instanceof RheoError ? err : mapDriverError(err, 'write', what);
    } finally {
      // A connection whose rollback failed is not given back to the pool as if it were clean.
      client.release(broken);
    }
  }

  /** Run `fn` in a transaction on one connection. */
  async tx<T>(what: string, fn: (qr: TypeormQueryable) => Promise<T>): Promise<T> {
    if (this.isClosed()) throw backendClosed();
    const qr = this.ds.createQueryRunner();
    try {
      await qr.connect();
      await qr.startTransaction();
      const out = await fn(qr);
      await qr.commitTransaction();
      return out;
    } catch (err) {
      if (qr.isTransactionActive) await qr.rollbackTransaction().catch(() => undefined);
      throw mapDriverError(err, 'write', what);
    } finally {
      await qr.release().catch(() => undefined);
    }
  }
}
