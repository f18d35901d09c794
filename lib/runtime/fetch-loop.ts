import { backoffDelay } from '../core/backoff';
import { type RheoError, toRheoError } from '../core/errors';
import { heldOf, isPausedAnswer } from '../core/fetched';
import { MAX_FETCH_LIMIT } from '../core/limits';
import type { Rheo } from '../core/rheo';
import type { Lease } from '../core/types';
import { FETCH_BACKOFF, type ResolvedGroupOptions } from './options';

/** Spurious wake-ups (a hint followed by an empty fetch) tolerated per poll interval before the hint is ignored for one round. */
const MAX_EMPTY_WAKE_UPS = 3;

/**
 * Where the fetch loop is. `full`: no room, the next handler or settle to finish
 * kicks it. `waiting`: the last fetch found nothing, waiting for a wake-up or the
 * poll timer. `backoff`: waiting for the backoff timer after a fetch error.
 */
type LoopPhase = 'off' | 'fetching' | 'full' | 'waiting' | 'backoff';

/** What the fetch loop asks of its Consumer, and tells it. */
export interface FetchLoopHooks {
  /** How many leases to fetch now; 0 or less: no room, wait until {@link FetchLoop.roomFreed}. */
  room(): number;
  /** True while the Consumer fetches (running or backing off): a loop that is not fetching only answers what is on its way. */
  fetching(): boolean;
  /**
   * A fetch answered. The Consumer takes the leases (or gives them back when it no
   * longer fetches); true when the loop goes on: it fetches again, or waits for
   * work when `leases` is empty.
   */
  claimed(leases: Lease[]): boolean;
  /**
   * A fetch failed. While fetching, the failure is counted ({@link FetchLoop.lastError})
   * before this is called, and the loop backs off after it.
   */
  failed(error: RheoError): void;
}

/**
 * The Consumer's fetch loop: one fetch at a time, sized by the room the Consumer
 * has; when a fetch finds nothing, a wait for the backend's wake-up hint or the
 * poll timer, whichever first; after a fetch error, a wait on the fetch backoff.
 * Wake-ups are hints (docs/adr/006): the poll timer stays authoritative, and a
 * hint that keeps finding nothing is ignored for a round.
 */
export class FetchLoop {
  private phase: LoopPhase = 'off';
  private kickScheduled = false;
  /** The one poll timer: the wait for work or the fetch backoff, never both. */
  private pollTimer: NodeJS.Timeout | null = null;
  private wakeAbort: AbortController | null = null;
  private emptyWakeUps = 0;
  private failures = 0;
  private error: RheoError | null = null;
  /** Fetch calls made. */
  fetches = 0;
  /** Idle waits ended by the poll timer. */
  pollTimeouts = 0;
  /** Idle waits ended by the backend's wake-up hint. */
  wakeUps = 0;

  constructor(
    private readonly rheo: Rheo,
    private readonly options: ResolvedGroupOptions,
    private readonly hooks: FetchLoopHooks,
  ) {}

  /** A fetch is on its way (a drain waits for its answer). */
  get inFlight(): boolean {
    return this.phase === 'fetching';
  }

  /** The error of the last fetch while fetches keep failing, else null. */
  get lastError(): RheoError | null {
    return this.error;
  }

  /** `byWake`: this fetch answers a wake-up hint (an empty answer makes the hint spurious). */
  fetchNow(byWake = false): void {
    const room = this.hooks.room();
    if (room <= 0) {
      this.phase = 'full';
      return;
    }
    this.phase = 'fetching';
    this.fetches++;
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
  roomFreed(): void {
    if (this.phase !== 'full' || this.kickScheduled) return;
    this.kickScheduled = true;
    setImmediate(() => {
      this.kickScheduled = false;
      if (this.phase === 'full' && this.hooks.fetching()) this.fetchNow();
    });
  }

  /**
   * A settle succeeded. It can make work available that no wake-up announces (the
   * next event of a partition-ordered group, a nack without delay): look once more.
   */
  settled(): void {
    if (this.phase === 'waiting' && this.hooks.fetching()) this.endWait('settle');
  }

  /** A fetch answered after failures: forget them; true when there were any (the Consumer has recovered). */
  recover(): boolean {
    if (this.failures === 0) return false;
    this.failures = 0;
    this.error = null;
    return true;
  }

  /** No more fetches start; a fetch on its way still answers (to `claimed` or `failed`). */
  stop(): void {
    this.clearWait();
    if (this.phase !== 'fetching') this.phase = 'off';
    this.error = null;
  }

  private onLeases(leases: Lease[], byWake: boolean): void {
    this.phase = 'off';
    if (!this.hooks.claimed(leases)) return;
    if (leases.length === 0) {
      // A paused group's answers are empty by design, and so are those a flow limit held back (another
      // process took the place a settle freed): the wake-up that frees it must not be ignored.
      const held = heldOf(leases);
      if (byWake && !isPausedAnswer(leases) && held === undefined) this.emptyWakeUps++;
      // A rate limit that allows no start says when one may start: a wait for that, not for hints that
      // would only find it full again (docs/adr/049-flow-control.md).
      if (held?.limit === 'rate_limit' && held.retryInMs !== undefined) this.waitForRate(held.retryInMs);
      else this.waitForWork();
    } else {
      this.emptyWakeUps = 0;
      this.fetchNow();
    }
  }

  private onFetchError(err: unknown): void {
    this.phase = 'off';
    const error = toRheoError(err);
    const backOff = this.hooks.fetching();
    if (backOff) {
      this.failures++;
      this.error = error;
    }
    this.hooks.failed(error);
    if (!backOff) return;
    this.phase = 'backoff';
    this.pollTimer = setTimeout(
      () => {
        this.pollTimer = null;
        if (this.phase === 'backoff' && this.hooks.fetching()) this.fetchNow();
      },
      backoffDelay(FETCH_BACKOFF, this.failures),
    );
  }

  /** The group's rate limit allows no start for `retryInMs` (by the store's clock): wait that long, at most a poll interval. */
  private waitForRate(retryInMs: number): void {
    this.phase = 'waiting';
    this.pollTimer = setTimeout(() => this.endWait('poll'), Math.min(this.options.pollMs, Math.max(1, retryInMs)));
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
    if (by === 'wake') this.wakeUps++;
    else if (by === 'poll') {
      this.pollTimeouts++;
      this.emptyWakeUps = 0;
    }
    if (this.hooks.fetching()) this.fetchNow(by === 'wake');
  }

  private clearWait(): void {
    if (this.pollTimer) clearTimeout(this.pollTimer);
    this.pollTimer = null;
    const abort = this.wakeAbort;
    this.wakeAbort = null;
    abort?.abort();
  }
}
