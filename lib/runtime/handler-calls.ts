import { deliveryOf, processChannel, type ProcessMessage, traceWith } from '../core/diagnostics';
import { RheoError } from '../core/errors';
import { type Outcome, outcomeOfError, RheoReject, RheoRetry } from '../core/outcomes';
import { tracing } from '../core/otel-api';
import type { Rheo } from '../core/rheo';
import type { Lease } from '../core/types';
import type { BatchRun } from './batch-run';
import type { ConsumerBatchHandler, ConsumerHandler } from './consumer-types';
import { LazyDeliveryControl } from './delivery-control';
import { bounded } from './handler-result';
import { timeoutOutcome, withTimeout } from './handler-timeout';
import type { InflightEntry } from './inflight';
import type { ResolvedGroupOptions } from './options';
import { processSpan } from './process-span';
import { outcomeOfRun, runTransactional } from './transactional';

/** What a handler call's timeout tells the Consumer. */
export interface HandlerCallHooks {
  /** The call's timeout fired: its signal is aborted, its outcome is the timeout's. */
  timedOut(leases: readonly Lease[], error: RheoError): void;
  /** A call past its timeout ended: its result is dropped, and a slot of the `2 × concurrency` bound is free. */
  late(leases: readonly Lease[], timeoutMs: number, ended: 'resolved' | 'threw'): void;
}

/**
 * The Consumer's handler calls: how many run, whether another may start, and one
 * call made inside what observes or bounds it (its process span, `rheo:process`,
 * a transaction, a timeout). Every call resolves or rejects, never throws: its
 * result is the Consumer's to settle.
 */
export class HandlerCalls {
  /** Calls running now (a batch is one call), not counting those past their timeout. */
  running = 0;
  /**
   * Calls past their timeout that have not ended yet. Their outcome is decided
   * and their slot given back, but they still run: they count against a second
   * `concurrency` of room, so calls that ignore their signal can never pile up
   * beyond `2 × concurrency` (docs/adr/029).
   */
  overdue = 0;
  /** Calls whose outcome was decided by `timeoutMs`. */
  timeouts = 0;
  /** Calls that ended after their timeout. */
  lateResults = 0;

  constructor(
    private readonly rheo: Rheo,
    private readonly options: ResolvedGroupOptions,
    private readonly handler: ConsumerHandler | ConsumerBatchHandler,
    private readonly hooks: HandlerCallHooks,
  ) {}

  /** A free slot: fewer than `concurrency` calls running, and fewer than `2 × concurrency` alive counting those past their timeout. */
  canStart(): boolean {
    const c = this.options.concurrency;
    return this.running < c && this.running + this.overdue < 2 * c;
  }

  /** A call's result came back (or its timeout decided it): its slot is free. */
  ended(): void {
    this.running--;
  }

  /** One handler call on `entry`'s lease, with a signal of its own. */
  single(entry: InflightEntry): Promise<Outcome | void> {
    const lease = entry.lease;
    this.running++;
    const control = new LazyDeliveryControl();
    entry.control = control;
    // The common case, with no one observing: the bare call, without the closures the wrappers take.
    const bare =
      !this.options.transactional && this.options.timeoutMs === undefined && !processChannel.hasSubscribers && tracing() === undefined;
    return bare ? settledCall(() => (this.handler as ConsumerHandler)(lease, control)) : this.wrapped(lease, control, entry);
  }

  /** One batch handler call on the leases of `run`. */
  batch(run: BatchRun): Promise<Outcome | void> {
    this.running++;
    const call = settledCall(() => (this.handler as ConsumerBatchHandler)(run.leases, run));
    return this.options.timeoutMs === undefined ? call : this.bounded(call, run.control, run.leases);
  }

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
    return processChannel.hasSubscribers ? traceProcess(lease, invoke) : invoke();
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
        this.timeouts++;
        this.overdue++;
        control.abort(error);
        this.hooks.timedOut(leases, error);
      },
      late: (ended) => {
        this.overdue--;
        this.lateResults++;
        this.hooks.late(leases, timeoutMs, ended);
      },
    });
  }
}

/** The handler run on `rheo:process`, its outcome set before `asyncEnd`. */
function traceProcess(lease: Lease, invoke: () => Promise<Outcome | void>): Promise<Outcome | void> {
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
