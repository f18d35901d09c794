// The facade depends on the Backend contract by type only (erased at runtime), so
// core/ still loads nothing of ours. See docs/adr/003-layers.md.
import type {
  Backend,
  NewEvent,
  QueryRequest,
  RenewResult,
  ReplayRequest,
  ResolvedStart,
  SettleOp,
  SettleResult,
} from '../backends/backend';
import { DEFAULT_RETRY } from './backoff';
import { decodeCursor, encodeCursor } from './cursor';
import { RheoError, toRheoError } from './errors';
import { newId } from './ids';
import { boundReason } from './outcomes';
import { partitionForKey } from './partitioner';
import type {
  AppendInput,
  AppendOptions,
  DeadLetter,
  GroupConfig,
  GroupInfo,
  GroupOptions,
  JsonValue,
  Lag,
  Lease,
  Page,
  Query,
  RedriveOptions,
  ReplayOptions,
  ResetOptions,
  RheoEvent,
  StartPosition,
  StreamInfo,
} from './types';
import {
  checkDate,
  checkInt,
  checkJsonObject,
  checkMetadata,
  checkName,
  checkObject,
  checkPayload,
} from './validate';
import {
  DEFAULT_FETCH_LIMIT,
  DEFAULT_LEASE_MS,
  DEFAULT_MAX_ATTEMPTS,
  DEFAULT_MAX_PAYLOAD_BYTES,
  DEFAULT_PAGE_LIMIT,
  MAX_ATTEMPTS_LIMIT,
  MAX_BATCH,
  MAX_DELAY_MS,
  MAX_DURATION_MS,
  MAX_FETCH_LIMIT,
  MAX_PAGE_LIMIT,
  MAX_PARTITIONS,
} from './limits';

/** Options of a {@link Rheo} instance. */
export interface RheoOptions {
  /** Largest accepted payload, as JSON bytes. Default 1 MiB. */
  maxPayloadBytes?: number;
}

/** Options of fetch. */
export interface FetchOptions {
  /** Most leases to return, 1..1000. Default 10. */
  limit?: number;
  /** Lease time-to-live, ms. Default 30000. */
  leaseMs?: number;
  consumerId?: string;
  partitions?: number[];
}

/** Options of nack. */
export interface NackOptions {
  reason?: string;
  /** Redeliver after this delay; the group's backoff when absent. */
  delayMs?: number;
}

/** One settle of a bulk call: `{ lease, outcome }`. */
export type SettleRequest =
  | { kind: 'ack'; lease: Lease<unknown> }
  | { kind: 'nack'; lease: Lease<unknown>; reason?: string; delayMs?: number }
  | { kind: 'reject'; lease: Lease<unknown>; reason?: string };


function reason(field: string, value: unknown, fallback: string): string {
  if (value === undefined) return fallback;
  if (typeof value !== 'string') throw RheoError.invalid(field, 'must be a string');
  return boundReason(value);
}

function checkPartitions(field: string, value: unknown, count: number): number[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || value.length === 0) throw RheoError.invalid(field, 'must be a non-empty array of partition numbers');
  return [...new Set(value.map((p, i) => checkInt(`${field}[${i}]`, p, 0, count - 1)))].sort((a, b) => a - b);
}

/**
 * Leases this process fetched through a facade. They are frozen when issued, so
 * their shape is known good and settling them skips re-validation: the settle
 * path is the hottest in the library. Anything else is checked field by field.
 */
const issued = new WeakSet<object>();

function issue<L extends Lease<unknown>>(lease: L): L {
  // Its own Date: the runtime moves a held lease's expiry in place as renewals
  // succeed, and a backend may have built one Date for a whole batch.
  lease.expiresAt = new Date(lease.expiresAt.getTime());
  Object.freeze(lease.event);
  issued.add(Object.freeze(lease));
  return lease;
}

