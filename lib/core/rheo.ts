// The facade: the list of operations. Each checks its input through requests.ts
// (the one place request validation lives), resolves what needs the stream, and
// calls the backend. It depends on the Backend contract by type only (erased at
// runtime), so core/ still loads nothing of ours (docs/adr/003-errors-and-layers.md).
import type { Backend, FetchedLeases, RenewResult, ReplayRequest, SettleOp, SettleResult } from '../backends/backend';
import { repeatsOf } from './appended';
import { encodeCursor } from './cursor';
import { StoreClock } from './clock';
import { type OperationMessage, traced } from './diagnostics';
import { newId } from './ids';
import { RheoError, toRheoError } from './errors';
import { MAX_PAGE_LIMIT, MAX_PARTITIONS } from './limits';
import {
  type AppendLimits,
  checkAppendLimits,
  checkBatch,
  checkBatchBytes,
  checkGroupOptions,
  checkLeaseMs,
  checkOptions,
  checkPageLimit,
  checkPartition,
  checkPartitions,
  checkPurge,
  checkQuery,
  checkQueryPartition,
  checkRedrive,
  checkReplayKind,
  checkReplayRange,
  checkRetention,
  checkTrimOptions,
  keepsEverything,
  resolveStart,
  toNewEvent,
} from './requests';
import {
  checkFetchOptions,
  checkLeases,
  checkSettles,
  type FetchOptions,
  isIssued,
  issueLease,
  type NackOptions,
  type RejectOptions,
  type SettleRequest,
} from './delivery-requests';
import type {
  AppendInput,
  AppendOptions,
  DeadLetter,
  DeleteGroupOptions,
  GroupConfig,
  GroupInfo,
  GroupOptions,
  JsonValue,
  Lag,
  Lease,
  Page,
  PurgeDeadLettersOptions,
  Query,
  RedriveOptions,
  ReplayOptions,
  ResetOptions,
  Retention,
  RheoEvent,
  StreamInfo,
  TrimOptions,
  TrimResult,
} from './types';
import { sendSpan } from './otel';
import { settleEach } from './settle';
import { FrontierWatch, publishLeases, publishSettles, settlesObserved } from './published';
import { Registrations } from './registrations';
import { checkDate, checkInt, checkName, checkNewName, checkObject } from './validate';

export type { FetchOptions, NackOptions, RejectOptions, SettleRequest } from './delivery-requests';

/** Options of a {@link Rheo} instance. */
export interface RheoOptions {
  /** Largest accepted payload, as JSON bytes (UTF-8). Default 1 MiB. */
  maxPayloadBytes?: number;
  /** Largest accepted metadata of one event, as JSON bytes (UTF-8). Default 64 KiB. */
  maxMetadataBytes?: number;
  /** Largest appendBatch call: its payloads' and metadata's JSON bytes together. Default 16 MiB. */
  maxBatchBytes?: number;
}

/**
 * The facade over one backend: validates every input, applies defaults and
 * routing, and speaks the portable vocabulary. Framework-free; the Nest layer and
 * the runtime are built on it.
 */
export class Rheo {
  /** Names this instance in the diagnostics channels' messages (`OperationMessage.rheo`), so subscribers can tell instances apart. */
  readonly id = newId();
  readonly backend: Backend;
  private readonly limits: AppendLimits;
  private ready?: Promise<void>;
  /**
   * The stream and group registrations this process remembers: the backend's own
   * when it keeps them (`Backend.registrations`), so they are remembered once.
   * Streams for their partitions; groups for their maxAttempts, read only when a
   * settle's outcome is observed (diagnostics.ts).
   */
  private readonly registrations: Registrations;
  private readonly frontiers = new FrontierWatch();
  /** The backend's init resolved: {@link init} need not be awaited again. */
  private connected = false;

  constructor(backend: Backend, options: RheoOptions = {}) {
    if (!backend || typeof backend.fetch !== 'function') throw RheoError.invalid('backend', 'must be a Backend');
    checkOptions('rheo', options);
    this.backend = backend;
    this.registrations = backend.registrations ?? new Registrations();
    this.limits = checkAppendLimits(options);
  }

