import { type Clock, StoreClock, storeClock } from '../../core/clock';
import { RheoError } from '../../core/errors';
import { loadOptionalPeer } from '../../core/optional-peer';
import { checkInt, checkKeys, checkObject, keySet } from '../../core/validate';
import type {
  AppendOptions,
  DeadLetter,
  GroupConfig,
  GroupInfo,
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
  TransactionalAck,
  TrimRequest,
  WaitRequest,
} from '../backend';
import { classifySettleError, leaseExpiredReason } from '../../core/settle';
import { boolArray, intArray, textArray } from './arrays';
import { newId } from '../../core/ids';
import { appended } from '../../core/appended';
import { createCapabilities } from '../capabilities';
import { SqlBackendBase } from '../sql/base';
import { isUniqueViolation, mapDriverError, StatementKind } from '../sql/errors';
import { groupRemovalPlans } from '../sql/group-removal';
import type { PgDataSourceOptions, PostgresDriver, TypeormDataSource, TypeormModule, TypeormQueryable } from '../sql/external';
import { checkSchemaName, notifyChannel, pgTables } from '../sql/names';
import { checkCommonOptions, InstallMode } from '../sql/options';
import { columnFilters, filteredQuery, jsonFieldNeedles } from '../sql/query-filter';
import { copyGroupConfig } from '../copies';
import { claimPastDelays } from '../delays';
import { groupInfoOf, lagOf, retentionColumns, toDeadLetter, toEvent, toGroup, toStream } from '../sql/rows';
import { backoffTable, leasePosition, planLeases, type PlannedLease, planSettles, settled, staleRenewals } from '../sql/settle-plan';
import { query, Sql } from '../sql/statement';
import { runHandlerWork, transactionManager } from '../sql/transaction';
import { WakeBoard } from '../sql/wake-board';
import { hostPort, urlTarget } from '../target';
import { PG_INSTALL_LOCK, requirePgVersion, upgradePg } from './install';
import { listenerClientConfig, PgListener } from './listener';
import { DbAppended, type DbClaimed, type DbFenced, JSON_SEPARATOR, pgPlans } from './plans';
import { eventBloom, queryBloom } from '../sql/bloom';
import { pgQuery } from './query-plan';
import { pgRetentionPlans } from './retention-plans';
import { trimPg } from './trim';

/** Options of {@link postgresBackend}. */
export interface PostgresBackendOptions {
  /** Connection URL, e.g. `postgres://user:pass@host:5432/db`. */
  url: string;
  /** Schema (namespace) of the tables. Default `public`. */
  schema?: string;
  /** Pool size. Default 10. */
  poolSize?: number;
  install?: InstallMode;
  /**
   * Time source for timestamps, lease expiry, retry delays and delayed events. Default: the
   * store's time (`storeClock()`: this process's clock corrected by an offset measured against
   * PostgreSQL's `clock_timestamp()`, docs/adr/041). Any other clock is used as it is.
   */
  clock?: Clock;
}

/** Settings of a {@link PostgresBackend}; built by `typeormBackend` / `postgresBackend`. */
export interface PostgresBackendSettings {
  dataSource: TypeormDataSource;
  /** True when the backend created the DataSource and must destroy it on close. */
  owned: boolean;
  schema: string;
  install: InstallMode;
  clock: Clock;
}

/**
 * What appendFreshPlan takes besides the columns: per event its rank among the
 * batch's events of its partition (1, 2, ...) and the running maximum of their
 * timestamps; per partition, ascending, their count and maximum timestamp.
 */
function freshBatch(events: NewEvent[]) {
  const seen = new Map<number, { n: number; max: number }>();
  const ranks = new Array<number>(events.length);
  const runningMax = new Array<number>(events.length);
  events.forEach((e, i) => {
    const ts = e.timestamp.getTime();
    let p = seen.get(e.partition);
    if (p) {
      p.n++;
      p.max = Math.max(p.max, ts);
    } else seen.set(e.partition, (p = { n: 1, max: ts }));
    ranks[i] = p.n;
    runningMax[i] = p.max;
  });
  const partitions = [...seen.keys()].sort((a, b) => a - b);
  return { ranks, runningMax, partitions, counts: partitions.map((p) => seen.get(p)!.n), maxima: partitions.map((p) => seen.get(p)!.max) };
}

/**
 * True when the batch's ids, keys and types can travel joined by JSON_SEPARATOR
 * (appendFreshPlan): none holds it, and none is empty (an empty key or type would
 * read back as none). The facade's names never do (no control characters, never
 * empty); anything else takes the array-bound statement.
 */
function joinable(events: NewEvent[]): boolean {
  const ok = (s: string | null) => s === null || (s !== '' && !s.includes(JSON_SEPARATOR));
  return events.every((e) => e.id !== '' && ok(e.id) && ok(e.key) && ok(e.type));
}

/** An event as stored now, from what was appended: its JSON parsed back, so the caller shares nothing with the input. */
function storedEvent(stream: string, e: NewEvent, sequence: number): RheoEvent {
  return toEvent(stream, {
    id: e.id,
    partition: e.partition,
    sequence,
    ts: e.timestamp.getTime(),
    key: e.key,
    type: e.type,
    metadata: e.metadataJson,
    payload: e.payloadJson,
    deliver_at: e.deliverAt?.getTime() ?? null,
  });
}