function checkLease(field: string, lease: unknown): Lease<unknown> {
  if (typeof lease === 'object' && lease !== null && issued.has(lease)) return lease as Lease<unknown>;
  const l = checkObject(field, lease) as unknown as Lease<unknown>;
  checkName(`${field}.leaseId`, l.leaseId);
  checkName(`${field}.stream`, l.stream);
  checkName(`${field}.group`, l.group);
  if (typeof l.receipt !== 'string') throw RheoError.invalid(`${field}.receipt`, 'must be a string');
  checkObject(`${field}.event`, l.event);
  checkName(`${field}.event.id`, l.event.id);
  checkInt(`${field}.attempt`, l.attempt, 1);
  checkInt(`${field}.event.partition`, l.event.partition, 0, MAX_PARTITIONS - 1);
  checkInt(`${field}.event.sequence`, l.event.sequence, 1);
  return l;
}

/**
 * The facade over one backend: validates every input, applies defaults and
 * routing, and speaks the portable vocabulary. Framework-free; the Nest layer and
 * the runtime are built on it.
 */
export class Rheo {
  readonly backend: Backend;
  private readonly maxPayloadBytes: number;
  private ready?: Promise<void>;

  constructor(backend: Backend, options: RheoOptions = {}) {
    if (!backend || typeof backend.fetch !== 'function') throw RheoError.invalid('backend', 'must be a Backend');
    checkObject('options', options);
    this.backend = backend;
    this.maxPayloadBytes =
      options.maxPayloadBytes === undefined ? DEFAULT_MAX_PAYLOAD_BYTES : checkInt('maxPayloadBytes', options.maxPayloadBytes, 1);
  }

  /** Connect the backend (idempotent). Every other call does it on first use. */
  init(): Promise<void> {
    if (!this.ready) {
      this.ready = this.backend.init().catch((err) => {
        this.ready = undefined;
        throw toRheoError(err, 'backend_unavailable');
      });
    }
    return this.ready;
  }

  private async stream(name: string): Promise<StreamInfo> {
    const info = await this.backend.getStream(name);
    if (!info) throw new RheoError('stream_not_found', `stream "${name}" does not exist`);
    return info;
  }

  // ---------------------------------------------------------------- streams, groups

  /** Create a stream with `partitions` partitions (default 1). */
  async createStream(stream: string, options: { partitions?: number; ifNotExists?: boolean } = {}): Promise<StreamInfo> {
    checkName('stream', stream);
    checkObject('options', options);
    const partitions = options.partitions === undefined ? 1 : checkInt('partitions', options.partitions, 1, MAX_PARTITIONS);
    await this.init();
    if (options.ifNotExists) {
      const existing = await this.backend.getStream(stream);
      if (existing) return existing;
    }
    try {
      return await this.backend.createStream(stream, partitions);
    } catch (err) {
      if (options.ifNotExists && err instanceof RheoError && err.code === 'already_exists') return this.stream(stream);
      throw err;
    }
  }

