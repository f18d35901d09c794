import { EventEmitter } from 'node:events';
import { backoffDelay } from '../core/backoff';
import { channels, deliveryOf, processChannel, type ProcessMessage, traceWith } from '../core/diagnostics';
import { RheoError, toRheoError } from '../core/errors';
import { type Outcome, outcomeOfError, RheoReject, RheoRetry } from '../core/outcomes';
import type { Rheo, SettleRequest } from '../core/rheo';
import { classifySettleError } from '../core/settle';
import type { Lease } from '../core/types';
import { deadLetteredOf } from '../core/fetched';
import { MAX_BATCH, MAX_FETCH_LIMIT } from '../core/limits';
import type { DrainResult, ConsumerBatchHandler, ConsumerEvents, ConsumerHandler, ConsumerState, ConsumerStats } from './consumer-types';
import { BatchRun } from './batch-run';
import { LazyDeliveryControl } from './delivery-control';
import { timeoutOutcome, withTimeout } from './handler-timeout';
import { Inflight, type InflightEntry } from './inflight';
import {
  type BatchOptions,
  checkDrainTimeout,
  FETCH_BACKOFF,
  type GroupRunOptions,
  type ResolvedGroupOptions,
  resolveGroupOptions,
} from './options';
import { ACK, bounded, nackAfterFailedSettle, outcomeOfValue, SETTLED_BY_HANDLER, settleRequest } from './handler-result';
import { tracing } from '../core/otel-api';
import { processSpan } from './process-span';
import { ackFailureOf, checkTransactional, outcomeOfRun, runTransactional } from './transactional';
import { Renewals } from './renewals';
import { SettleBatcher, type SettleResult } from './settle-batcher';

/** Spurious wake-ups (a hint followed by an empty fetch) tolerated per poll interval before the hint is ignored for one round. */
const MAX_EMPTY_WAKE_UPS = 3;

/**
 * Where the fetch loop is. `full`: no room, the next handler or settle to finish
 * kicks it. `waiting`: the last fetch found nothing, waiting for a wake-up or the
 * poll timer. `backoff`: waiting for the backoff timer after a fetch error.
 */
type LoopPhase = 'off' | 'fetching' | 'full' | 'waiting' | 'backoff';

/**
 * The consumer runtime for one (stream, group) in one process: a bounded fetch
 * loop that runs a handler per lease, settles by outcome in coalesced batches,
 * renews what it holds, backs off on fetch errors and drains on shutdown.
 *
 * Bounds: never more than `maxDemand` unsettled leases held, never more than
 * `concurrency` handlers running. Nothing it does rejects unhandled: backend
 * outages, handler throws and settle failures surface as events and state.
 */
export class Consumer extends EventEmitter<ConsumerEvents> {
  private readonly options: ResolvedGroupOptions;
  private readonly held = new Inflight();
  private readonly settler: SettleBatcher;
  private readonly renewals: Renewals;
  private readonly counters: ConsumerStats = {
    fetches: 0,
    leases: 0,
    pollTimeouts: 0,
    wakeUps: 0,
    renewRounds: 0,
    settleBatches: 0,
    settled: 0,
    dropped: 0,
    released: 0,
    lateSettles: 0,
    timeouts: 0,
    lateResults: 0,
  };
  /** No handler starts on a lease with less than this left: it would likely expire under the handler. */
  private readonly startMarginMs: number;
  /** Release calls on their way (a drain waits for them). */
  private releasing = 0;
  private renewError: RheoError | null = null;

  private current: ConsumerState = 'idle';
  private error: RheoError | null = null;
  private handlersRunning = 0;
  /**
   * Handler calls past their timeout that have not ended yet. Their outcome is
   * decided and their slot given back, but they still run: they count against
   * a second `concurrency` of room, so calls that ignore their signal can never
   * pile up beyond `2 × concurrency` (docs/adr/029).
   */
  private overdueCalls = 0;
  /** Batch mode: the ready leases have waited `batch.maxWaitMs`, the next batch runs with what there is. */
  private batchDue = false;
  private batchTimer: NodeJS.Timeout | null = null;
  /** Leases held but not yet handed to a handler: the prefetch buffer, in fetch order. */
  private readonly ready: InflightEntry[] = [];

