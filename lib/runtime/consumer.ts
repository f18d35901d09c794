import type { SettleWritten } from '../backends/backend';
import { EventEmitter } from 'node:events';
import { channels, deliveryOf } from '../core/diagnostics';
import { RheoError } from '../core/errors';
import { outcomeOfError, RheoReject, RheoRetry } from '../core/outcomes';
import type { Rheo } from '../core/rheo';
import type { Lease } from '../core/types';
import { deadLetteredOf, isPausedAnswer } from '../core/fetched';
import type { DrainResult, ConsumerBatchHandler, ConsumerEvents, ConsumerHandler, ConsumerState, ConsumerStats } from './consumer-types';
import { BatchDispatch } from './batch-dispatch';
import { FetchLoop } from './fetch-loop';
import { HandlerCalls } from './handler-calls';
import { abortDelivery, isBeingHandled, Inflight, type InflightEntry } from './inflight';
import { type BatchOptions, checkDrainTimeout, type GroupRunOptions, type ResolvedGroupOptions, resolveGroupOptions } from './options';
import { bounded, outcomeOfValue, SETTLED_BY_HANDLER } from './handler-result';
import { ackFailureOf, checkTransactional } from './transactional';
import { Releases } from './releases';
import { Renewals } from './renewals';
import { Settles } from './settles';

/**
 * The consumer runtime for one (stream, group) in one process: a bounded fetch
 * loop that runs a handler per lease, settles by outcome in coalesced batches,
 * renews what it holds, backs off on fetch errors and drains on shutdown.
 *
 * Bounds: never more than `maxDemand` unsettled leases held, never more than
 * `concurrency` handlers running. Nothing it does rejects unhandled: backend
 * outages, handler throws and settle failures surface as events and state.
 *
 * Each concern has its collaborator: the fetch loop (`fetch-loop.ts`), the held
 * leases (`inflight.ts`) and their renewals (`renewals.ts`), the handler calls
 * (`handler-calls.ts`), the batch path (`batch-dispatch.ts`), settles
 * (`settles.ts`) and leases given back unhandled (`releases.ts`). The Consumer
 * holds the prefetch buffer, its state, and the drain.
 */
export class Consumer extends EventEmitter<ConsumerEvents> {
  private readonly options: ResolvedGroupOptions;
  private readonly held = new Inflight();
  private readonly loop: FetchLoop;
  private readonly calls: HandlerCalls;
  private readonly settles: Settles;
  private readonly releases: Releases;
  private readonly renewals: Renewals;
  /** Batch mode only. */
  private readonly batches: BatchDispatch | null = null;
  /** Leases the fetches returned. */
  private leases = 0;
  /** No handler starts on a lease with less than this left: it would likely expire under the handler. */
  private readonly startMarginMs: number;
  private renewError: RheoError | null = null;