  /** Connect the backend (idempotent). Every other call does it on first use. */
  init(): Promise<void> {
    if (!this.ready) {
      this.ready = this.backend.init().then(
        () => {
          this.connected = true;
        },
        (err) => {
          this.ready = undefined;
          throw toRheoError(err, 'backend_unavailable');
        },
      );
    }
    return this.ready;
  }

  /**
   * The stream's registration, without a wait when the backend is connected and
   * the stream known: the hot paths (append, fetch) then reach the backend in the
   * same turn, and the telemetry hooks around them cost no extra promise.
   */
  private ensured(stream: string): StreamInfo | Promise<StreamInfo> {
    const known = this.connected ? this.registrations.stream(stream) : undefined;
    return known ?? this.init().then(() => this.stream(stream));
  }

  /**
   * The stream's registration, for its partition count: looked up once, then
   * remembered (a stream's partitions never change and streams are never
   * deleted), so appends, fetches and reads cost no extra round trip. Its
   * `retention` may be stale: {@link freshStream} reads that.
   */
  private async stream(name: string): Promise<StreamInfo> {
    const known = this.registrations.stream(name);
    if (known) return known;
    const info = await this.freshStream(name);
    this.registrations.rememberStream(info);
    return info;
  }

  /** The stream's registration as the store has it now (retention included). */
  private async freshStream(name: string): Promise<StreamInfo> {
    const info = await this.backend.getStream(name);
    if (!info) throw RheoError.streamNotFound(name);
    return info;
  }

  /** An operation on its `rheo:<op>` TracingChannel (diagnostics.ts), the message naming this instance. */
  private traced<T>(
    op: OperationMessage['operation'],
    message: () => MessageDraft,
    fn: () => Promise<T>,
    done?: (result: T, message: OperationMessage) => void,
  ): Promise<T> {
    return traced(op, () => ({ ...message(), rheo: this.id }), fn, done);
  }

  // ---------------------------------------------------------------- streams, groups

  /**
   * Create a stream with `partitions` partitions (default 1) and, optionally, a
   * retention. With `ifNotExists`, an existing stream is returned as it is (its
   * partitions and retention unchanged: see {@link setRetention}).
   */
  async createStream(
    stream: string,
    options: { partitions?: number; ifNotExists?: boolean; retention?: Retention } = {},
  ): Promise<StreamInfo> {
    checkName('stream', stream);
    checkOptions('createStream', options);
    // A '/' is refused in a new stream's name only: with ifNotExists, one that exists is returned (createStreamChecked).
    if (!options.ifNotExists) checkNewName('stream', stream);
    const partitions = options.partitions === undefined ? 1 : checkInt('partitions', options.partitions, 1, MAX_PARTITIONS);
    const retention = options.retention === undefined ? undefined : checkRetention('retention', options.retention);
    return this.traced(
      'createStream',
      () => ({ operation: 'createStream', stream }),
      () => this.createStreamChecked(stream, partitions, retention, options),
    );
  }

  private async createStreamChecked(
    stream: string,
    partitions: number,
    retention: Retention | undefined,
    options: { ifNotExists?: boolean },
  ): Promise<StreamInfo> {
    await this.init();
    if (options.ifNotExists) {
      const existing = await this.backend.getStream(stream);
      if (existing) return existing;
      checkNewName('stream', stream);
    }
    try {
      return await this.backend.createStream(stream, partitions, retention && !keepsEverything(retention) ? retention : undefined);
    } catch (err) {
      if (options.ifNotExists && err instanceof RheoError && err.code === 'already_exists') return this.freshStream(stream);
      throw err;
    }
  }

  /** Create a consumer group on `stream`. */
  async createGroup(stream: string, group: string, options: GroupOptions = {}): Promise<GroupConfig> {
    checkName('stream', stream);
    checkName('group', group);
    const checked = checkGroupOptions(options);
    // As for streams: a '/' is refused in a new group's name only (createGroupChecked).
    if (!options.ifNotExists) checkNewName('group', group);
    return this.traced(
      'createGroup',
      () => ({ operation: 'createGroup', stream, group }),
      () => this.createGroupChecked(stream, group, checked, options),
    );
  }