  private phase: LoopPhase = 'off';
  private kickScheduled = false;
  /** The one poll timer: the wait for work or the fetch backoff, never both. */
  private pollTimer: NodeJS.Timeout | null = null;
  private wakeAbort: AbortController | null = null;
  private emptyWakeUps = 0;
  private fetchFailures = 0;

  private drainTimer: NodeJS.Timeout | null = null;
  private drainPromise: Promise<DrainResult> | null = null;
  private drainDone: ((result: DrainResult) => void) | null = null;

  /**
   * Validates `options` (RheoError('invalid_argument') naming the field); does
   * not touch the backend. With `batch`, the handler takes the leases of a
   * batch ({@link ConsumerBatchHandler}); without, one lease ({@link ConsumerHandler}).
   */
  constructor(rheo: Rheo, options: GroupRunOptions & { batch: BatchOptions }, handler: ConsumerBatchHandler);
  constructor(rheo: Rheo, options: GroupRunOptions & { batch?: undefined }, handler: ConsumerHandler);
  constructor(
    private readonly rheo: Rheo,
    options: GroupRunOptions,
    private readonly handler: ConsumerHandler | ConsumerBatchHandler,
  ) {
    super();
    if (!rheo || !rheo.backend || typeof rheo.fetch !== 'function' || typeof rheo.settleMany !== 'function')
      throw RheoError.invalid('rheo', 'must be a Rheo instance');
    if (typeof handler !== 'function') throw RheoError.invalid('handler', 'must be a function');
    this.options = resolveGroupOptions(options);
    if (this.options.transactional) checkTransactional(rheo);
    const leaseMs = this.options.leaseMs;
    this.startMarginMs = Math.min(Math.max(Math.ceil(leaseMs / 10), 100), Math.floor(leaseMs / 2));
    this.renewals = new Renewals(rheo, this.held, leaseMs, {
      lost: (entry) => {
        const reason = `lease on event ${entry.lease.event.id} lost: another consumer holds it now`;
        this.abortDelivery(entry, new RheoError('stale_lease', reason));
        if (channels.leaseLost.hasSubscribers) channels.leaseLost.publish({ ...deliveryOf(entry.lease), reason });
        this.notify('lease_lost', entry.lease);
        this.roomFreed();
        this.checkDrained();
      },
      failed: (error, leases, consecutive) => {
        this.renewError = error;
        if (channels.renewError.hasSubscribers) {
          const { stream, group, consumerId } = this.options;
          channels.renewError.publish({ stream, group, consumerId, code: error.code, reason: error.message, leases, consecutive });
        }
        this.notify('renew_error', { error, leases, consecutive });
      },
      recovered: () => {
        this.renewError = null;
        this.notify('renew_recovered');
      },
      afterRound: () => this.sweep(),
    });
    this.settler = new SettleBatcher(
      (requests) => this.rheo.settleMany(requests),
      MAX_BATCH,
      () => this.checkDrained(),
    );
  }

  // ------------------------------------------------------------------ public surface

  /** Current state. */
  get state(): ConsumerState {
    return this.current;
  }

  /** Unsettled leases held (fetched, not yet settled or given up). After a drain that timed out: the leases left to expire. */
  get inflight(): number {
    return this.held.size;
  }

  /** Handler calls running now (a batch is one call), not counting those past their timeout. */
  get running(): number {
    return this.handlersRunning;
  }

  /** Handler calls past their timeout that have not ended yet (their outcome is settled already, their result will be dropped). */
  get overdue(): number {
    return this.overdueCalls;
  }

  /** The fetch error while `backing_off`, else null. */
  get lastError(): RheoError | null {
    return this.current === 'backing_off' ? this.error : null;
  }

  /** The renewal error while renewals are failing (leases at risk of expiring under their handlers), else null. */
  get renewalError(): RheoError | null {
    return this.current === 'stopped' || !this.renewals.failing ? null : this.renewError;
  }

  /** A snapshot of the Consumer's counters. */
  get stats(): ConsumerStats {
    return { ...this.counters, renewRounds: this.renewals.rounds, settleBatches: this.settler.batches };
  }

  /** The options in force, defaults applied. */
  get config(): Readonly<ResolvedGroupOptions> {
    return this.options;
  }

