// The facade: the list of operations, each a one-line delegation to its contract
// section in facade/ (registry, log, delivery, recovery, retention), the same
// sections every backend is split by. A section checks the input through
// requests.ts (the one place request validation lives), resolves what needs the
// stream, and calls the backend, all over the one FacadeContext this instance
// holds. It depends on the Backend contract by type only (erased at runtime), so
// core/ still loads nothing of ours (docs/adr/003-errors-and-layers.md).
import type { Backend, FetchedLeases, RenewResult, SettleResult } from '../backends/backend';
import { RheoError } from './errors';
import { newId } from './ids';
import { checkAppendLimits, checkOptions } from './requests';
import type { FetchOptions, NackOptions, RejectOptions, SettleRequest } from './delivery-requests';
import type {
  AppendInput,
  AppendOptions,
  CancelDelayedOptions,
  DeadLetter,
  DeleteGroupOptions,
  GroupChanges,
  GroupConfig,
  GroupInfo,
  GroupOptions,
  GroupPause,
  JsonValue,
  Lag,
  Lease,
  Page,
  PauseGroupOptions,
  PurgeDeadLettersOptions,
  Query,
  RedriveOptions,
  ReplayOptions,
  RescheduleOptions,
  ResetOptions,
  Retention,
  RheoEvent,
  SkipOptions,
  StreamInfo,
  TrimOptions,
  TrimResult,
} from './types';
import { FacadeContext } from './facade/context';
import * as delivery from './facade/delivery';
import * as groupSettings from './facade/group-settings';
import * as log from './facade/log';
import * as pause from './facade/pause';
import * as recovery from './facade/recovery';
import * as registry from './facade/registry';
import * as retention from './facade/retention';
import * as waiting from './facade/waiting';

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
  /** What every section shares: the backend, the limits, the registrations, the connect state, the traced wrapper. */
  private readonly ctx: FacadeContext;

  constructor(backend: Backend, options: RheoOptions = {}) {
    if (!backend || typeof backend.fetch !== 'function') throw RheoError.invalid('backend', 'must be a Backend');
    checkOptions('rheo', options);
    this.backend = backend;
    this.ctx = new FacadeContext(this.id, backend, checkAppendLimits(options));
  }

  /** Connect the backend (idempotent). Every other call does it on first use. */
  init(): Promise<void> {
    return this.ctx.init();
  }

  // Each operation is its section's function (an async function: a refusal is a rejection, never a throw).

  // ---------------------------------------------------------------- registry: streams, groups

  /**
   * Create a stream with `partitions` partitions (default 1) and, optionally, a
   * retention. With `ifNotExists`, an existing stream is returned as it is (its
   * partitions and retention unchanged: see {@link setRetention}).
   */
  createStream(stream: string, options: { partitions?: number; ifNotExists?: boolean; retention?: Retention } = {}): Promise<StreamInfo> {
    return registry.createStream(this.ctx, stream, options);
  }

  /** Create a consumer group on `stream`. */
  createGroup(stream: string, group: string, options: GroupOptions = {}): Promise<GroupConfig> {
    return registry.createGroup(this.ctx, stream, group, options);
  }

  /** Replace a stream's retention; `{}` makes it keep everything again. Takes effect at the next trim. */
  setRetention(stream: string, retention: Retention): Promise<StreamInfo> {
    return registry.setRetention(this.ctx, stream, retention);
  }

  listStreams(): Promise<StreamInfo[]> {
    return registry.listStreams(this.ctx);
  }

  listGroups(stream: string): Promise<GroupConfig[]> {
    return registry.listGroups(this.ctx, stream);
  }

  /**
   * Delete a group and everything of it (positions, deliveries, live leases, dead
   * letters); other groups and the stream's events are untouched. Requires
   * `confirm: true`. A lease of the deleted group then answers `stale_lease` or
   * `group_not_found`; a group created again under the name starts fresh.
   * `group_not_found` when there is none.
   */
  deleteGroup(stream: string, group: string, options: DeleteGroupOptions): Promise<void> {
    return registry.deleteGroup(this.ctx, stream, group, options);
  }

  // ---------------------------------------------------------------- group settings, changed in place

  /**
   * Change a group's stored settings in place, its deliveries, positions and dead
   * letters kept, and return the new config. `changes` may set `maxAttempts` and
   * any of `retry`'s fields; each left out keeps its stored value. Every process
   * of the group applies the new values from its next claim or settle on: a lower
   * `maxAttempts` dead-letters a delivery at its next failure (a delivery waiting
   * for its retry is still run once, never dead-lettered where it waits), a higher one lets a delivery waiting for its retry (or whose
   * lease expires) be retried again; a new `retry` applies to retries scheduled
   * after it. `ordering` and `start` are refused with the reason, as is an unknown
   * key or a bad value (naming the field), and then nothing changes.
   * `group_not_found` when there is none.
   */
  updateGroup(stream: string, group: string, changes: GroupChanges): Promise<GroupConfig> {
    return groupSettings.updateGroup(this.ctx, stream, group, changes);
  }

  /**
   * Pause a group in every process (docs/adr/046-pausing-a-group.md): from the
   * moment this resolves no process claims a delivery of it, until
   * {@link resumeGroup} or, with `until`, until the store's clock reaches that
   * time. Handlers already running finish and settle, leases renew, appends go
   * on and lag grows as usual. The pause is stored: it outlives every process,
   * and a process that starts while it holds starts paused. Pausing a paused
   * group replaces its pause. Returns the pause as stored. Publishes
   * `rheo:group:paused`. `group_not_found` when there is none.
   */
  pauseGroup(stream: string, group: string, options: PauseGroupOptions = {}): Promise<GroupPause> {
    return pause.pauseGroup(this.ctx, stream, group, options);
  }

  /**
   * Lift a group's pause; its waiting consumers are woken as by an append, so they
   * claim at once. True when a pause was holding the group back, false (nothing
   * changed) when none was. Publishes `rheo:group:resumed`. `group_not_found` when
   * there is none.
   */
  resumeGroup(stream: string, group: string): Promise<boolean> {
    return pause.resumeGroup(this.ctx, stream, group);
  }

  // ---------------------------------------------------------------- waiting deliveries: skip, reschedule, cancel

  /**
   * Settle waiting deliveries of a group as handled, without running the handler
   * (docs/adr/048-skip-reschedule-cancel.md): a retry not yet due, a parked delayed
   * event, a released or expired lease. The frontier passes each as it passes an
   * ack (lag drops once the events before it are done), an `ordering: 'partition'`
   * group's partition moves on to its next event, and `groupInfo(...).skipped`
   * counts it with `reason`. Per id, in order, `{ ok: true }` or the reason that id
   * was left alone: `lease_held` for a delivery in flight (the message names when
   * its lease expires), `invalid_argument` for an id the stream does not hold, an
   * event the group has not been offered yet, or one it has settled already. At
   * most 10,000 ids, each once. `group_not_found` when there is none.
   */
  skip(stream: string, group: string, ids: string[], options: SkipOptions = {}): Promise<SettleResult[]> {
    return waiting.skip(this.ctx, stream, group, ids, options);
  }

  /**
   * Make waiting deliveries of a group (as {@link skip} means it) due at
   * `deliverAt`, or `delayMs` from now by the store's clock, at most a year ahead;
   * their attempt is unchanged. Per-id results as {@link skip}'s.
   */
  reschedule(stream: string, group: string, ids: string[], options: RescheduleOptions): Promise<SettleResult[]> {
    return waiting.reschedule(this.ctx, stream, group, ids, options);
  }

  /**
   * Cancel a delayed event in every group of its stream: no group ever runs it,
   * including groups whose cursor has not reached it yet. Where it waits it is
   * skipped with `reason`; a group holding a live lease on it refuses the whole
   * cancel (`lease_held`, nothing changed). Returns in how many groups it was still
   * to run (0 when every group had settled it, or it was cancelled already).
   * `invalid_argument` (field `id`) for an id the stream does not hold or an event
   * without a delay.
   */
  cancelDelayed(stream: string, id: string, options: CancelDelayedOptions = {}): Promise<number> {
    return waiting.cancelDelayed(this.ctx, stream, id, options);
  }

  // ---------------------------------------------------------------- log: append, read, query

  /** Append one event. A caller-supplied `id` already in the stream returns the stored event and writes nothing. */
  append<P = JsonValue>(stream: string, input: AppendInput<P>, options: AppendOptions = {}): Promise<RheoEvent<P>> {
    return log.append(this.ctx, stream, input, options);
  }

  /** Append many events atomically; sequences are contiguous per partition. Returns them in input order. */
  appendBatch<P = JsonValue>(stream: string, inputs: AppendInput<P>[], options: AppendOptions = {}): Promise<RheoEvent<P>[]> {
    return log.appendBatch(this.ctx, stream, inputs, options);
  }

  /** Events of one partition after a sequence, in order. Touches no group state. */
  read(stream: string, options: { partition?: number; afterSequence?: number; limit?: number } = {}): Promise<RheoEvent[]> {
    return log.read(this.ctx, stream, options);
  }

  /** Events matching `query`, at most `limit`. */
  query(query: Query): Promise<RheoEvent[]> {
    return log.query(this.ctx, query);
  }

  /** One page of events matching `query`; pass `nextCursor` back as `cursor` for the next. */
  queryPage(query: Query): Promise<Page<RheoEvent>> {
    return log.queryPage(this.ctx, query);
  }

  /** Every event matching `query`, page by page, as an async iterable. */
  queryStream(query: Query): AsyncGenerator<RheoEvent, void, undefined> {
    return log.queryStream(this.ctx, query);
  }

  // ---------------------------------------------------------------- delivery: leases

  /**
   * Claim up to `limit` events for `group`. Empty when there is no work. The
   * deliveries the claim dead-lettered (leases expired on the group's last
   * attempt) are named in `deadLettered` (see {@link FetchedLeases}) and told on
   * `rheo:dead_letter`.
   */
  fetch(stream: string, group: string, options: FetchOptions = {}): Promise<FetchedLeases> {
    return delivery.fetch(this.ctx, stream, group, options);
  }

  /** Extend `lease` to `leaseMs` from now. Returns the lease with its new expiry. */
  renew<P>(lease: Lease<P>, options: { leaseMs?: number } = {}): Promise<Lease<P>> {
    return delivery.renew(this.ctx, lease, options);
  }

  /** Renew many leases in one backend call; per-lease results. */
  renewMany(leases: Lease<unknown>[], options: { leaseMs?: number } = {}): Promise<RenewResult[]> {
    return delivery.renewMany(this.ctx, leases, options);
  }

  /** Done: the event is terminal for the group. */
  ack(lease: Lease<unknown>): Promise<void> {
    return delivery.ack(this.ctx, lease);
  }

  /** Not done: redeliver after `delayMs` (or the group's backoff); dead-letter at maxAttempts. */
  nack(lease: Lease<unknown>, options: NackOptions = {}): Promise<void> {
    return delivery.nack(this.ctx, lease, options);
  }

  /** Dead-letter the event for this group now, with `reason` (default `rejected`). */
  reject(lease: Lease<unknown>, options: RejectOptions = {}): Promise<void> {
    return delivery.reject(this.ctx, lease, options);
  }

  /** Settle many leases in one backend call; per-lease results, in order. */
  settleMany(requests: SettleRequest[]): Promise<SettleResult[]> {
    return delivery.settleMany(this.ctx, requests);
  }

  /**
   * Give leases back unhandled: each event is claimable again at once and keeps
   * the attempt it had (this delivery is not counted). For leases no handler
   * started on: a consumer shutting down with prefetched leases, or one that
   * found a buffered lease too close to expiry. Per-lease results, in order; a
   * lease claimed by someone else since answers `stale_lease`.
   */
  releaseMany(leases: Lease<unknown>[]): Promise<SettleResult[]> {
    return delivery.releaseMany(this.ctx, leases);
  }

  // ---------------------------------------------------------------- recovery: replay, reset, inspection

  /** Re-open a group's deliveries from a sequence, a time or a query. Returns how many events were re-opened. */
  replay(stream: string, group: string, options: ReplayOptions): Promise<number> {
    return recovery.replay(this.ctx, stream, group, options);
  }

  /** Forget every delivery of the group and restart it at `start` (default beginning). Requires `confirm: true`. */
  reset(stream: string, group: string, options: ResetOptions): Promise<void> {
    return recovery.reset(this.ctx, stream, group, options);
  }

  lag(stream: string, group: string): Promise<Lag> {
    return recovery.lag(this.ctx, stream, group);
  }

  groupInfo(stream: string, group: string): Promise<GroupInfo> {
    return recovery.groupInfo(this.ctx, stream, group);
  }

  /** Dead letters of a group, ordered by (partition, sequence); `after` is the last event id of the previous page. */
  deadLetters(stream: string, group: string, options: { limit?: number; after?: string } = {}): Promise<DeadLetter[]> {
    return recovery.deadLetters(this.ctx, stream, group, options);
  }

  /**
   * How many dead letters the group holds: all of them, or with `since` only those
   * dead-lettered at or after that time (what an alert on events starting to die
   * reads). Cheap on every backend (an index count), so a health probe may call it.
   */
  countDeadLetters(stream: string, group: string, options: { since?: Date } = {}): Promise<number> {
    return recovery.countDeadLetters(this.ctx, stream, group, options);
  }

  /** Make dead letters available again. Returns how many were redriven. */
  redrive(stream: string, group: string, options: RedriveOptions): Promise<number> {
    return recovery.redrive(this.ctx, stream, group, options);
  }

  // ---------------------------------------------------------------- retention

  /**
   * Apply the stream's retention now: delete the events it lets go that every
   * group has finished (see {@link TrimOptions.force} for the ones they have not).
   * A stream without `maxAgeMs` or `maxEvents` keeps everything: the result then
   * removes nothing. Dead letters are purged separately ({@link purgeDeadLetters}).
   */
  trim(stream: string, options: TrimOptions = {}): Promise<TrimResult> {
    return retention.trim(this.ctx, stream, options);
  }

  /** Delete a group's dead letters dead-lettered before a time, or all of them. Returns how many. */
  purgeDeadLetters(stream: string, group: string, options: PurgeDeadLettersOptions): Promise<number> {
    return retention.purgeDeadLetters(this.ctx, stream, group, options);
  }

  // ---------------------------------------------------------------- lifecycle

  /** Resolves when the backend answers; throws `backend_unavailable` otherwise. */
  async ping(): Promise<void> {
    await this.ctx.init();
    return this.backend.ping();
  }

  /** Close the backend. Idempotent. */
  async close(): Promise<void> {
    await this.backend.close();
  }
}