  private async createGroupChecked(
    stream: string,
    group: string,
    { maxAttempts, retry, ordering }: ReturnType<typeof checkGroupOptions>,
    options: GroupOptions,
  ): Promise<GroupConfig> {
    await this.init();
    const info = await this.stream(stream);
    const start = resolveStart('start', options.start, info.partitions);
    if (options.ifNotExists) {
      const existing = await this.backend.getGroup(stream, group);
      if (existing) return existing;
      checkNewName('group', group);
    }
    try {
      return await this.backend.createGroup({ stream, group, start, maxAttempts, retry, ordering });
    } catch (err) {
      if (options.ifNotExists && err instanceof RheoError && err.code === 'already_exists') {
        const existing = await this.backend.getGroup(stream, group);
        if (existing) return existing;
      }
      throw err;
    }
  }

  /** Replace a stream's retention; `{}` makes it keep everything again. Takes effect at the next trim. */
  async setRetention(stream: string, retention: Retention): Promise<StreamInfo> {
    checkName('stream', stream);
    const checked = checkRetention('retention', retention);
    await this.init();
    await this.stream(stream);
    return this.backend.setRetention(stream, checked);
  }

  /**
   * Apply the stream's retention now: delete the events it lets go that every
   * group has finished (see {@link TrimOptions.force} for the ones they have not).
   * A stream without `maxAgeMs` or `maxEvents` keeps everything: the result then
   * removes nothing. Dead letters are purged separately ({@link purgeDeadLetters}).
   */
  async trim(stream: string, options: TrimOptions = {}): Promise<TrimResult> {
    checkName('stream', stream);
    const { force } = checkTrimOptions(options);
    return this.traced(
      'trim',
      () => ({ operation: 'trim', stream }),
      async () => {
        await this.init();
        const info = await this.freshStream(stream);
        const retention = info.retention ?? {};
        const before = retention.maxAgeMs === undefined ? undefined : new Date(this.backend.clock.now() - retention.maxAgeMs);
        return this.backend.trim({ stream, before, maxEvents: retention.maxEvents, force });
      },
      (result, m) => (m.count = result.removed),
    );
  }

  /** Delete a group's dead letters dead-lettered before a time, or all of them. Returns how many. */
  async purgeDeadLetters(stream: string, group: string, options: PurgeDeadLettersOptions): Promise<number> {
    checkName('stream', stream);
    checkName('group', group);
    const before = checkPurge(options);
    return this.traced(
      'purgeDeadLetters',
      () => ({ operation: 'purgeDeadLetters', stream, group }),
      async () => {
        await this.init();
        await this.stream(stream);
        await this.groupConfig(stream, group);
        return this.backend.purgeDeadLetters(stream, group, before);
      },
      counted,
    );
  }

  async listStreams(): Promise<StreamInfo[]> {
    await this.init();
    return this.backend.listStreams();
  }

  async listGroups(stream: string): Promise<GroupConfig[]> {
    checkName('stream', stream);
    await this.init();
    await this.stream(stream);
    return this.backend.listGroups(stream);
  }

  // ---------------------------------------------------------------- append, read, query

  private checkAppendOptions(options: AppendOptions): AppendOptions {
    checkOptions('append', options);
    if (options.manager !== undefined && !this.backend.capabilities.mechanisms.transactionalAppend) {
      throw RheoError.invalid('options.manager', `is not supported by the ${this.backend.name} backend`);
    }
    return options;
  }

  /** Append one event. A caller-supplied `id` already in the stream returns the stored event and writes nothing. */
  async append<P = JsonValue>(stream: string, input: AppendInput<P>, options: AppendOptions = {}): Promise<RheoEvent<P>> {
    checkName('stream', stream);
    this.checkAppendOptions(options);
    // Traced from the first store access on, so a missing stream or an unreachable backend reaches `error` too.
    const [stored] = await this.traced(
      'append',
      () => ({ operation: 'append', stream, count: 1 }),
      async () => {
        const known = this.ensured(stream);
        const info = known instanceof Promise ? await known : known;
        const event = toNewEvent('event', input, info.partitions, this.backend.clock.now(), this.limits);
        return sendSpan(stream, [event], () => this.backend.append(stream, [event], options));
      },
      (events, m) => {
        const [e] = events;
        m.eventId = e.id;
        m.partition = e.partition;
        m.sequence = e.sequence;
        m.repeats = repeatsOf(events);
      },
    );
    return stored as RheoEvent<P>;
  }