  /**
   * Start fetching. Idempotent; a stopped Consumer stays stopped (build a new one).
   * The stream and group must exist: until they do, fetches fail and the Consumer
   * backs off with `lastError` set.
   */
  start(): void {
    if (this.current !== 'idle') return;
    this.setState('running');
    if (channels.consumerStart.hasSubscribers) {
      const { stream, group, consumerId } = this.options;
      channels.consumerStart.publish({ stream, group, consumerId });
    }
    this.renewals.start();
    this.fetchNow();
  }

  /**
   * Stop fetching, give back at once every prefetched lease no handler started
   * on (another consumer can take it now, with the attempt it had), keep
   * renewing, and wait for running handlers and their settles, up to `timeoutMs`
   * (default `drainTimeoutMs`). Then abort the running handlers' signals and stop
   * renewing: leases still unsettled are left to expire and be redelivered.
   * Idempotent: a second call returns the same promise.
   */
  drain(timeoutMs?: number): Promise<DrainResult> {
    if (this.drainPromise) return this.drainPromise;
    let timeout: number;
    try {
      timeout = timeoutMs === undefined ? this.options.drainTimeoutMs : checkDrainTimeout('timeoutMs', timeoutMs);
    } catch (err) {
      return Promise.reject(err);
    }
    this.drainPromise = new Promise<DrainResult>((resolve) => (this.drainDone = resolve));
    if (this.current === 'idle') {
      this.finish('drained');
      return this.drainPromise;
    }
    this.stopFetching();
    this.setState('draining');
    this.clearBatchWait();
    this.releaseUnstarted(this.ready.splice(0));
    this.drainTimer = setTimeout(() => this.finish('timeout'), timeout);
    this.checkDrained();
    return this.drainPromise;
  }

  // ------------------------------------------------------------------ fetch loop

  private get fetching(): boolean {
    return this.current === 'running' || this.current === 'backing_off';
  }

  /**
   * How many leases to fetch now. The Consumer prefetches: it holds up to `maxDemand`
   * leases (renewed while they wait) and runs `concurrency` of them, so one round
   * trip claims a large batch instead of one per free handler. It fetches again
   * once fewer than `concurrency` leases are waiting, before handlers run dry.
   */
  private room(): number {
    // A batch consumer wants whole batches waiting, not single leases.
    if (this.ready.length >= this.options.concurrency * (this.options.batch?.size ?? 1)) return 0;
    return this.options.maxDemand - this.held.size;
  }

  /** `byWake`: this fetch answers a wake-up hint (an empty answer makes the hint spurious). */
  private fetchNow(byWake = false): void {
    const room = this.room();
    if (room <= 0) {
      this.phase = 'full';
      return;
    }
    this.phase = 'fetching';
    this.counters.fetches++;
    const { stream, group, leaseMs, consumerId, partitions } = this.options;
    let call: Promise<Lease[]>;
    try {
      // The facade only reads `partitions` (it validates into a new array).
      call = this.rheo.fetch(stream, group, {
        limit: Math.min(room, MAX_FETCH_LIMIT),
        leaseMs,
        consumerId,
        partitions: partitions as number[] | undefined,
      });
    } catch (err) {
      call = Promise.reject(err);
    }
    call.then(
      (leases) => this.onLeases(leases, byWake),
      (err: unknown) => this.onFetchError(err),
    );
  }

  /** Room opened (a handler or a settle finished): a loop waiting for room fetches on the next turn, so completions of one turn share one fetch. */
  private roomFreed(): void {
    if (this.phase !== 'full' || this.kickScheduled) return;
    this.kickScheduled = true;
    setImmediate(() => {
      this.kickScheduled = false;
      if (this.phase === 'full' && this.fetching) this.fetchNow();
    });
  }

  private onLeases(leases: Lease[], byWake: boolean): void {
    this.phase = 'off';
    // Told whatever happens next: the dead letters are written already.
    const dead = deadLetteredOf(leases);
    if (dead) for (const d of dead) this.notify('dead_letter', { ...d });
    if (this.current === 'stopped') return; // the drain timed out meanwhile: these expire and are redelivered
    this.counters.leases += leases.length;
    if (this.fetchFailures > 0) {
      this.fetchFailures = 0;
      this.error = null;
      if (this.current === 'backing_off') this.setState('running');
      this.notify('recovered');
    }
    if (!this.fetching) {
      // Fetched while a drain began: nobody will handle them here, so give them back now.
      this.releaseUnstarted(leases.map((lease) => this.held.add(lease)));
      this.checkDrained();
      return;
    }
    for (const lease of leases) this.ready.push(this.held.add(lease));
    this.startReady();
    if (leases.length === 0) {
      if (byWake) this.emptyWakeUps++;
      this.waitForWork();
    } else {
      this.emptyWakeUps = 0;
      this.fetchNow();
    }
  }