  private current: ConsumerState = 'idle';
  private groupPaused = false;
  /** Leases held but not yet handed to a handler: the prefetch buffer, in fetch order. */
  private readonly ready: InflightEntry[] = [];

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
    handler: ConsumerHandler | ConsumerBatchHandler,
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
        abortDelivery(entry, new RheoError('stale_lease', reason));
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
    this.loop = new FetchLoop(rheo, this.options, {
      room: () => this.room(),
      fetching: () => this.fetching,
      claimed: (leases) => this.onLeases(leases),
      failed: (error) => this.onFetchError(error),
    });
    this.calls = new HandlerCalls(rheo, this.options, handler, {
      timedOut: (leases, error) =>
        leases.length === 1 ? this.handlerError(leases[0], error) : this.handlerError(leases[0], error, leases),
      late: (leases, timeoutMs, ended) => {
        this.notify('late_result', { leases, timeoutMs, ended });
        // Calls past their timeout count against the 2 × concurrency bound: one ending may free a slot.
        this.startReady();
      },
    });
    this.settles = new Settles(rheo, this.held, {
      stopped: () => this.current === 'stopped',
      settled: (entry, outcome, result) => {
        this.loop.settled();
        if (this.listenerCount('settled') === 0) return;
        // The store's answer rides along only when it told one (never for an ack).
        if (result.outcome === undefined) this.notify('settled', { lease: entry.lease, outcome });
        else this.notify('settled', { lease: entry.lease, outcome, written: writtenOf(result) });
      },
      failed: (entry, outcome, error) => this.notify('settle_error', { lease: entry.lease, outcome, error }),
      late: (entry, outcome) => this.notify('late_settle', { lease: entry.lease, outcome }),
      letGo: () => {
        this.roomFreed();
        this.checkDrained();
      },
      idle: () => this.checkDrained(),
    });
    this.releases = new Releases(rheo, this.held, { freed: () => this.roomFreed(), answered: () => this.checkDrained() });
    if (this.options.batch) {
      this.batches = new BatchDispatch(this.options.batch, this.calls, this.settles, {
        startReady: () => this.startReady(),
        failed: (leases, error) => this.handlerError(leases[0], error, leases),
        settling: () => {
          this.roomFreed();
          this.checkDrained();
        },
      });
    }
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
    return this.calls.running;
  }

  /** Handler calls past their timeout that have not ended yet (their outcome is settled already, their result will be dropped). */
  get overdue(): number {
    return this.calls.overdue;
  }

  /** The fetch error while `backing_off`, else null. */
  get lastError(): RheoError | null {
    return this.current === 'backing_off' ? this.loop.lastError : null;
  }

  /** The last fetch found the group paused in the store (`Rheo#pauseGroup`): nothing is claimed until it resumes. */
  get paused(): boolean {
    return this.groupPaused;
  }

  /** The renewal error while renewals are failing (leases at risk of expiring under their handlers), else null. */
  get renewalError(): RheoError | null {
    return this.current === 'stopped' || !this.renewals.failing ? null : this.renewError;
  }

  /** A snapshot of the Consumer's counters. */
  get stats(): ConsumerStats {
    const { loop, settles, releases, calls } = this;
    return {
      fetches: loop.fetches,
      leases: this.leases,
      pollTimeouts: loop.pollTimeouts,
      wakeUps: loop.wakeUps,
      renewRounds: this.renewals.rounds,
      settleBatches: settles.batches,
      settled: settles.settled,
      dropped: releases.dropped,
      released: releases.released,
      lateSettles: settles.late,
      timeouts: calls.timeouts,
      lateResults: calls.lateResults,
    };
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
    this.loop.fetchNow();
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
    this.loop.stop();
    this.setState('draining');
    this.batches?.clearWait();
    this.releases.giveBack(this.ready.splice(0));
    this.drainTimer = setTimeout(() => this.finish('timeout'), timeout);
    this.checkDrained();
    return this.drainPromise;
  }

  // ------------------------------------------------------------------ fetching

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

  /** Room opened (a handler or a settle finished): the fetch loop, if it waits for room, fetches on the next turn. */
  private roomFreed(): void {
    this.loop.roomFreed();
  }

  /** A fetch answered: hold its leases and start what can start. False when the loop stops here. */
  private onLeases(leases: Lease[]): boolean {
    // Told whatever happens next: the dead letters are written already.
    const dead = deadLetteredOf(leases);
    if (dead) for (const d of dead) this.notify('dead_letter', { ...d });
    const paused = isPausedAnswer(leases);
    if (paused !== this.groupPaused) {
      this.groupPaused = paused;
      this.notify('paused', paused);
    }
    if (this.current === 'stopped') return false; // the drain timed out meanwhile: these expire and are redelivered
    this.leases += leases.length;
    if (this.loop.recover()) {
      if (this.current === 'backing_off') this.setState('running');
      this.notify('recovered');
    }
    if (!this.fetching) {
      // Fetched while a drain began: nobody will handle them here, so give them back now.
      this.releases.giveBack(leases.map((lease) => this.held.add(lease)));
      this.checkDrained();
      return false;
    }
    for (const lease of leases) this.ready.push(this.held.add(lease));
    this.startReady();
    return true;
  }

  private onFetchError(error: RheoError): void {
    if (this.current === 'stopped') return;
    if (!this.fetching) {
      this.notify('fetch_error', error);
      this.checkDrained();
      return;
    }
    if (channels.fetchError.hasSubscribers) {
      const { stream, group, consumerId } = this.options;
      channels.fetchError.publish({ stream, group, consumerId, code: error.code, reason: error.message });
    }
    this.setState('backing_off');
    this.notify('fetch_error', error);
  }

  // ------------------------------------------------------------------ the prefetch buffer

  /**
   * Hand buffered leases to free handlers, in fetch order. A lease lost while it
   * waited is skipped; one that expired, or has less than the start margin left,
   * is dropped and given back: starting it would handle an event that is (or is
   * about to be) somebody else's.
   */
  private startReady(): void {
    if (!this.fetching) return;
    const now = this.rheo.backend.clock.now();
    if (this.batches) {
      // Lost and expiring leases are taken out first, as for single handlers.
      const expiring: InflightEntry[] = [];
      let live = 0;
      for (const entry of this.ready) {
        if (!this.held.holds(entry)) continue;
        if (this.tooLateToStart(entry, now)) expiring.push(entry);
        else this.ready[live++] = entry;
      }
      this.ready.length = live;
      if (expiring.length > 0) this.releases.drop(expiring);
      return this.batches.start(this.ready);
    }
    let expiring: InflightEntry[] | null = null;
    while (this.calls.canStart() && this.ready.length > 0) {
      const entry = this.ready.shift()!;
      if (!this.held.holds(entry)) continue;
      if (this.tooLateToStart(entry, now)) (expiring ??= []).push(entry);
      else this.handle(entry);
    }
    if (expiring) this.releases.drop(expiring);
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
      this.releases.drop(expiring);
    }
    for (const entry of this.held.all()) {
      if (entry.expiresAt > now || !isBeingHandled(entry)) continue;
      const reason = `lease on event ${entry.lease.event.id} expired: renewals failed, another consumer may hold it now`;
      abortDelivery(entry, new RheoError('stale_lease', reason));
      if (channels.leaseExpired.hasSubscribers) channels.leaseExpired.publish({ ...deliveryOf(entry.lease), reason });
    }
  }

  // ------------------------------------------------------------------ one handler per lease

  private handle(entry: InflightEntry): void {
    this.calls.single(entry).then(
      (value) => this.onHandled(entry, value),
      (err: unknown) => this.onHandlerThrew(entry, err),
    );
  }

  private onHandled(entry: InflightEntry, value: unknown): void {
    this.calls.ended();
    this.startReady();
    if (value === SETTLED_BY_HANDLER) {
      this.settles.settledByHandler(entry);
      this.roomFreed();
      this.checkDrained();
      return;
    }
    // A transactional ack that did not certainly commit: that ack's failed settle (lost, unknown).
    const ackError = ackFailureOf(value);
    if (ackError) {
      this.settles.ackFailed(entry, ackError);
      this.roomFreed();
      this.checkDrained();
      return;
    }
    const outcome = outcomeOfValue(value);
    if (outcome instanceof RheoError) {
      this.handlerError(entry.lease, outcome);
      this.settles.settle(entry, { kind: 'nack', reason: outcome.message });
    } else {
      this.settles.settle(entry, outcome);
    }
    this.roomFreed();
    this.checkDrained();
  }

  private onHandlerThrew(entry: InflightEntry, err: unknown): void {
    this.calls.ended();
    this.startReady();
    // RheoReject and RheoRetry are the handler's decisions, not failures.
    if (!(err instanceof RheoReject) && !(err instanceof RheoRetry)) this.handlerError(entry.lease, err);
    this.settles.settle(entry, bounded(outcomeOfError(err)));
    this.roomFreed();
    this.checkDrained();
  }

  /** A handler call failed: told on `rheo:handler_error` per lease, then as one `handler_error` (with `leases` for a batch). */
  private handlerError(lease: Lease, error: unknown, leases?: readonly Lease[]): void {
    if (channels.handlerError.hasSubscribers) {
      const reason = error instanceof Error ? error.message : String(error);
      for (const l of leases ?? [lease]) channels.handlerError.publish({ ...deliveryOf(l), reason, error });
    }
    this.notify('handler_error', leases ? { lease, leases, error } : { lease, error });
  }

  // ------------------------------------------------------------------ drain and state

  private checkDrained(): void {
    if (this.current !== 'draining') return;
    if (this.calls.running === 0 && this.held.size === 0 && !this.loop.inFlight && this.settles.idle && this.releases.idle)
      this.finish('drained');
  }

  private finish(result: DrainResult): void {
    if (this.current === 'stopped') return;
    if (this.drainTimer) clearTimeout(this.drainTimer);
    this.drainTimer = null;
    this.renewals.stop();
    this.loop.stop();
    this.batches?.clearWait();
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

/** The fields of a settle result that tell what the store wrote, those it set only. */
function writtenOf(result: SettleWritten): SettleWritten {
  const written: SettleWritten = { outcome: result.outcome };
  if (result.maxAttempts !== undefined) written.maxAttempts = result.maxAttempts;
  if (result.delayMs !== undefined) written.delayMs = result.delayMs;
  return written;
}