  /** Append many events atomically; sequences are contiguous per partition. Returns them in input order. */
  async appendBatch<P = JsonValue>(stream: string, inputs: AppendInput<P>[], options: AppendOptions = {}): Promise<RheoEvent<P>[]> {
    checkName('stream', stream);
    checkBatch('events', inputs, 'events');
    this.checkAppendOptions(options);
    if (inputs.length === 0) return [];
    const stored = await this.traced(
      'appendBatch',
      () => ({ operation: 'appendBatch', stream, count: inputs.length }),
      async () => {
        const known = this.ensured(stream);
        const info = known instanceof Promise ? await known : known;
        const now = this.backend.clock.now();
        const events = inputs.map((input, i) => toNewEvent(`events[${i}]`, input, info.partitions, now, this.limits));
        checkBatchBytes(events, this.limits.maxBatchBytes);
        return sendSpan(stream, events, () => this.backend.append(stream, events, options));
      },
      (events, m) => {
        m.repeats = repeatsOf(events);
      },
    );
    return stored as RheoEvent<P>[];
  }

  /** Events of one partition after a sequence, in order. Touches no group state. */
  async read(stream: string, options: { partition?: number; afterSequence?: number; limit?: number } = {}): Promise<RheoEvent[]> {
    checkName('stream', stream);
    checkOptions('read', options);
    await this.init();
    const info = await this.stream(stream);
    const partition = options.partition === undefined ? 0 : checkPartition('partition', options.partition, info.partitions);
    const afterSequence = options.afterSequence === undefined ? 0 : checkInt('afterSequence', options.afterSequence, 0);
    const limit = checkPageLimit('limit', options.limit);
    return this.backend.read({ stream, partition, afterSequence, limit });
  }

  private async queryRequest(query: Query) {
    const req = checkQuery(query);
    await this.init();
    const info = await this.stream(query.stream);
    checkQueryPartition(req, info.partitions);
    return req;
  }

  /** Events matching `query`, at most `limit`. */
  async query(query: Query): Promise<RheoEvent[]> {
    return this.traced(
      'query',
      () => queryMessage(query),
      async () => this.backend.query(await this.queryRequest(query)),
      counted,
    );
  }

  /** One page of events matching `query`; pass `nextCursor` back as `cursor` for the next. */
  async queryPage(query: Query): Promise<Page<RheoEvent>> {
    const { req, items } = await this.traced(
      'query',
      () => queryMessage(query),
      async () => {
        const req = await this.queryRequest(query);
        return { req, items: await this.backend.query(req) };
      },
      (r, m) => counted(r.items, m),
    );
    const last = items[items.length - 1];
    return { items, nextCursor: items.length === req.limit && last ? encodeCursor(last) : null };
  }

  /** Every event matching `query`, page by page, as an async iterable. */
  async *queryStream(query: Query): AsyncGenerator<RheoEvent, void, undefined> {
    let cursor = query.cursor;
    for (;;) {
      const page = await this.queryPage({ ...query, cursor });
      yield* page.items;
      if (!page.nextCursor) return;
      cursor = page.nextCursor;
    }
  }

  // ---------------------------------------------------------------- leases

  /**
   * Claim up to `limit` events for `group`. Empty when there is no work. The
   * deliveries the claim dead-lettered (leases expired on the group's last
   * attempt) are named in `deadLettered` (see {@link FetchedLeases}) and told on
   * `rheo:dead_letter`.
   */
  async fetch(stream: string, group: string, options: FetchOptions = {}): Promise<FetchedLeases> {
    checkName('stream', stream);
    checkName('group', group);
    const { limit, leaseMs, consumerId } = checkFetchOptions(options);
    const leases = await this.traced(
      'fetch',
      () => ({ operation: 'fetch', stream, group, consumerId }),
      async () => {
        const known = this.ensured(stream);
        const info = known instanceof Promise ? await known : known;
        const partitions = checkPartitions('partitions', options.partitions, info.partitions);
        return this.backend.fetch({ stream, group, limit, leaseMs, consumerId, partitions });
      },
      counted,
    );
    for (const lease of leases) issueLease(lease);
    publishLeases(stream, group, consumerId, leases);
    return leases;
  }