  private onFetchError(err: unknown): void {
    this.phase = 'off';
    const error = toRheoError(err);
    if (this.current === 'stopped') return;
    if (!this.fetching) {
      this.notify('fetch_error', error);
      this.checkDrained();
      return;
    }
    this.fetchFailures++;
    this.error = error;
    if (channels.fetchError.hasSubscribers) {
      const { stream, group, consumerId } = this.options;
      channels.fetchError.publish({ stream, group, consumerId, code: error.code, reason: error.message });
    }
    this.setState('backing_off');
    this.notify('fetch_error', error);
    this.phase = 'backoff';
    this.pollTimer = setTimeout(
      () => {
        this.pollTimer = null;
        if (this.phase === 'backoff' && this.fetching) this.fetchNow();
      },
      backoffDelay(FETCH_BACKOFF, this.fetchFailures),
    );
  }

  /** Nothing to fetch: wait for the backend's wake-up hint or the poll timer, whichever first. */
  private waitForWork(): void {
    this.phase = 'waiting';
    const { pollMs, stream, group } = this.options;
    this.pollTimer = setTimeout(() => this.endWait('poll'), pollMs);
    const wait = this.rheo.backend.wait;
    if (!wait || this.emptyWakeUps >= MAX_EMPTY_WAKE_UPS) return;
    const abort = new AbortController();
    this.wakeAbort = abort;
    let hint: Promise<void>;
    try {
      // The poll timer stays authoritative: the hint's own timeout is a cap, twice as long.
      hint = Promise.resolve(wait.call(this.rheo.backend, { stream, group, timeoutMs: pollMs * 2, signal: abort.signal }));
    } catch {
      return; // a hint that cannot be had costs one poll
    }
    // Through setImmediate: even a hint that resolves at once, every time, leaves
    // room for timers and I/O between fetches instead of chaining microtasks.
    const onWake = () => {
      if (this.wakeAbort === abort) this.endWait('wake');
    };
    hint.then(
      () => setImmediate(onWake),
      () => undefined,
    );
  }

  private endWait(by: 'wake' | 'poll' | 'settle'): void {
    if (this.phase !== 'waiting') return;
    this.clearWait();
    if (by === 'wake') this.counters.wakeUps++;
    else if (by === 'poll') {
      this.counters.pollTimeouts++;
      this.emptyWakeUps = 0;
    }
    if (this.fetching) this.fetchNow(by === 'wake');
  }

  private clearWait(): void {
    if (this.pollTimer) clearTimeout(this.pollTimer);
    this.pollTimer = null;
    const abort = this.wakeAbort;
    this.wakeAbort = null;
    abort?.abort();
  }

  private stopFetching(): void {
    this.clearWait();
    if (this.phase !== 'fetching') this.phase = 'off';
    this.error = null;
  }

  // ------------------------------------------------------------------ handlers and settles

  /**
   * Hand buffered leases to free handlers, in fetch order. A lease lost while it
   * waited is skipped; one that expired, or has less than the start margin left,
   * is dropped and given back: starting it would handle an event that is (or is
   * about to be) somebody else's.
   */
  private startReady(): void {
    if (!this.fetching) return;
    const now = this.rheo.backend.clock.now();
    if (this.options.batch) return this.startBatches(now, this.options.batch.size);
    let expiring: InflightEntry[] | null = null;
    while (this.canStart() && this.ready.length > 0) {
      const entry = this.ready.shift()!;
      if (!this.held.holds(entry)) continue;
      if (this.tooLateToStart(entry, now)) (expiring ??= []).push(entry);
      else this.handle(entry);
    }
    if (expiring) this.dropExpiring(expiring);
  }

  /**
   * A free slot: fewer than `concurrency` calls running, and fewer than
   * `2 × concurrency` alive counting those past their timeout.
   */
  private canStart(): boolean {
    const c = this.options.concurrency;
    return this.handlersRunning < c && this.handlersRunning + this.overdueCalls < 2 * c;
  }

