import { toRheoError } from '../core/errors';
import type { Rheo, SettleRequest } from '../core/rheo';

/** Per-settle result, as the facade's bulk call reports it. */
export type SettleResult = Awaited<ReturnType<Rheo['settleMany']>>[number];

/** One settle and who waits for its result. */
export interface Pending {
  request: SettleRequest;
  done: (result: SettleResult) => void;
}

/**
 * Coalesces settles that complete close together into one `settleMany` call.
 *
 * Settles queued in the same turn of the event loop go out together on the next
 * `setImmediate`; while a call is in flight, new settles wait for it and leave
 * as the next batch (so a slow store gets bigger batches, not more round trips).
 * A batch that fills to `maxBatch` leaves at once. A batch handler's settles
 * leave together in a call of their own ({@link settleAll}). Results come back per settle;
 * a call that fails as a whole fails each of its settles with that error.
 */
export class SettleBatcher {
  private pending: Pending[] = [];
  private inFlight = 0;
  private scheduled = false;

  /** How many settle calls went out. */
  batches = 0;

  /** `onIdle` runs whenever the batcher has nothing queued or in flight. */
  constructor(
    private readonly send: (requests: SettleRequest[]) => Promise<SettleResult[]>,
    private readonly maxBatch: number,
    private readonly onIdle: () => void,
  ) {}

  /** Nothing queued and nothing in flight. */
  get idle(): boolean {
    return this.pending.length === 0 && this.inFlight === 0;
  }

  /** Queue one settle; `done` is called exactly once with its result, never throws back. */
  settle(request: SettleRequest, done: (result: SettleResult) => void): void {
    this.pending.push({ request, done });
    if (this.pending.length >= this.maxBatch) this.flush();
    else if (this.inFlight === 0 && !this.scheduled) {
      this.scheduled = true;
      setImmediate(this.onTick);
    }
  }

  /**
   * Send settles that belong together (one batch handler's) in one call of
   * their own, now: never split, never merged with other settles. Must not
   * exceed `maxBatch`.
   */
  settleAll(items: ReadonlyArray<Pending>): void {
    if (items.length > 0) this.dispatch([...items]);
  }

  private readonly onTick = (): void => {
    this.scheduled = false;
    if (this.inFlight === 0) this.flush();
  };

  private flush(): void {
    if (this.pending.length === 0) return;
    const batch = this.pending.length <= this.maxBatch ? this.pending : this.pending.slice(0, this.maxBatch);
    this.pending = batch === this.pending ? [] : this.pending.slice(this.maxBatch);
    this.dispatch(batch);
  }

  private dispatch(batch: Pending[]): void {
    this.inFlight++;
    this.batches++;
    let call: Promise<SettleResult[]>;
    try {
      call = this.send(batch.map((p) => p.request));
    } catch (err) {
      call = Promise.reject(err);
    }
    call.then(
      (results) =>
        this.finish(
          batch,
          (i) => results[i] ?? { ok: false, error: toRheoError(new Error('the backend returned no result for this settle'), 'ambiguous') },
        ),
      (err: unknown) => {
        const error = toRheoError(err);
        this.finish(batch, () => ({ ok: false, error }));
      },
    );
  }

  private finish(batch: Pending[], resultOf: (i: number) => SettleResult): void {
    this.inFlight--;
    for (let i = 0; i < batch.length; i++) batch[i].done(resultOf(i));
    if (this.inFlight === 0 && this.pending.length > 0) this.flush();
    if (this.idle) this.onIdle();
  }
}