  /** Extend `lease` to `leaseMs` from now. Returns the lease with its new expiry. */
  async renew<P>(lease: Lease<P>, options: { leaseMs?: number } = {}): Promise<Lease<P>> {
    checkLeases([lease]);
    checkOptions('renew', options);
    const leaseMs = checkLeaseMs(options.leaseMs);
    // The lease's failure is thrown inside the trace: a lost lease reaches `rheo:renew`'s `error`.
    const expiresAt = await this.traced(
      'renew',
      () => leaseMessage('renew', [lease]),
      async () => {
        const [result] = await this.renewChecked([lease], leaseMs);
        if (!result.ok) throw result.error;
        return result.expiresAt;
      },
    );
    const renewed = { ...lease, expiresAt };
    return isIssued(lease) ? issueLease(renewed) : renewed;
  }

  /** Renew many leases in one backend call; per-lease results. */
  async renewMany(leases: Lease<unknown>[], options: { leaseMs?: number } = {}): Promise<RenewResult[]> {
    checkLeases(leases);
    checkOptions('renew', options);
    const leaseMs = checkLeaseMs(options.leaseMs);
    if (leases.length === 0) return [];
    return this.traced(
      'renew',
      () => leaseMessage('renew', leases),
      () => this.renewChecked(leases, leaseMs),
    );
  }

  private renewChecked(leases: Lease<unknown>[], leaseMs: number): Promise<RenewResult[]> {
    if (this.connected) return this.backend.renew(leases, leaseMs);
    return this.init().then(() => this.backend.renew(leases, leaseMs));
  }

  /** Done: the event is terminal for the group. */
  async ack(lease: Lease<unknown>): Promise<void> {
    return this.settleOne('ack', { kind: 'ack', lease });
  }

  /** Not done: redeliver after `delayMs` (or the group's backoff); dead-letter at maxAttempts. */
  async nack(lease: Lease<unknown>, options: NackOptions = {}): Promise<void> {
    checkOptions('nack', options);
    return this.settleOne('nack', { kind: 'nack', lease, reason: options.reason, delayMs: options.delayMs });
  }

  /** Dead-letter the event for this group now, with `reason` (default `rejected`). */
  async reject(lease: Lease<unknown>, options: RejectOptions = {}): Promise<void> {
    checkOptions('reject', options);
    return this.settleOne('reject', { kind: 'reject', lease, reason: options.reason });
  }

  private async settleOne(operation: 'ack' | 'nack' | 'reject', request: SettleRequest): Promise<void> {
    const [op] = checkSettles([request]);
    // The lease's failure is thrown inside the trace: a stale ack reaches `rheo:ack`'s `error`.
    return this.traced(
      operation,
      () => {
        const m = leaseMessage(operation, [op.lease]);
        if (op.kind !== 'ack') m.reason = op.reason;
        return m;
      },
      async () => {
        const [result] = await this.settleChecked([op]);
        if (!result.ok) throw result.error;
      },
    );
  }

  /** Settle many leases in one backend call; per-lease results, in order. */
  async settleMany(requests: SettleRequest[]): Promise<SettleResult[]> {
    const ops = checkSettles(requests);
    if (ops.length === 0) return [];
    return this.traced(
      'settleMany',
      () =>
        leaseMessage(
          'settleMany',
          ops.map((o) => o.lease),
        ),
      () => this.settleChecked(ops),
    );
  }

  private settleChecked(ops: SettleOp[]): Promise<SettleResult[]> {
    // The hot path: no extra promise between the runtime's settle batch and the store (settleEach adds one
    // only for a batch of several ops, to settle them one by one should one op break the batch).
    if (this.connected && !settlesObserved()) return settleEach(this.settleOps, ops);
    return this.settleObserved(ops);
  }

  private readonly settleOps = (ops: SettleOp[]): Promise<SettleResult[]> => this.backend.settle(ops);

  /** A settle whose outcomes someone listens to (or before the first connect). */
  private async settleObserved(ops: SettleOp[]): Promise<SettleResult[]> {
    await this.init();
    if (!settlesObserved()) return settleEach(this.settleOps, ops);
    // Telling a retry from a dead letter needs each group's maxAttempts: read once per group, before the settle.
    for (const { lease } of ops) {
      if (this.registrations.group(lease.stream, lease.group)) continue;
      const cfg = await this.backend.getGroup(lease.stream, lease.group).catch(() => null);
      if (cfg) this.registrations.rememberGroup(cfg);
    }
    const results = await settleEach(this.settleOps, ops);
    publishSettles(ops, results, this.registrations);
    return results;
  }