  /**
   * Batch mode: start a batch per free slot once `size` leases wait, or once
   * they have waited `maxWaitMs` (then with what there is). Lost and expiring
   * leases are taken out first, as for single handlers.
   */
  private startBatches(now: number, size: number): void {
    const expiring: InflightEntry[] = [];
    let live = 0;
    for (const entry of this.ready) {
      if (!this.held.holds(entry)) continue;
      if (this.tooLateToStart(entry, now)) expiring.push(entry);
      else this.ready[live++] = entry;
    }
    this.ready.length = live;
    if (expiring.length > 0) this.dropExpiring(expiring);
    const due = () => this.batchDue || this.options.batch!.maxWaitMs === 0;
    while (this.canStart() && this.ready.length > 0 && (this.ready.length >= size || due())) {
      this.batchDue = false;
      this.clearBatchWait();
      this.handleBatch(this.ready.splice(0, size));
    }
    if (this.ready.length > 0 && !this.batchDue && !this.batchTimer) {
      this.batchTimer = setTimeout(() => {
        this.batchTimer = null;
        this.batchDue = true;
        this.startReady();
      }, this.options.batch!.maxWaitMs);
    }
  }

  private clearBatchWait(): void {
    if (this.batchTimer) clearTimeout(this.batchTimer);
    this.batchTimer = null;
  }

  /** Less than the start margin left: a handler started now would likely outlive the lease. */
  private tooLateToStart(entry: InflightEntry, now: number): boolean {
    return entry.expiresAt - now < this.startMarginMs;
  }

  /** After each renewal round: drop buffered leases too close to expiry; abort handlers whose lease has expired. */
  private sweep(): void {
    if (this.current === 'stopped') return;
    const now = this.rheo.backend.clock.now();
    const keep: InflightEntry[] = [];
    const expiring: InflightEntry[] = [];
    for (const entry of this.ready) {
      if (!this.held.holds(entry)) continue;
      if (this.tooLateToStart(entry, now)) expiring.push(entry);
      else keep.push(entry);
    }
    if (expiring.length > 0) {
      this.ready.splice(0, this.ready.length, ...keep);
      this.dropExpiring(expiring);
    }
    for (const entry of this.held.all()) {
      if (entry.expiresAt > now) continue;
      const started = entry.batch ? !entry.batch.isGone(entry.lease.leaseId) : entry.control !== null && !entry.control.aborted;
      if (!started) continue;
      const reason = `lease on event ${entry.lease.event.id} expired: renewals failed, another consumer may hold it now`;
      this.abortDelivery(entry, new RheoError('stale_lease', reason));
      if (channels.leaseExpired.hasSubscribers) channels.leaseExpired.publish({ ...deliveryOf(entry.lease), reason });
    }
  }

  /**
   * The lease of a running delivery is no longer ours: abort its signal. A
   * batch's signal aborts only when none of its leases is left (the others are
   * still worth finishing).
   */
  private abortDelivery(entry: InflightEntry, error: RheoError): void {
    if (entry.batch) {
      if (entry.batch.leaseGone(entry.lease.leaseId)) entry.batch.control.abort(error);
    } else entry.control?.abort(error);
  }

  private dropExpiring(entries: InflightEntry[]): void {
    this.counters.dropped += entries.length;
    if (channels.leaseExpired.hasSubscribers) {
      for (const { lease } of entries) {
        channels.leaseExpired.publish({
          ...deliveryOf(lease),
          reason: `lease on event ${lease.event.id} too close to expiry to start; given back`,
        });
      }
    }
    this.releaseUnstarted(entries);
  }

  /**
   * Stop holding leases no handler started on and give them back: claimable at
   * once elsewhere, with the attempt they had. A lease someone else claimed since
   * answers stale_lease and is simply let go.
   */
  private releaseUnstarted(entries: InflightEntry[]): void {
    const leases: Lease[] = [];
    for (const entry of entries) {
      if (!this.held.holds(entry)) continue;
      this.held.delete(entry.lease.leaseId);
      leases.push(entry.lease);
    }
    if (leases.length === 0) return;
    this.roomFreed();
    for (let i = 0; i < leases.length; i += MAX_BATCH) {
      const chunk = leases.slice(i, i + MAX_BATCH);
      this.releasing++;
      let call: ReturnType<Rheo['releaseMany']>;
      try {
        call = this.rheo.releaseMany(chunk);
      } catch (err) {
        call = Promise.reject(err);
      }
      call
        .then(
          (results) => {
            for (const r of results) if (r.ok) this.counters.released++;
          },
          () => undefined, // not given back: they expire and come back as a later attempt
        )
        .finally(() => {
          this.releasing--;
          this.checkDrained();
        });
    }
  }