  /** Create a consumer group on `stream`. */
  async createGroup(stream: string, group: string, options: GroupOptions = {}): Promise<GroupConfig> {
    checkName('stream', stream);
    checkName('group', group);
    checkObject('options', options);
    const maxAttempts = options.maxAttempts === undefined ? DEFAULT_MAX_ATTEMPTS : checkInt('maxAttempts', options.maxAttempts, 1, MAX_ATTEMPTS_LIMIT);
    const retry = { ...DEFAULT_RETRY };
    if (options.retry !== undefined) {
      const r = checkObject('retry', options.retry);
      if (r.initialMs !== undefined) retry.initialMs = checkInt('retry.initialMs', r.initialMs, 0, MAX_DELAY_MS);
      if (r.maxMs !== undefined) retry.maxMs = checkInt('retry.maxMs', r.maxMs, 0, MAX_DELAY_MS);
      if (r.factor !== undefined) {
        if (typeof r.factor !== 'number' || !(r.factor >= 1 && r.factor <= 100)) throw RheoError.invalid('retry.factor', 'must be a number between 1 and 100');
        retry.factor = r.factor;
      }
      if (retry.maxMs < retry.initialMs) throw RheoError.invalid('retry.maxMs', 'must be >= retry.initialMs');
    }
    const ordering = options.ordering ?? 'none';
    if (ordering !== 'none' && ordering !== 'partition') throw RheoError.invalid('ordering', "must be 'none' or 'partition'");
    await this.init();
    const info = await this.stream(stream);
    const start = this.resolveStart('start', options.start, info.partitions);
    if (options.ifNotExists) {
      const existing = await this.backend.getGroup(stream, group);
      if (existing) return existing;
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

  private resolveStart(field: string, start: StartPosition | undefined, partitions: number): ResolvedStart {
    if (start === undefined || start === 'beginning') return { kind: 'beginning' };
    if (start === 'end') return { kind: 'end' };
    if (typeof start !== 'object' || start === null) throw RheoError.invalid(field, "must be 'beginning', 'end', { afterSequence } or { at }");
    if ('at' in start) return { kind: 'at', time: checkDate(`${field}.at`, start.at) };
    if ('afterSequence' in start) {
      const s = start.afterSequence;
      if (typeof s === 'number') return { kind: 'after', sequences: checkInt(`${field}.afterSequence`, s, 0) };
      const map = checkObject(`${field}.afterSequence`, s);
      const sequences: Record<number, number> = {};
      for (const [p, v] of Object.entries(map)) {
        const part = checkInt(`${field}.afterSequence[${p}]`, /^\d+$/.test(p) ? Number(p) : p, 0, partitions - 1);
        sequences[part] = checkInt(`${field}.afterSequence[${p}]`, v, 0);
      }
      return { kind: 'after', sequences };
    }
    throw RheoError.invalid(field, "must be 'beginning', 'end', { afterSequence } or { at }");
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

  private toNewEvent(field: string, input: AppendInput<unknown>, partitions: number, now: number): NewEvent {
    checkObject(field, input);
    const id = input.id === undefined ? newId() : checkName(`${field}.id`, input.id);
    const key = input.key === undefined || input.key === null ? null : checkName(`${field}.key`, input.key);
    const type = input.type === undefined || input.type === null ? null : checkName(`${field}.type`, input.type);
    const metadata = input.metadata === undefined ? {} : checkMetadata(`${field}.metadata`, input.metadata);
    const payloadJson = checkPayload(`${field}.payload`, input.payload, this.maxPayloadBytes);
    let partition: number;
    if (input.partition !== undefined) partition = checkInt(`${field}.partition`, input.partition, 0, partitions - 1);
    else partition = key === null ? 0 : partitionForKey(key, partitions);
    const timestamp = input.timestamp === undefined ? new Date(now) : checkDate(`${field}.timestamp`, input.timestamp);
    return { id, partition, timestamp, key, type, metadata, payload: input.payload as JsonValue, payloadJson };
  }

  private checkAppendOptions(options: AppendOptions): AppendOptions {
    checkObject('options', options);
    if (options.manager !== undefined && !this.backend.capabilities.mechanisms.transactionalAppend) {
      throw RheoError.invalid('options.manager', `is not supported by the ${this.backend.name} backend`);
    }
    return options;
  }

  /** Append one event. A caller-supplied `id` already in the stream returns the stored event and writes nothing. */
  async append<P extends JsonValue = JsonValue>(stream: string, input: AppendInput<P>, options: AppendOptions = {}): Promise<RheoEvent<P>> {
    checkName('stream', stream);
    this.checkAppendOptions(options);
    await this.init();
    const info = await this.stream(stream);
    const event = this.toNewEvent('event', input, info.partitions, this.backend.clock.now());
    const [stored] = await this.backend.append(stream, [event], options);
    return stored as RheoEvent<P>;
  }

  /** Append many events atomically; sequences are contiguous per partition. Returns them in input order. */
  async appendBatch<P extends JsonValue = JsonValue>(stream: string, inputs: AppendInput<P>[], options: AppendOptions = {}): Promise<RheoEvent<P>[]> {
    checkName('stream', stream);
    if (!Array.isArray(inputs)) throw RheoError.invalid('events', 'must be an array');
    if (inputs.length > MAX_BATCH) throw RheoError.invalid('events', `must hold at most ${MAX_BATCH} events`);
    this.checkAppendOptions(options);
    if (inputs.length === 0) return [];
    await this.init();
    const info = await this.stream(stream);
    const now = this.backend.clock.now();
    const events = inputs.map((input, i) => this.toNewEvent(`events[${i}]`, input, info.partitions, now));
    return (await this.backend.append(stream, events, options)) as RheoEvent<P>[];
  }

  /** Events of one partition after a sequence, in order. Touches no group state. */
  async read(stream: string, options: { partition?: number; afterSequence?: number; limit?: number } = {}): Promise<RheoEvent[]> {
    checkName('stream', stream);
    checkObject('options', options);
    await this.init();
    const info = await this.stream(stream);
    const partition = options.partition === undefined ? 0 : checkInt('partition', options.partition, 0, info.partitions - 1);
    const afterSequence = options.afterSequence === undefined ? 0 : checkInt('afterSequence', options.afterSequence, 0);
    const limit = options.limit === undefined ? DEFAULT_PAGE_LIMIT : checkInt('limit', options.limit, 1, MAX_PAGE_LIMIT);
    return this.backend.read({ stream, partition, afterSequence, limit });
  }

  private async queryRequest(query: Query): Promise<QueryRequest> {
    checkObject('query', query);
    checkName('query.stream', query.stream);
    const where = query.where === undefined ? {} : checkObject('query.where', query.where);
    const known = ['type', 'key', 'partition', 'metadata', 'payload'];
    for (const k of Object.keys(where)) if (!known.includes(k)) throw RheoError.invalid(`query.where.${k}`, `is not a filter (use ${known.join(', ')})`);
    if (where.type !== undefined) checkName('query.where.type', where.type);
    if (where.key !== undefined) checkName('query.where.key', where.key);
    if (where.metadata !== undefined) checkMetadata('query.where.metadata', where.metadata);
    if (where.payload !== undefined) checkJsonObject('query.where.payload', where.payload);
    const order = query.order ?? 'asc';
    if (order !== 'asc' && order !== 'desc') throw RheoError.invalid('query.order', "must be 'asc' or 'desc'");
    const limit = query.limit === undefined ? DEFAULT_PAGE_LIMIT : checkInt('query.limit', query.limit, 1, MAX_PAGE_LIMIT);
    const req: QueryRequest = { stream: query.stream, where: where as QueryRequest['where'], order, limit };
    if (query.from !== undefined) req.from = checkDate('query.from', query.from);
    if (query.to !== undefined) req.to = checkDate('query.to', query.to);
    if (query.afterSequence !== undefined) req.afterSequence = checkInt('query.afterSequence', query.afterSequence, 0);
    if (query.untilSequence !== undefined) req.untilSequence = checkInt('query.untilSequence', query.untilSequence, 0);
    if (query.cursor !== undefined && query.cursor !== null) req.after = decodeCursor(query.cursor);
    await this.init();
    const info = await this.stream(query.stream);
    if (where.partition !== undefined) checkInt('query.where.partition', where.partition, 0, info.partitions - 1);
    return req;
  }

  /** Events matching `query`, at most `limit`. */
  async query(query: Query): Promise<RheoEvent[]> {
    return this.backend.query(await this.queryRequest(query));
  }

  /** One page of events matching `query`; pass `nextCursor` back as `cursor` for the next. */
  async queryPage(query: Query): Promise<Page<RheoEvent>> {
    const req = await this.queryRequest(query);
    const items = await this.backend.query(req);
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

  /** Claim up to `limit` events for `group`. Empty when there is no work. */
  async fetch(stream: string, group: string, options: FetchOptions = {}): Promise<Lease[]> {
    checkName('stream', stream);
    checkName('group', group);
    checkObject('options', options);
    const limit = options.limit === undefined ? DEFAULT_FETCH_LIMIT : checkInt('limit', options.limit, 1, MAX_FETCH_LIMIT);
    const leaseMs = options.leaseMs === undefined ? DEFAULT_LEASE_MS : checkInt('leaseMs', options.leaseMs, 1, MAX_DURATION_MS);
    const consumerId = options.consumerId === undefined ? newId() : checkName('consumerId', options.consumerId);
    await this.init();
    const info = await this.stream(stream);
    const partitions = checkPartitions('partitions', options.partitions, info.partitions);
    const leases = await this.backend.fetch({ stream, group, limit, leaseMs, consumerId, partitions });
    for (const lease of leases) issue(lease);
    return leases;
  }

  /** Extend `lease` to `leaseMs` from now. Returns the lease with its new expiry. */
  async renew<P>(lease: Lease<P>, options: { leaseMs?: number } = {}): Promise<Lease<P>> {
    const [result] = await this.renewMany([lease], options);
    if (!result.ok) throw result.error;
    const renewed = { ...lease, expiresAt: result.expiresAt };
    return issued.has(lease) ? issue(renewed) : renewed;
  }

  /** Renew many leases in one backend call; per-lease results. */
  async renewMany(leases: Lease<unknown>[], options: { leaseMs?: number } = {}): Promise<RenewResult[]> {
    if (!Array.isArray(leases)) throw RheoError.invalid('leases', 'must be an array');
    if (leases.length > MAX_BATCH) throw RheoError.invalid('leases', `must hold at most ${MAX_BATCH} leases`);
    checkObject('options', options);
    leases.forEach((l, i) => checkLease(leases.length === 1 ? 'lease' : `leases[${i}]`, l));
    const leaseMs = options.leaseMs === undefined ? DEFAULT_LEASE_MS : checkInt('leaseMs', options.leaseMs, 1, MAX_DURATION_MS);
    if (leases.length === 0) return [];
    await this.init();
    return this.backend.renew(leases, leaseMs);
  }

  /** Done: the event is terminal for the group. */
  async ack(lease: Lease<unknown>): Promise<void> {
    return this.settleOne({ kind: 'ack', lease });
  }

  /** Not done: redeliver after `delayMs` (or the group's backoff); dead-letter at maxAttempts. */
  async nack(lease: Lease<unknown>, options: NackOptions = {}): Promise<void> {
    checkObject('options', options);
    return this.settleOne({ kind: 'nack', lease, reason: options.reason, delayMs: options.delayMs });
  }

  /** Dead-letter the event for this group now. */
  async reject(lease: Lease<unknown>, reasonText?: string): Promise<void> {
    return this.settleOne({ kind: 'reject', lease, reason: reasonText });
  }

  private async settleOne(request: SettleRequest): Promise<void> {
    const [result] = await this.settleMany([request]);
    if (!result.ok) throw result.error;
  }

  /** Settle many leases in one backend call; per-lease results, in order. */
  async settleMany(requests: SettleRequest[]): Promise<SettleResult[]> {
    if (!Array.isArray(requests)) throw RheoError.invalid('settles', 'must be an array');
    if (requests.length > MAX_BATCH) throw RheoError.invalid('settles', `must hold at most ${MAX_BATCH} settles`);
    const ops: SettleOp[] = requests.map((r, i) => {
      const at = requests.length === 1 ? '' : `settles[${i}].`;
      checkObject(`settles[${i}]`, r);
      const lease = checkLease(`${at}lease`, r.lease);
      switch (r.kind) {
        case 'ack':
          return { kind: 'ack', lease };
        case 'nack': {
          const op: SettleOp = { kind: 'nack', lease, reason: reason(`${at}reason`, r.reason, 'retry') };
          if (r.delayMs !== undefined) op.delayMs = checkInt(`${at}delayMs`, r.delayMs, 0, MAX_DELAY_MS);
          return op;
        }
        case 'reject':
          return { kind: 'reject', lease, reason: reason(`${at}reason`, r.reason, 'rejected') };
        default:
          throw RheoError.invalid(`settles[${i}].kind`, "must be 'ack', 'nack' or 'reject'");
      }
    });
    if (ops.length === 0) return [];
    await this.init();
    return this.backend.settle(ops);
  }

  /**
   * Give leases back unhandled: each event is claimable again at once and keeps
   * the attempt it had (this delivery is not counted). For leases no handler
   * started on: a consumer shutting down with prefetched leases, or one that
   * found a buffered lease too close to expiry. Per-lease results, in order; a
   * lease claimed by someone else since answers `stale_lease`.
   */
  async releaseMany(leases: Lease<unknown>[]): Promise<SettleResult[]> {
    if (!Array.isArray(leases)) throw RheoError.invalid('leases', 'must be an array');
    if (leases.length > MAX_BATCH) throw RheoError.invalid('leases', `must hold at most ${MAX_BATCH} leases`);
    leases.forEach((l, i) => checkLease(leases.length === 1 ? 'lease' : `leases[${i}]`, l));
    if (leases.length === 0) return [];
    await this.init();
    return this.backend.release(leases);
  }

  // ---------------------------------------------------------------- replay, reset

  /** Re-open a group's deliveries from a sequence, a time or a query. Returns how many events were re-opened. */
  async replay(stream: string, group: string, options: ReplayOptions): Promise<number> {
    checkName('stream', stream);
    checkName('group', group);
    const o = checkObject('options', options);
    const given = ['afterSequence', 'from', 'query'].filter((k) => o[k] !== undefined);
    if (given.length !== 1) throw RheoError.invalid('options', 'must give exactly one of afterSequence, from, query');
    await this.init();
    const info = await this.stream(stream);
    await this.groupConfig(stream, group);
    let request: ReplayRequest;
    if ('query' in options && options.query !== undefined) {
      const events: Array<{ id: string; partition: number; sequence: number }> = [];
      for await (const e of this.queryStream({ ...checkObject('query', options.query), stream, limit: MAX_PAGE_LIMIT } as Query)) {
        events.push({ id: e.id, partition: e.partition, sequence: e.sequence });
      }
      request = { stream, group, kind: 'events', events };
    } else {
      const partitions = checkPartitions('partitions', (o as { partitions?: unknown }).partitions, info.partitions);
      if ('afterSequence' in options) {
        request = { stream, group, kind: 'sequence', afterSequence: checkInt('afterSequence', options.afterSequence, 0), partitions };
      } else {
        request = { stream, group, kind: 'time', from: checkDate('from', (options as { from: Date }).from), partitions };
      }
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
    await this.init();
    const info = await this.stream(stream);
    const start = this.resolveStart('start', options.start, info.partitions);
    await this.groupConfig(stream, group);
    await this.backend.reset(stream, group, start);
  }

  private async groupConfig(stream: string, group: string): Promise<GroupConfig> {
    const cfg = await this.backend.getGroup(stream, group);
    if (!cfg) throw new RheoError('group_not_found', `group "${group}" does not exist on stream "${stream}"`);
    return cfg;
  }

  // ---------------------------------------------------------------- inspection

  async lag(stream: string, group: string): Promise<Lag> {
    checkName('stream', stream);
    checkName('group', group);
    await this.init();
    await this.stream(stream);
    return this.backend.lag(stream, group);
  }

  async groupInfo(stream: string, group: string): Promise<GroupInfo> {
    checkName('stream', stream);
    checkName('group', group);
    await this.init();
    await this.stream(stream);
    return this.backend.groupInfo(stream, group);
  }

  /** Dead letters of a group, ordered by (partition, sequence); `after` is the last event id of the previous page. */
  async deadLetters(stream: string, group: string, options: { limit?: number; after?: string } = {}): Promise<DeadLetter[]> {
    checkName('stream', stream);
    checkName('group', group);
    checkObject('options', options);
    const limit = options.limit === undefined ? DEFAULT_PAGE_LIMIT : checkInt('limit', options.limit, 1, MAX_PAGE_LIMIT);
    const after = options.after === undefined ? undefined : checkName('after', options.after);
    await this.init();
    await this.stream(stream);
    await this.groupConfig(stream, group);
    return this.backend.deadLetters(stream, group, limit, after);
  }

  /** Make dead letters available again. Returns how many were redriven. */
  async redrive(stream: string, group: string, options: RedriveOptions): Promise<number> {
    checkName('stream', stream);
    checkName('group', group);
    const o = checkObject('options', options);
    let ids: string[] | 'all';
    if (o.all === true && o.eventIds === undefined) ids = 'all';
    else if (Array.isArray(o.eventIds) && o.all === undefined) ids = o.eventIds.map((id, i) => checkName(`eventIds[${i}]`, id));
    else throw RheoError.invalid('options', 'must be { eventIds: [...] } or { all: true }');
    await this.init();
    await this.stream(stream);
    await this.groupConfig(stream, group);
    if (ids !== 'all' && ids.length === 0) return 0;
    return this.backend.redrive(stream, group, ids);
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