/**
 * The columns a batch with a delayed event adds to the append statements: each
 * event's deliver_at (null when it has none), and per partition of `partitions`
 * the rank (from 1, in batch order) of its last delayed event, null when it has
 * none: the partition's delayed_to moves to that event's sequence.
 */
function delayColumns(events: NewEvent[], partitions: number[]): { deliverAt: Array<number | null>; lastDelayed: Array<number | null> } {
  const rank = new Map<number, number>();
  const last = new Map<number, number>();
  const deliverAt = events.map((e) => {
    const r = (rank.get(e.partition) ?? 0) + 1;
    rank.set(e.partition, r);
    if (e.deliverAt === undefined) return null;
    last.set(e.partition, r);
    return e.deliverAt.getTime();
  });
  return { deliverAt, lastDelayed: partitions.map((p) => last.get(p) ?? null) };
}

/** Dead letters per purge statement. */
const PURGE_CHUNK = 5000;

/** A short, stable tag of a statement's text (prepared statement names must differ per text on one connection). */
function sqlHash(sql: string): string {
  let h = 5381;
  for (let i = 0; i < sql.length; i++) h = ((h << 5) + h + sql.charCodeAt(i)) | 0;
  return (h >>> 0).toString(36);
}

/**
 * PostgreSQL on a TypeORM DataSource. Claims are one statement with
 * `FOR UPDATE SKIP LOCKED`, settles one statement over arrays, appends one
 * statement whose per-partition counter lock makes commit order equal sequence
 * order; wake-ups come from LISTEN/NOTIFY. Safe across processes and nodes.
 */