  private handle(entry: InflightEntry): void {
    const lease = entry.lease;
    this.handlersRunning++;
    const control = new LazyDeliveryControl();
    entry.control = control;
    // The common case, with no one observing: the bare call, without the closures the wrappers take.
    const bare =
      !this.options.transactional && this.options.timeoutMs === undefined && !processChannel.hasSubscribers && tracing() === undefined;
    const result = bare ? settledCall(() => (this.handler as ConsumerHandler)(lease, control)) : this.wrapped(lease, control, entry);
    result.then(
      (value) => this.onHandled(entry, value),
      (err: unknown) => this.onHandlerThrew(entry, err),
    );
  }

  /** A handler call inside what observes or bounds it: its process span and `rheo:process`, a transaction, a timeout. */
  private wrapped(lease: Lease, control: LazyDeliveryControl, entry: InflightEntry): Promise<Outcome | void> {
    const run = (): Promise<Outcome | void> => {
      const call = settledCall(() =>
        this.options.transactional
          ? runTransactional(this.rheo, lease, control, this.handler as ConsumerHandler, () => (entry.settling = true))
          : (this.handler as ConsumerHandler)(lease, control),
      );
      return this.options.timeoutMs === undefined ? call : this.bounded(call, control, [lease]);
    };
    const invoke = () => processSpan(lease, this.options.group, run);
    return processChannel.hasSubscribers ? this.traceProcess(lease, invoke) : invoke();
  }

  /** One batch handler call on `entries` (at most `batch.size`), settled in one `settleMany`. */
  private handleBatch(entries: InflightEntry[]): void {
    this.handlersRunning++;
    const run = new BatchRun(entries.map((e) => e.lease));
    for (const entry of entries) entry.batch = run;
    const call = settledCall(() => (this.handler as ConsumerBatchHandler)(run.leases, run));
    const result = this.options.timeoutMs === undefined ? call : this.bounded(call, run.control, run.leases);
    result.then(
      (value) => this.onBatchEnded(entries, run, value, false),
      (err: unknown) => this.onBatchEnded(entries, run, err, true),
    );
  }

  /**
   * A handler call bounded by `timeoutMs`: at the timeout its signal aborts and
   * it resolves with the timeout's outcome; its slot is given back and it counts
   * as overdue until it really ends (then its result is dropped, counted).
   */
  private bounded(call: Promise<Outcome | void>, control: LazyDeliveryControl, leases: readonly Lease[]): Promise<Outcome | void> {
    const timeoutMs = this.options.timeoutMs!;
    return withTimeout(call, timeoutMs, timeoutOutcome(timeoutMs, this.options.onTimeout), {
      expired: (error) => {
        this.counters.timeouts++;
        this.overdueCalls++;
        control.abort(error);
        for (const lease of leases) this.publishHandlerError(lease, error);
        this.notify('handler_error', leases.length === 1 ? { lease: leases[0], error } : { lease: leases[0], leases, error });
      },
      late: (ended) => {
        this.overdueCalls--;
        this.counters.lateResults++;
        this.notify('late_result', { leases, timeoutMs, ended });
        // Calls past their timeout count against the 2 × concurrency bound: one ending may free a slot.
        this.startReady();
      },
    });
  }

  /** A batch call ended (`threw`: `value` is what it threw): settle each lease by its own outcome, else the call's. */
  private onBatchEnded(entries: InflightEntry[], run: BatchRun, value: unknown, threw: boolean): void {
    this.handlersRunning--;
    run.close();
    this.startReady();
    let fallback: Outcome;
    if (threw) {
      // RheoReject and RheoRetry are the handler's decisions, not failures.
      if (!(value instanceof RheoReject) && !(value instanceof RheoRetry)) this.reportBatchError(run, value);
      fallback = bounded(outcomeOfError(value));
    } else if (value === SETTLED_BY_HANDLER) {
      for (const entry of entries) if (this.held.holds(entry)) this.onSettled(entry, ACK, { ok: true });
      this.roomFreed();
      this.checkDrained();
      return;
    } else {
      const outcome = outcomeOfValue(value);
      if (outcome instanceof RheoError) this.reportBatchError(run, outcome);
      fallback = outcome instanceof RheoError ? { kind: 'nack', reason: outcome.message } : outcome;
    }
    this.settleBatch(entries, run, fallback);
    this.roomFreed();
    this.checkDrained();
  }

