import { RheoError } from '../core/errors';
import { type Outcome, outcomeOfError, RheoReject, RheoRetry } from '../core/outcomes';
import type { Lease } from '../core/types';
import { BatchRun } from './batch-run';
import { bounded, outcomeOfValue, SETTLED_BY_HANDLER } from './handler-result';
import type { HandlerCalls } from './handler-calls';
import type { InflightEntry } from './inflight';
import type { BatchOptions } from './options';
import type { Settles } from './settles';

/** What the batch path tells its Consumer. */
export interface BatchDispatchHooks {
  /** Hand the ready leases to free handlers: the batch wait ran out, or a call ended and freed its slot. */
  startReady(): void;
  /** A batch call failed (threw, or resolved with something that is no outcome): report it for every lease. */
  failed(leases: readonly Lease[], error: unknown): void;
  /** A batch's settles are on their way: room may be free, a drain may be done. */
  settling(): void;
}

/**
 * The batch path of a Consumer with `batch`: gathers ready leases into batches of
 * `batch.size` (or what there is once they have waited `maxWaitMs`), makes one
 * handler call per batch, and settles every lease of it in one settle call, each
 * by its own outcome, else by what the call as a whole came to (docs/adr/029).
 */
export class BatchDispatch {
  /** The ready leases have waited `maxWaitMs`: the next batch runs with what there is. */
  private due = false;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly batch: BatchOptions,
    private readonly calls: HandlerCalls,
    private readonly settles: Settles,
    private readonly hooks: BatchDispatchHooks,
  ) {}

  /**
   * Start a batch per free slot once `size` leases wait, or once they have waited
   * `maxWaitMs`. `ready` holds live leases only, in fetch order; the batches
   * started are taken from it.
   */
  start(ready: InflightEntry[]): void {
    const { size, maxWaitMs } = this.batch;
    while (this.calls.canStart() && ready.length > 0 && (ready.length >= size || this.due || maxWaitMs === 0)) {
      this.due = false;
      this.clearWait();
      this.run(ready.splice(0, size));
    }
    if (ready.length > 0 && !this.due && !this.timer) {
      this.timer = setTimeout(() => {
        this.timer = null;
        this.due = true;
        this.hooks.startReady();
      }, maxWaitMs);
    }
  }

  /** No batch waits for `maxWaitMs` any more (a drain gave the buffer back). */
  clearWait(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  /** One batch handler call on `entries` (at most `batch.size`). */
  private run(entries: InflightEntry[]): void {
    const run = new BatchRun(entries.map((e) => e.lease));
    for (const entry of entries) entry.batch = run;
    this.calls.batch(run).then(
      (value) => this.ended(entries, run, value, false),
      (err: unknown) => this.ended(entries, run, err, true),
    );
  }

  /** A batch call ended (`threw`: `value` is what it threw): settle each lease by its own outcome, else the call's. */
  private ended(entries: InflightEntry[], run: BatchRun, value: unknown, threw: boolean): void {
    this.calls.ended();
    run.close();
    this.hooks.startReady();
    let fallback: Outcome;
    if (threw) {
      // RheoReject and RheoRetry are the handler's decisions, not failures.
      if (!(value instanceof RheoReject) && !(value instanceof RheoRetry)) this.hooks.failed(run.leases, value);
      fallback = bounded(outcomeOfError(value));
    } else if (value === SETTLED_BY_HANDLER) {
      for (const entry of entries) this.settles.settledByHandler(entry);
      this.hooks.settling();
      return;
    } else {
      const outcome = outcomeOfValue(value);
      if (outcome instanceof RheoError) this.hooks.failed(run.leases, outcome);
      fallback = outcome instanceof RheoError ? { kind: 'nack', reason: outcome.message } : outcome;
    }
    this.settles.settleAll(entries, (i) => run.outcomeOf(i, fallback));
    this.hooks.settling();
  }
}