  /**
   * Give leases back unhandled: each event is claimable again at once and keeps
   * the attempt it had (this delivery is not counted). For leases no handler
   * started on: a consumer shutting down with prefetched leases, or one that
   * found a buffered lease too close to expiry. Per-lease results, in order; a
   * lease claimed by someone else since answers `stale_lease`.
   */
  async releaseMany(leases: Lease<unknown>[]): Promise<SettleResult[]> {
    checkLeases(leases);
    if (leases.length === 0) return [];
    await this.init();
    return this.backend.release(leases);
  }

  // ---------------------------------------------------------------- replay, reset

  /** Re-open a group's deliveries from a sequence, a time or a query. Returns how many events were re-opened. */
  async replay(stream: string, group: string, options: ReplayOptions): Promise<number> {
    checkName('stream', stream);
    checkName('group', group);
    const kind = checkReplayKind(options);
    return this.traced(
      'replay',
      () => ({ operation: 'replay', stream, group }),
      () => this.replayChecked(stream, group, kind, options),
      counted,
    );
  }

  private async replayChecked(
    stream: string,
    group: string,
    kind: ReturnType<typeof checkReplayKind>,
    options: ReplayOptions,
  ): Promise<number> {
    await this.init();
    const info = await this.stream(stream);
    await this.groupConfig(stream, group);
    let request: ReplayRequest;
    if (kind === 'query') {
      const query = checkObject('query', (options as { query: unknown }).query);
      const events: Array<{ id: string; partition: number; sequence: number }> = [];
      for await (const e of this.queryStream({ ...query, stream, limit: MAX_PAGE_LIMIT } as Query)) {
        events.push({ id: e.id, partition: e.partition, sequence: e.sequence });
      }
      request = { stream, group, kind: 'events', events };
    } else {
      request = checkReplayRange(
        stream,
        group,
        options as { afterSequence?: unknown; from?: unknown; partitions?: unknown },
        info.partitions,
      );
    }
    return this.backend.replay(request);
  }

  /** Forget every delivery of the group and restart it at `start` (default beginning). Requires `confirm: true`. */
  async reset(stream: string, group: string, options: ResetOptions): Promise<void> {
    checkName('stream', stream);
    checkName('group', group);
    if (typeof options !== 'object' || options === null || options.confirm !== true) {
      throw new RheoError('confirm_required', 'reset forgets every delivery of the group: pass { confirm: true }', { field: 'confirm' });
    }
    checkOptions('reset', options);
    return this.traced(
      'reset',
      () => ({ operation: 'reset', stream, group }),
      async () => {
        await this.init();
        const info = await this.stream(stream);
        const start = resolveStart('start', options.start, info.partitions);
        await this.groupConfig(stream, group);
        await this.backend.reset(stream, group, start);
      },
    );
  }

  /**
   * Delete a group and everything of it (positions, deliveries, live leases, dead
   * letters); other groups and the stream's events are untouched. Requires
   * `confirm: true`. A lease of the deleted group then answers `stale_lease` or
   * `group_not_found`; a group created again under the name starts fresh.
   * `group_not_found` when there is none.
   */
  async deleteGroup(stream: string, group: string, options: DeleteGroupOptions): Promise<void> {
    checkName('stream', stream);
    checkName('group', group);
    if (typeof options !== 'object' || options === null || options.confirm !== true) {
      const message = 'deleteGroup removes the group with its deliveries and dead letters: pass { confirm: true }';
      throw new RheoError('confirm_required', message, { field: 'confirm' });
    }
    checkOptions('deleteGroup', options);
    return this.traced(
      'deleteGroup',
      () => ({ operation: 'deleteGroup', stream, group }),
      async () => {
        await this.init();
        await this.stream(stream);
        try {
          await this.backend.deleteGroup(stream, group);
        } finally {
          // What this instance remembers of the group goes too (a group re-created under the name may differ).
          this.registrations.forgetGroup(stream, group);
          this.frontiers.forget(stream, group);
        }
      },
    );
  }