  private reportBatchError(run: BatchRun, error: unknown): void {
    for (const lease of run.leases) this.publishHandlerError(lease, error);
    this.notify('handler_error', { lease: run.leases[0], leases: run.leases, error });
  }

  /** Every lease of a batch still ours, in one settle call. */
  private settleBatch(entries: InflightEntry[], run: BatchRun, fallback: Outcome): void {
    const items: Array<{ request: SettleRequest; done: (result: SettleResult) => void }> = [];
    entries.forEach((entry, i) => {
      const outcome = run.outcomeOf(i, fallback);
      if (this.current === 'stopped') {
        this.counters.lateSettles++;
        this.notify('late_settle', { lease: entry.lease, outcome });
        return;
      }
      if (!this.held.holds(entry)) return; // lost mid-batch: not ours to settle
      entry.settling = true;
      items.push({ request: settleRequest(entry.lease, outcome), done: (result) => this.onSettled(entry, outcome, result) });
    });
    this.settler.settleAll(items);
  }

  /** The handler run on `rheo:process`, its outcome set before `asyncEnd`. */
  private traceProcess(lease: Lease, invoke: () => Promise<Outcome | void>): Promise<Outcome | void> {
    const msg: ProcessMessage = { ...deliveryOf(lease), eventTimestamp: lease.event.timestamp };
    return traceWith(
      processChannel,
      msg,
      invoke,
      (value, m) => describeOutcome(m, outcomeOfRun(value)),
      (err, m) =>
        describeOutcome(m, err instanceof RheoReject || err instanceof RheoRetry ? outcomeOfError(err) : bounded(outcomeOfError(err))),
    );
  }

  private onHandled(entry: InflightEntry, value: unknown): void {
    this.handlersRunning--;
    this.startReady();
    if (value === SETTLED_BY_HANDLER) {
      if (this.held.holds(entry)) this.onSettled(entry, ACK, { ok: true });
      this.roomFreed();
      this.checkDrained();
      return;
    }
    // A transactional ack that did not certainly commit: that ack's failed settle (lost, unknown).
    const ackError = ackFailureOf(value);
    if (ackError) {
      if (this.held.holds(entry)) this.onSettled(entry, ACK, { ok: false, error: ackError });
      this.roomFreed();
      this.checkDrained();
      return;
    }
    const outcome = outcomeOfValue(value);
    if (outcome instanceof RheoError) {
      this.publishHandlerError(entry.lease, outcome);
      this.notify('handler_error', { lease: entry.lease, error: outcome });
      this.settle(entry, { kind: 'nack', reason: outcome.message });
    } else {
      this.settle(entry, outcome);
    }
    this.roomFreed();
    this.checkDrained();
  }

  private onHandlerThrew(entry: InflightEntry, err: unknown): void {
    this.handlersRunning--;
    this.startReady();
    // RheoReject and RheoRetry are the handler's decisions, not failures.
    if (!(err instanceof RheoReject) && !(err instanceof RheoRetry)) {
      this.publishHandlerError(entry.lease, err);
      this.notify('handler_error', { lease: entry.lease, error: err });
    }
    this.settle(entry, bounded(outcomeOfError(err)));
    this.roomFreed();
    this.checkDrained();
  }

  private publishHandlerError(lease: Lease, error: unknown): void {
    if (!channels.handlerError.hasSubscribers) return;
    const reason = error instanceof Error ? error.message : String(error);
    channels.handlerError.publish({ ...deliveryOf(lease), reason, error });
  }

  private settle(entry: InflightEntry, outcome: Outcome): void {
    // Stopped: the backend is no longer ours to touch (counted: the drain gave up on it).
    if (this.current === 'stopped') {
      this.counters.lateSettles++;
      this.notify('late_settle', { lease: entry.lease, outcome });
      return;
    }
    // Lost on renewal: not ours to settle.
    if (!this.held.holds(entry)) return;
    entry.settling = true;
    this.settler.settle(settleRequest(entry.lease, outcome), (result) => this.onSettled(entry, outcome, result));
  }