export class PostgresBackend extends SqlBackendBase implements Backend {
  readonly name = 'postgres';
  readonly capabilities = createCapabilities({
    guarantees: { durable: true, distributed: true, partitions: true, contiguousFrontier: true, replay: true, orderedPartitions: true },
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
  private readonly plans: ReturnType<typeof pgPlans>;
  private readonly retentionPlans: ReturnType<typeof pgRetentionPlans>;
  private readonly removal: ReturnType<typeof groupRemovalPlans>;
  private readonly channel: string;
  private listener: PgListener | null = null;
  private readonly board = new WakeBoard();
  private readonly prepared = new Map<string, string>();
  /** Schema versions install() applied in this process (for describe()). */
  private readonly installed: number[] = [];
  /** Stops the store clock's refresh through this backend (a StoreClock only). */
  private detachClock?: () => void;

  constructor(private readonly settings: PostgresBackendSettings) {
    super();
    this.ds = settings.dataSource;
    this.clock = settings.clock;
    this.schema = settings.schema;
    this.plans = pgPlans(pgTables(settings.schema));
    this.retentionPlans = pgRetentionPlans(pgTables(settings.schema));
    this.removal = groupRemovalPlans(pgTables(settings.schema), 'postgres');
    this.channel = notifyChannel(settings.schema);
  }

  // ---------------------------------------------------------------- lifecycle

  protected async open(): Promise<void> {
    await this.initializeDataSource(this.ds, this.settings.owned);
    if (this.settings.install === 'auto') await this.install();
    else await this.checkInstalled();
    if (this.clock instanceof StoreClock) this.detachClock = await this.clock.attach('postgres', () => this.storeTime());
    this.listener = new PgListener(
      (this.ds.driver as PostgresDriver).postgres,
      listenerClientConfig(this.ds.options as PgDataSourceOptions, this.schema),
      this.channel,
      this.board,
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
      const applied = await upgradePg(qr, this.schema, pgTables(this.schema), this.clock.now());
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
      await requirePgVersion(this.ds, this.schema, pgTables(this.schema));
    } catch (err) {
      throw mapDriverError(err, 'read', 'install');
    }
  }

  /** PostgreSQL's own time, ms: what the store clock measures against (never on an operation's path). */
  private async storeTime(): Promise<number> {
    const pool = (this.ds.driver as PostgresDriver).master;
    if (!pool) throw new RheoError('backend_unavailable', 'the DataSource has no connection pool (not initialized or destroyed)');
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
      await this.ds.query(this.plans.ping);
    } catch (err) {
      throw new RheoError('backend_unavailable', `postgres ping: ${(err as Error).message}`, { cause: err });
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.ready?.catch(() => undefined);
    this.detachClock?.();
    this.board.close();
    await this.listener?.stop();
    if (this.settings.owned && this.ds.isInitialized) await this.ds.destroy().catch(() => undefined);
  }

  /**
   * Run one statement, mapping driver errors. In the caller's transaction it goes
   * through that EntityManager; otherwise straight to the DataSource's pg pool as
   * a named prepared statement, so PostgreSQL plans each of our statements once
   * per connection instead of on every call (planning was most of a claim's cost).
   */
  private async q<Row>(sql: Sql<Row>, params: unknown[], kind: StatementKind, what: string, runner?: TypeormQueryable): Promise<Row[]> {
    if (this.closed) throw new RheoError('backend_unavailable', 'the postgres backend is closed');
    try {
      if (runner) return await query(runner, sql, params);
      const pool = (this.ds.driver as PostgresDriver).master;
      if (!pool) throw new RheoError('backend_unavailable', 'the DataSource has no connection pool (not initialized or destroyed)');
      let name = this.prepared.get(sql);
      if (name === undefined) this.prepared.set(sql, (name = `rheo_${this.prepared.size}_${sqlHash(sql)}`));
      return (await pool.query({ name, text: sql, values: params })).rows as Row[];
    } catch (err) {
      throw mapDriverError(err, kind, what);
    }
  }

  /** Run `fn` in a transaction on one connection. */
  private async tx<T>(what: string, fn: (qr: TypeormQueryable) => Promise<T>): Promise<T> {
    if (this.closed) throw new RheoError('backend_unavailable', 'the postgres backend is closed');
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

  // ---------------------------------------------------------------- streams and groups

  async createStream(stream: string, partitions: number, retention?: Retention): Promise<StreamInfo> {
    try {
      const params = [stream, partitions, this.clock.now(), ...retentionColumns(retention)];
      const [row] = await this.q(this.plans.createStream, params, 'write', 'createStream');
      return this.rememberStream(toStream(row));
    } catch (err) {
      if (err instanceof RheoError && err.code === 'already_exists') throw RheoError.streamExists(stream, err);
      throw err;
    }
  }

  protected async loadStream(stream: string): Promise<StreamInfo | null> {
    const [row] = await this.q(this.plans.getStream, [stream], 'read', 'getStream');
    return row ? toStream(row) : null;
  }

  async listStreams(): Promise<StreamInfo[]> {
    return (await this.q(this.plans.listStreams, [], 'read', 'listStreams')).map(toStream);
  }

  async setRetention(stream: string, retention: Retention): Promise<StreamInfo> {
    const [row] = await this.q(this.plans.setRetention, [stream, ...retentionColumns(retention)], 'write', 'setRetention');
    if (!row) throw RheoError.streamNotFound(stream);
    return this.rememberStream(toStream(row));
  }

  async createGroup(req: CreateGroupRequest): Promise<GroupConfig> {
    const info = await this.mustStream(req.stream);
    const afters = await this.startAfters(req.stream, info.partitions, req.start);
    const r = req.retry;
    try {
      const [row] = await this.q(
        this.plans.createGroup,
        [req.stream, req.group, req.maxAttempts, r.initialMs, r.factor, r.maxMs, req.ordering, this.clock.now(), afters],
        'write',
        'createGroup',
      );
      return copyGroupConfig(this.rememberGroup(toGroup(row)));
    } catch (err) {
      if (err instanceof RheoError && err.code === 'already_exists') {
        throw RheoError.groupExists(req.stream, req.group, err);
      }
      throw err;
    }
  }

  /** Per partition, the last sequence a (re)started group skips. */
  private async startAfters(stream: string, partitions: number, start: ResolvedStart, runner?: TypeormQueryable): Promise<number[]> {
    if (start.kind === 'beginning') return new Array(partitions).fill(0);
    if (start.kind === 'after') {
      const s = start.sequences;
      return Array.from({ length: partitions }, (_, p) => (typeof s === 'number' ? s : (s[p] ?? 0)));
    }
    const out = new Array(partitions).fill(0);
    if (start.kind === 'end') {
      for (const row of await this.q(this.plans.highWatermarks, [stream], 'read', 'createGroup', runner))
        out[Number(row.partition)] = Number(row.hwm);
    } else {
      for (const row of await this.q(this.plans.lastBefore, [stream, start.time.getTime()], 'read', 'createGroup', runner))
        out[Number(row.partition)] = Number(row.after);
    }
    return out;
  }

  protected async loadGroup(stream: string, group: string): Promise<GroupConfig | null> {
    const [row] = await this.q(this.plans.getGroup, [stream, group], 'read', 'getGroup');
    return row ? toGroup(row) : null;
  }

  async listGroups(stream: string): Promise<GroupConfig[]> {
    await this.mustStream(stream);
    return (await this.q(this.plans.listGroups, [stream], 'read', 'listGroups')).map(toGroup);
  }

  /**
   * One transaction that first locks the group's partition rows, as claims,
   * replays, redrives and trims do (in partition order, so no deadlock): a claim
   * under way finishes first and its deliveries are deleted too; one that waited
   * finds the rows gone and claims nothing. A settle finds no delivery left.
   */
  async deleteGroup(stream: string, group: string): Promise<void> {
    const info = await this.mustStream(stream);
    const all = Array.from({ length: info.partitions }, (_, p) => p);
    const removed = await this.tx('deleteGroup', async (qr) => {
      await query(qr, this.plans.lockGroupPartitions, [stream, group, all]);
      await query(qr, this.removal.deliveries, [stream, group]);
      await query(qr, this.removal.deadLetters, [stream, group]);
      await query(qr, this.removal.positions, [stream, group]);
      return query(qr, this.removal.group, [stream, group]);
    });
    this.forgetGroup(stream, group);
    if (removed.length === 0) throw RheoError.groupNotFound(stream, group);
    // A waiting consumer of the group in this process looks again now, and learns it is gone.
    this.board.wake(stream);
  }

  // ---------------------------------------------------------------- the log

  async append(stream: string, events: NewEvent[], options: AppendOptions): Promise<AppendedEvents> {
    const info = await this.mustStream(stream);
    const manager = options.manager === undefined ? undefined : transactionManager(options.manager, this.ds);
    const { unique, indexOf } = this.dedupe(events, info.partitions);
    let stored: RheoEvent[] | null = null;
    if (!manager && joinable(unique)) {
      try {
        // Most appends carry fresh ids (generated, or new): skip the lookup of each id.
        stored = await this.appendFresh(stream, unique);
      } catch (err) {
        // An id was stored already (a retried append), or two appends of the same new id raced: the statement
        // failed whole, writing nothing; the probing statement returns the stored events.
        if (!(err instanceof RheoError && isUniqueViolation(err.cause))) throw err;
      }
    }
    // In the caller's transaction a failed statement would abort it: look the ids up first, so nothing fails.
    stored ??= await this.appendKnown(stream, unique, manager);
    // Same-process consumers need not wait for the NOTIFY round trip. (In a caller's transaction
    // nothing is visible before its commit; the NOTIFY is delivered at that commit.)
    if (!manager) this.board.wake(stream);
    return this.inInputOrder(stored, indexOf);
  }

  /** The usual append (appendFreshPlan): sequences follow from each partition's base and each event's rank. */
  private async appendFresh(stream: string, events: NewEvent[]): Promise<RheoEvent[]> {
    const batch = freshBatch(events);
    const params: unknown[] = [
      stream,
      events.map((e) => e.id).join(JSON_SEPARATOR),
      intArray(events.map((e) => e.partition)),
      intArray(events.map((e) => e.timestamp.getTime())),
      events.map((e) => e.key ?? '').join(JSON_SEPARATOR),
      events.map((e) => e.type ?? '').join(JSON_SEPARATOR),
      events.map((e) => e.metadataJson).join(JSON_SEPARATOR),
      events.map((e) => e.payloadJson).join(JSON_SEPARATOR),
      this.channel,
      intArray(batch.ranks),
      intArray(batch.runningMax),
      intArray(batch.partitions),
      intArray(batch.counts),
      intArray(batch.maxima),
      intArray(events.map((e) => eventBloom(e.metadata, e.payload))),
    ];
    // Events without a delay take the statement they always took; a batch with one, its variant ($16, $17).
    const delayed = events.some((e) => e.deliverAt !== undefined);
    if (delayed) {
      const { deliverAt, lastDelayed } = delayColumns(events, batch.partitions);
      params.push(deliverAt, lastDelayed);
    }
    const base = new Map<number, number>();
    const plan = delayed ? this.plans.appendFreshDelayed : this.plans.appendFresh;
    for (const r of await this.q(plan, params, 'write', 'append')) base.set(r.partition, Number(r.base));
    return events.map((e, i) => storedEvent(stream, e, base.get(e.partition)! + batch.ranks[i]));
  }

  /**
   * The probing append (appendPlan): ids already stored return their stored
   * event. Once more if it too meets a unique violation (a racing append stored
   * an id between its lookup and its insert), unless in the caller's transaction.
   */
  private async appendKnown(stream: string, events: NewEvent[], manager?: TypeormQueryable): Promise<RheoEvent[]> {
    const params: unknown[] = [
      stream,
      events.map((e) => e.id),
      events.map((e) => e.partition),
      events.map((e) => e.timestamp.getTime()),
      events.map((e) => e.key),
      events.map((e) => e.type),
      events.map((e) => e.metadataJson),
      events.map((e) => e.payloadJson),
      this.channel,
      events.map((e) => eventBloom(e.metadata, e.payload)),
    ];
    const delayed = events.some((e) => e.deliverAt !== undefined);
    if (delayed) params.push(events.map((e) => e.deliverAt?.getTime() ?? null));
    const plan = delayed ? this.plans.appendDelayed : this.plans.append;
    let rows: DbAppended[];
    try {
      rows = await this.q(plan, params, 'write', 'append', manager);
    } catch (err) {
      if (manager || !(err instanceof RheoError && isUniqueViolation(err.cause))) throw err;
      rows = await this.q(plan, params, 'write', 'append');
    }
    const stored = new Array<RheoEvent>(events.length);
    let known = 0;
    for (const row of rows) {
      const i = Number(row.ord) - 1;
      // Stored now: the statement returns only its sequence; stored before: the whole event.
      if (row.id !== null) known++;
      stored[i] = row.id === null ? storedEvent(stream, events[i], Number(row.sequence)) : toEvent(stream, row);
    }
    return appended(stored, known);
  }

  async read(req: ReadRequest): Promise<RheoEvent[]> {
    await this.mustStream(req.stream);
    const rows = await this.q(this.plans.read, [req.stream, req.partition, req.afterSequence, req.limit], 'read', 'read');
    return rows.map((r) => toEvent(req.stream, r));
  }

  async query(req: QueryRequest): Promise<RheoEvent[]> {
    await this.mustStream(req.stream);
    const needles = jsonFieldNeedles(req.where);
    const bloom = queryBloom(req.where);
    const tables = pgTables(this.schema);
    return filteredQuery(
      req,
      async (after, limit) => {
        const { sql, params } = pgQuery(tables, { stream: req.stream, ...columnFilters(req), ...needles, after, limit }, bloom);
        return (await this.q(sql, params, 'read', 'query')).map((r) => toEvent(req.stream, r));
      },
      true,
    );
  }

  // ---------------------------------------------------------------- leases

  async fetch(req: FetchRequest): Promise<FetchedLeases> {
    const info = await this.mustStream(req.stream);
    const g = await this.mustGroup(req.stream, req.group);
    const partitions = req.partitions ?? Array.from({ length: info.partitions }, (_, p) => p);
    const now = this.clock.now();
    this.board.fetching(req.stream, req.group);
    // One claim, and more only while claims park delayed events (../delays.ts).
    return claimPastDelays(req.limit, async (limit) => {
      const params = [
        req.stream,
        req.group,
        partitions,
        now,
        limit,
        this.rotate(req.stream, req.group, info.partitions),
        info.partitions,
        req.consumerId,
        req.leaseMs,
        newId(),
        g.maxAttempts,
      ];
      const rows =
        g.ordering === 'partition'
          ? await this.tx('fetch', async (qr) => {
              // Lock first, claim in a second statement: its snapshot then sees every claim committed before our lock.
              await query(qr, this.plans.lockGroupPartitions, [req.stream, req.group, partitions]);
              return query(qr, this.plans.fetchOrdered, params);
            })
          : await this.claimFresh(params);
      const leases: Lease[] = [];
      let deadLettered: ClaimDeadLetter[] | undefined;
      for (const r of rows) {
        // A row without a lease id is a delayed event the claim parked (no id), or one it dead-lettered.
        if (r.lease_id === null) {
          if (r.id !== null) {
            const attempt = Number(r.attempt);
            const dead = { eventId: r.id, partition: Number(r.partition), sequence: Number(r.sequence), attempt };
            (deadLettered ??= []).push({ ...dead, reason: leaseExpiredReason(attempt, g.maxAttempts) });
          }
          continue;
        }
        leases.push({
          leaseId: r.lease_id,
          receipt: r.lease_id,
          stream: req.stream,
          group: req.group,
          consumerId: req.consumerId,
          attempt: Number(r.attempt),
          leasedAt: new Date(now),
          expiresAt: new Date(now + req.leaseMs),
          event: toEvent(req.stream, r),
        });
      }
      const parked = rows.length - leases.length;
      return deadLettered ? { leases, parked, deadLettered } : { leases, parked };
    });
  }

  /**
   * The claim of a group without partition ordering: the fast statement, or, if its
   * insert of fresh deliveries met a row (plans.ts, claimPlan: never expected), the
   * guarded one, which leaves such an event to its row. The fast one failed whole.
   */
  private async claimFresh(params: unknown[]): Promise<DbClaimed[]> {
    try {
      return await this.q(this.plans.fetch, params, 'write', 'fetch');
    } catch (err) {
      if (!(err instanceof RheoError && isUniqueViolation(err.cause))) throw err;
      return this.q(this.plans.fetchGuarded, params, 'write', 'fetch');
    }
  }

  async renew(leases: Lease<unknown>[], leaseMs: number): Promise<RenewResult[]> {
    const now = this.clock.now();
    const results: Array<RenewResult | undefined> = new Array(leases.length);
    const todo: PlannedLease[] = [];
    leases.forEach((l, i) => {
      const pos = leasePosition(l);
      if (pos) todo.push({ i, stream: l.stream, group: l.group, ...pos, leaseId: l.leaseId, receipt: l.receipt });
    });
    await fencedRounds(
      todo,
      (batch) => this.q(this.plans.renew, [now, now + leaseMs, ...fenceColumns(batch)], 'write', 'renew'),
      (r) => {
        results[Number(r.i)] = r.receipt_ok
          ? { ok: true, expiresAt: new Date(now + leaseMs) }
          : { ok: false, error: RheoError.receiptMismatch('renew') };
      },
    );
    return staleRenewals(results);
  }

  async settle(ops: SettleOp[]): Promise<SettleResult[]> {
    const now = this.clock.now();
    await this.loadGroupsOf(ops.map((op) => op.lease));
    const { planned, answered } = planSettles(ops, (s, g) => this.cachedGroup(s, g));
    // Errors are built only for the ops that fail (a RheoError captures a stack: not free on the hot path).
    const results: Array<SettleResult | undefined> = new Array(ops.length);
    if (planned.length === 0) return settled(results, answered, (i) => ops[i].kind);
    await fencedRounds(
      planned,
      (batch) => {
        const { groupIndex, rows: backoff } = backoffTable(batch);
        return this.q(
          this.plans.settle,
          [
            now,
            ...fenceColumns(batch),
            textArray(batch.map((p) => p.action)),
            batch.map((p) => p.delayMs),
            batch.map((p) => p.reason),
            intArray(batch.map((p) => p.maxAttempts)),
            intArray(groupIndex),
            intArray(backoff.group),
            intArray(backoff.attempt),
            intArray(backoff.delay),
            this.channel,
            boolArray(batch.map((p) => p.ordered)),
          ],
          'write',
          'settle',
        );
      },
      (r) => {
        const i = Number(r.i);
        results[i] = r.receipt_ok ? { ok: true } : { ok: false, error: RheoError.receiptMismatch(ops[i].kind) };
      },
    );
    return settled(results, answered, (i) => ops[i].kind);
  }

  async release(leases: Lease<unknown>[]): Promise<SettleResult[]> {
    const now = this.clock.now();
    await this.loadGroupsOf(leases);
    const { planned, answered } = planLeases(
      leases,
      () => 'release',
      (s, g) => this.cachedGroup(s, g),
    );
    const results: Array<SettleResult | undefined> = new Array(leases.length);
    if (planned.length > 0) {
      const woken = new Set<string>();
      await fencedRounds(
        planned,
        (batch) => this.q(this.plans.release, [now, ...fenceColumns(batch), this.channel], 'write', 'release'),
        (r) => {
          const i = Number(r.i);
          results[i] = r.receipt_ok ? { ok: true } : { ok: false, error: RheoError.receiptMismatch('release') };
          if (r.receipt_ok) woken.add(leases[i].stream);
        },
      );
      // Same-process consumers need not wait for the NOTIFY round trip.
      for (const stream of woken) this.board.wake(stream);
    }
    return settled(results, answered, () => 'release');
  }

  /**
   * The handler's transaction and its ack (a transactional consumer): one pooled
   * connection for the whole delivery; `work` gets its EntityManager. The fence
   * runs last, inside the transaction, and locks the delivery until the commit.
   * A statement or commit that definitely failed throws (the handler's writes are
   * gone with it: retried as a handler failure); a commit whose fate is unknown is
   * `ack_failed`, since writes and ack share it.
   */
  async ackInTransaction(lease: Lease<unknown>, work: (manager: unknown) => Promise<boolean>): Promise<TransactionalAck> {
    const plan = await this.planTransactionalAck(lease);
    if ('error' in plan) return { kind: 'ack_failed', error: plan.error };
    const p = plan.planned;
    if (this.closed) throw new RheoError('backend_unavailable', 'the postgres backend is closed');
    const qr = this.ds.createQueryRunner();
    const rollback = () => (qr.isTransactionActive ? qr.rollbackTransaction().catch(() => undefined) : undefined);
    try {
      try {
        await qr.connect();
        await qr.startTransaction();
      } catch (err) {
        throw mapDriverError(err, 'read', 'ackInTransaction');
      }
      if (!(await runHandlerWork(work, qr.manager, rollback))) return { kind: 'rolled_back' };
      const ordered = p.config.ordering === 'partition';
      let row: { acked: number; live: boolean } | undefined;
      try {
        [row] = await query(qr, this.plans.ackInTransaction, [
          this.clock.now(),
          p.stream,
          p.group,
          p.partition,
          p.sequence,
          p.leaseId,
          p.receipt,
          this.channel,
          ordered,
        ]);
      } catch (err) {
        await rollback();
        // Nothing was committed: a lost connection here is not ambiguous.
        throw mapDriverError(err, 'read', 'ack');
      }
      if (row?.acked !== 1) {
        await rollback();
        return { kind: 'ack_failed', error: row?.live ? RheoError.receiptMismatch('ack') : RheoError.staleLease('ack') };
      }
      try {
        await qr.commitTransaction();
      } catch (err) {
        await rollback();
        const error = mapDriverError(err, 'write', 'ack commit');
        // Lost on the way (the connection, the server): writes and ack share a fate nobody knows.
        if (classifySettleError(error) === 'unknown') return { kind: 'ack_failed', error };
        throw error; // refused at commit (a deferred constraint, a serialization failure): nothing committed
      }
      // Same-process consumers of an ordered group need not wait for the NOTIFY round trip.
      if (ordered) this.board.wake(p.stream);
      return { kind: 'committed' };
    } finally {
      await qr.release().catch(() => undefined);
    }
  }

  // ---------------------------------------------------------------- replay, reset, redrive

  async replay(req: ReplayRequest): Promise<number> {
    const info = await this.mustStream(req.stream);
    await this.mustGroup(req.stream, req.group);
    const all = Array.from({ length: info.partitions }, (_, p) => p);
    // The time lookup runs before the transaction takes the group's locks (it is an index seek per partition,
    // and events appended meanwhile are after it anyway).
    const before = req.kind === 'time' ? await this.startAfters(req.stream, info.partitions, { kind: 'at', time: req.from }) : null;
    const n = await this.tx('replay', async (qr) => {
      if (req.kind === 'events') {
        const parts = [...new Set(req.events.map((e) => e.partition))].sort((a, b) => a - b);
        await query(qr, this.plans.lockGroupPartitions, [req.stream, req.group, parts]);
        const rows = await query(qr, this.plans.reopen, [
          req.stream,
          req.group,
          req.events.map((e) => e.partition),
          req.events.map((e) => e.sequence),
        ]);
        return rows.length;
      }
      const parts = req.partitions ?? all;
      await query(qr, this.plans.lockGroupPartitions, [req.stream, req.group, parts]);
      const marks = await this.marks(req.stream, qr);
      // Never below the trim point: only events still stored are re-opened, and counted.
      const afters = parts.map((p) =>
        Math.max(marks[p].trimmedTo, Math.min(req.kind === 'sequence' ? req.afterSequence : before![p], marks[p].hwm)),
      );
      await query(qr, this.plans.rewindDeliveries, [req.stream, req.group, parts, afters]);
      await query(qr, this.plans.rewindDeadLetters, [req.stream, req.group, parts, afters]);
      await query(qr, this.plans.rewindCursors, [req.stream, req.group, parts, afters]);
      return parts.reduce((sum, p, i) => sum + (marks[p].hwm - afters[i]), 0);
    });
    await this.notify(req.stream);
    return n;
  }

  async reset(stream: string, group: string, start: ResolvedStart): Promise<void> {
    const info = await this.mustStream(stream);
    await this.mustGroup(stream, group);
    const all = Array.from({ length: info.partitions }, (_, p) => p);
    const at = start.kind === 'at' ? await this.startAfters(stream, info.partitions, start) : null;
    await this.tx('reset', async (qr) => {
      await query(qr, this.plans.lockGroupPartitions, [stream, group, all]);
      const marks = await this.marks(stream, qr);
      const afters = (at ?? (await this.startAfters(stream, info.partitions, start, qr))).map((a, p) => Math.max(a, marks[p].trimmedTo));
      await query(qr, this.plans.resetDeliveries, [stream, group]);
      await query(qr, this.plans.resetDeadLetters, [stream, group]);
      await query(qr, this.plans.rewindCursors, [stream, group, all, afters]);
    });
    await this.notify(stream);
  }

  async redrive(stream: string, group: string, eventIds: string[] | 'all'): Promise<number> {
    await this.mustGroup(stream, group);
    const info = await this.mustStream(stream);
    const all = Array.from({ length: info.partitions }, (_, p) => p);
    const [row] = await this.tx('redrive', async (qr) => {
      // As a replay does: a trim deciding its points waits for this (or this for it), so a trim never
      // drops the events of dead letters this makes unfinished again.
      await query(qr, this.plans.lockGroupPartitions, [stream, group, all]);
      return eventIds === 'all'
        ? query(qr, this.plans.redriveAll, [stream, group, this.channel])
        : query(qr, this.plans.redriveIds, [stream, group, eventIds, this.channel]);
    });
    const n = Number(row.n);
    if (n > 0) this.board.wake(stream);
    return n;
  }

  /** Per partition, the high watermark and the trim point. */
  private async marks(stream: string, runner?: TypeormQueryable): Promise<Array<{ hwm: number; trimmedTo: number }>> {
    const rows = await this.q(this.plans.highWatermarks, [stream], 'read', 'marks', runner);
    const out: Array<{ hwm: number; trimmedTo: number }> = [];
    for (const r of rows) out[Number(r.partition)] = { hwm: Number(r.hwm), trimmedTo: Number(r.trimmed_to) };
    return out;
  }

  private async notify(stream: string): Promise<void> {
    await this.q(this.plans.wake, [this.channel, stream], 'write', 'notify').catch(() => undefined);
  }

  // ---------------------------------------------------------------- inspection

  private async state(stream: string, group: string) {
    await this.mustGroup(stream, group);
    const now = this.clock.now();
    const rows = await this.q(this.plans.groupState, [stream, group, now], 'read', 'lag');
    return { now, rows };
  }

  async lag(stream: string, group: string): Promise<Lag> {
    return lagOf(stream, group, (await this.state(stream, group)).rows);
  }

  async groupInfo(stream: string, group: string): Promise<GroupInfo> {
    const { now, rows } = await this.state(stream, group);
    const [dead] = await this.q(this.plans.deadCount, [stream, group], 'read', 'groupInfo');
    return groupInfoOf(stream, group, rows, dead.n, await this.mustGroup(stream, group), now);
  }

  async deadLetters(stream: string, group: string, limit: number, after?: string): Promise<DeadLetter[]> {
    await this.mustGroup(stream, group);
    let from = { partition: -1, sequence: 0 };
    if (after !== undefined) {
      const [pos] = await this.q(this.plans.deadLetterPosition, [stream, group, after], 'read', 'deadLetters');
      if (!pos) throw RheoError.invalid('after', `is not a dead-lettered event id of group "${group}"`);
      from = { partition: Number(pos.partition), sequence: Number(pos.sequence) };
    }
    const rows = await this.q(this.plans.deadLetters, [stream, group, from.partition, from.sequence, limit], 'read', 'deadLetters');
    return rows.map((r) => toDeadLetter(stream, group, r));
  }

  // ---------------------------------------------------------------- retention

  async trim(req: TrimRequest): Promise<TrimResult> {
    const info = await this.mustStream(req.stream);
    return trimPg(
      {
        plans: this.retentionPlans,
        lastBefore: (stream, partitions, time) => this.startAfters(stream, partitions, { kind: 'at', time }),
        tx: (what, fn) => this.tx(what, fn),
        q: (sql, params, kind, what) => this.q(sql, params, kind, what),
      },
      req,
      info.partitions,
    );
  }

  /** Chunk by chunk (each its own statement), so settles and claims never wait for a whole purge. */
  async purgeDeadLetters(stream: string, group: string, before: Date | null): Promise<number> {
    await this.mustGroup(stream, group);
    let purged = 0;
    for (;;) {
      const [row] =
        before === null
          ? await this.q(this.retentionPlans.purgeAll, [stream, group, PURGE_CHUNK], 'write', 'purgeDeadLetters')
          : await this.q(this.retentionPlans.purgeBefore, [stream, group, before.getTime(), PURGE_CHUNK], 'write', 'purgeDeadLetters');
      const n = Number(row.n);
      purged += n;
      // Rows another purge holds are skipped, not waited for: an empty chunk means nothing is left to us.
      if (n === 0) return purged;
    }
  }

  async countDeadLetters(stream: string, group: string, since: Date | null): Promise<number> {
    await this.mustGroup(stream, group);
    const [row] =
      since === null
        ? await this.q(this.plans.deadCount, [stream, group], 'read', 'countDeadLetters')
        : await this.q(this.plans.deadCountSince, [stream, group, since.getTime()], 'read', 'countDeadLetters');
    return Number(row.n);
  }

  async claimTurn(job: string, holder: string, ttlMs: number): Promise<boolean> {
    const rows = await this.q(this.retentionPlans.claimTurn, [job, holder, this.clock.now(), ttlMs], 'write', 'claimTurn');
    return rows.length === 1;
  }

  async releaseTurn(job: string, holder: string): Promise<boolean> {
    return (await this.q(this.removal.releaseTurn, [job, holder], 'write', 'releaseTurn')).length === 1;
  }

  // ---------------------------------------------------------------- wake-ups

  wait(req: WaitRequest): Promise<void> {
    if (!this.listener || this.closed) return Promise.resolve();
    void this.listener.start();
    return this.board.wait(req);
  }

  /** The LISTEN connection (exposed for tests and diagnostics). */
  get listenerConnections(): number {
    return this.listener?.connections ?? 0;
  }

  /** Start the LISTEN connection now instead of at the first wait(). */
  async listen(): Promise<void> {
    await this.init();
    await this.listener?.start();
  }
}

/** The server's wall clock now (not the transaction's start, as now() would be), ms since the epoch. */
const STORE_TIME_SQL = 'SELECT (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS ms';

const OPTION_KEYS = keySet('a postgresBackend option', ['url', 'schema', 'poolSize', 'install', 'clock']);

/**
 * PostgreSQL: multi-node production store. Creates and owns its DataSource
 * (destroyed on close). `FOR UPDATE SKIP LOCKED` claims, LISTEN/NOTIFY wake-ups.
 */
export function postgresBackend(options: PostgresBackendOptions): PostgresBackend {
  checkKeys('options', checkObject('options', options), OPTION_KEYS);
  const o = options;
  if (typeof o.url !== 'string' || !/^postgres(ql)?:\/\//.test(o.url)) throw RheoError.invalid('options.url', 'must be a postgres:// URL');
  const schema = o.schema === undefined ? 'public' : checkSchemaName('options.schema', o.schema);
  const poolSize = o.poolSize === undefined ? 10 : checkInt('options.poolSize', o.poolSize, 1, 1000);
  const { install, clock } = checkCommonOptions('options', o, () => storeClock());
  const { DataSource } = loadOptionalPeer<TypeormModule>('typeorm', 'postgresBackend');
  loadOptionalPeer('pg', 'postgresBackend');
  const dataSource = new DataSource({ type: 'postgres', url: o.url, poolSize, connectTimeoutMS: 10_000, applicationName: 'rheo' });
  return new PostgresBackend({ dataSource, owned: true, schema, install, clock });
}

/**
 * The columns that name and fence each planned lease, bound as one array per
 * column ($2..$8 of the settle and release statements): position in the call,
 * stream, group, partition, sequence, lease id, receipt.
 */
/** Rounds of a fenced statement for ops whose row changed under it (plans.ts, heldBy), the first included. */
const FENCE_ROUNDS = 3;

/**
 * Run a fenced statement (settle, release, renew) over `todo`, and again over the
 * ops it held but did not change: a change of the same row (a renewal of that
 * lease) committed while the statement waited for the row's lock, and the next
 * statement's snapshot sees it. `answer` gets every other row. An op still not
 * applied after FENCE_ROUNDS is left unanswered: the caller reports it stale,
 * which is safe (the lease expires and the event is delivered again).
 */
async function fencedRounds<P extends { i: number }, R extends DbFenced>(
  todo: P[],
  run: (batch: P[]) => Promise<R[]>,
  answer: (row: R) => void,
): Promise<void> {
  for (let round = 1; todo.length > 0; round++) {
    const again = new Set<number>();
    for (const r of await run(todo)) {
      if (r.receipt_ok && !r.applied) {
        if (round < FENCE_ROUNDS) again.add(Number(r.i));
        continue;
      }
      answer(r);
    }
    todo = again.size === 0 ? [] : todo.filter((p) => again.has(p.i));
  }
}

function fenceColumns(planned: PlannedLease[]) {
  return [
    intArray(planned.map((p) => p.i)),
    textArray(planned.map((p) => p.stream)),
    textArray(planned.map((p) => p.group)),
    intArray(planned.map((p) => p.partition)),
    intArray(planned.map((p) => p.sequence)),
    textArray(planned.map((p) => p.leaseId)),
    textArray(planned.map((p) => p.receipt)),
  ];
}