  private async groupConfig(stream: string, group: string): Promise<GroupConfig> {
    const cfg = await this.backend.getGroup(stream, group);
    if (!cfg) throw RheoError.groupNotFound(stream, group);
    return cfg;
  }

  // ---------------------------------------------------------------- inspection

  async lag(stream: string, group: string): Promise<Lag> {
    checkName('stream', stream);
    checkName('group', group);
    await this.init();
    await this.stream(stream);
    const lag = await this.backend.lag(stream, group);
    this.frontiers.observe(lag);
    return lag;
  }

  async groupInfo(stream: string, group: string): Promise<GroupInfo> {
    checkName('stream', stream);
    checkName('group', group);
    await this.init();
    await this.stream(stream);
    const info = await this.backend.groupInfo(stream, group);
    this.frontiers.observe(info.lag);
    // A clock far from the store's is this process's condition, shown beside the store's own (ADR 041).
    const skew = this.backend.clock instanceof StoreClock ? this.backend.clock.warning() : undefined;
    return skew === undefined ? info : { ...info, warnings: [...(info.warnings ?? []), skew] };
  }

  /** Dead letters of a group, ordered by (partition, sequence); `after` is the last event id of the previous page. */
  async deadLetters(stream: string, group: string, options: { limit?: number; after?: string } = {}): Promise<DeadLetter[]> {
    checkName('stream', stream);
    checkName('group', group);
    checkOptions('deadLetters', options);
    const limit = checkPageLimit('limit', options.limit);
    const after = options.after === undefined ? undefined : checkName('after', options.after);
    await this.init();
    await this.stream(stream);
    await this.groupConfig(stream, group);
    return this.backend.deadLetters(stream, group, limit, after);
  }

  /**
   * How many dead letters the group holds: all of them, or with `since` only those
   * dead-lettered at or after that time (what an alert on events starting to die
   * reads). Cheap on every backend (an index count), so a health probe may call it.
   */
  async countDeadLetters(stream: string, group: string, options: { since?: Date } = {}): Promise<number> {
    checkName('stream', stream);
    checkName('group', group);
    checkOptions('countDeadLetters', options);
    const since = options.since === undefined ? null : checkDate('options.since', options.since);
    await this.init();
    await this.stream(stream);
    await this.groupConfig(stream, group);
    return this.backend.countDeadLetters(stream, group, since);
  }

  /** Make dead letters available again. Returns how many were redriven. */
  async redrive(stream: string, group: string, options: RedriveOptions): Promise<number> {
    checkName('stream', stream);
    checkName('group', group);
    const ids = checkRedrive(options);
    return this.traced(
      'redrive',
      () => ({ operation: 'redrive', stream, group }),
      async () => {
        await this.init();
        await this.stream(stream);
        await this.groupConfig(stream, group);
        if (ids !== 'all' && ids.length === 0) return 0;
        return this.backend.redrive(stream, group, ids);
      },
      counted,
    );
  }

  /** Resolves when the backend answers; throws `backend_unavailable` otherwise. */
  async ping(): Promise<void> {
    await this.init();
    return this.backend.ping();
  }

  /** Close the backend. Idempotent. */
  async close(): Promise<void> {
    await this.backend.close();
  }
}

/** An operation's message before the instance's id is added. */
type MessageDraft = Omit<OperationMessage, 'rheo'>;

/** `done` for operations whose result is a count, or a list whose length is the count. */
function counted(result: number | unknown[], m: OperationMessage): void {
  m.count = typeof result === 'number' ? result : result.length;
}

function queryMessage(query: Query): MessageDraft {
  return { operation: 'query', stream: typeof query?.stream === 'string' ? query.stream : undefined };
}

/** A message about leases: one lease's identity in full, or the batch's size (and its group when they share one). */
function leaseMessage(operation: OperationMessage['operation'], leases: Lease<unknown>[]): MessageDraft {
  const first = leases[0];
  const m: MessageDraft = { operation, count: leases.length };
  if (!first) return m;
  if (leases.every((l) => l.stream === first.stream && l.group === first.group)) {
    m.stream = first.stream;
    m.group = first.group;
  }
  if (leases.length === 1) {
    m.eventId = first.event.id;
    m.partition = first.event.partition;
    m.sequence = first.event.sequence;
    m.attempt = first.attempt;
    m.consumerId = first.consumerId;
  }
  return m;
}