  /** `fallback`: this settle is the nack that followed a failed one, and is not followed again. */
  private onSettled(entry: InflightEntry, outcome: Outcome, result: SettleResult, fallback = false): void {
    if (result.ok) {
      this.counters.settled++;
      this.release(entry);
      // A settle can make work available that no wake-up announces (the next event
      // of a partition-ordered group, a nack without delay): look once more.
      if (this.phase === 'waiting' && this.fetching) this.endWait('settle');
      if (this.listenerCount('settled') > 0) this.notify('settled', { lease: entry.lease, outcome });
      return;
    }
    const error = result.error;
    this.notify('settle_error', { lease: entry.lease, outcome, error });
    // A settle that certainly did not happen is followed by a nack carrying its error,
    // which counts the attempt (a failed ack's comes back at once); lost leases and
    // unknown outcomes, and a failed follow-up nack, are left to expire, which the
    // next claim counts as an attempt too.
    if (!fallback && classifySettleError(error) === 'definite' && this.current !== 'stopped') {
      const nack = nackAfterFailedSettle(outcome, error);
      this.settler.settle(settleRequest(entry.lease, nack), (r) => this.onSettled(entry, nack, r, true));
      return;
    }
    this.release(entry);
  }

  /** Stop holding `entry`: its room goes back to the fetch loop. */
  private release(entry: InflightEntry): void {
    if (this.held.get(entry.lease.leaseId) === entry) this.held.delete(entry.lease.leaseId);
    this.roomFreed();
    this.checkDrained();
  }

  // ------------------------------------------------------------------ drain and state

  private checkDrained(): void {
    if (this.current !== 'draining') return;
    if (this.handlersRunning === 0 && this.held.size === 0 && this.phase !== 'fetching' && this.settler.idle && this.releasing === 0)
      this.finish('drained');
  }

  private finish(result: DrainResult): void {
    if (this.current === 'stopped') return;
    if (this.drainTimer) clearTimeout(this.drainTimer);
    this.drainTimer = null;
    this.renewals.stop();
    this.stopFetching();
    this.clearBatchWait();
    this.ready.length = 0; // given back when the drain began
    // Handlers still running lose their leases to expiry: tell them to stop.
    for (const entry of this.held.all()) {
      const error = new RheoError(
        'failed',
        `drain timed out: the lease on event ${entry.lease.event.id} is given up and will be redelivered`,
      );
      entry.control?.abort(error);
      entry.batch?.control.abort(error);
    }
    // What is still held stays counted in `inflight` (the leases given up), but is
    // no longer renewed or settled: it expires and is redelivered.
    const started = this.current !== 'idle';
    this.setState('stopped');
    // A Consumer drained before it started never announced itself: a stop alone would unbalance start/stop counts.
    if (started && channels.consumerStop.hasSubscribers) {
      const { stream, group, consumerId } = this.options;
      channels.consumerStop.publish({ stream, group, consumerId, reason: result });
    }
    this.drainDone?.(result);
    this.drainDone = null;
  }

  private setState(state: ConsumerState): void {
    if (this.current === state) return;
    this.current = state;
    this.notify('state', state);
  }

  /** Emit without letting a throwing listener break the loop (it would surface as an unhandled rejection). */
  private notify<K extends keyof ConsumerEvents>(event: K, ...args: ConsumerEvents[K]): void {
    try {
      (this.emit as (e: K, ...a: ConsumerEvents[K]) => boolean)(event, ...args);
    } catch (err) {
      process.emitWarning(
        `nestjs-rheo: a '${String(event)}' listener of group "${this.options.group}" threw: ${err instanceof Error ? err.message : String(err)}`,
      );
    }
  }
}

/** The outcome a handler run decided, in `rheo:process` terms (a returned error is a nack with its message). */
function describeOutcome(m: ProcessMessage, outcome: Outcome | RheoError): void {
  if (outcome instanceof RheoError) {
    m.outcome = 'nack';
    m.reason = outcome.message;
    return;
  }
  m.outcome = outcome.kind;
  if (outcome.kind !== 'ack') m.reason = outcome.reason;
}

/** A handler call as a promise: a synchronous throw becomes its rejection, so every outcome takes one path. */
function settledCall<T>(call: () => T | Promise<T>): Promise<T> {
  try {
    return Promise.resolve(call());
  } catch (err) {
    return Promise.reject(err);
  }
}
