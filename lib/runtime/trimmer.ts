import { toRheoError, type RheoError } from '../core/errors';
import { newId } from '../core/ids';
import type { Rheo } from '../core/rheo';
import type { TrimResult } from '../core/types';
import { checkKeys, checkObject, keySet } from '../core/validate';

/** The job name of the background trim in `claimTurn`: one per store (schema, key prefix, process). */
export const TRIM_JOB = 'rheo:trim';

/** What a {@link Trimmer} reports; every callback is optional and must not throw. */
export interface TrimmerEvents {
  /** A stream was trimmed (also when nothing was removed). */
  trimmed?(result: TrimResult): void;
  /** Dead letters older than the stream's `deadLetterMaxAgeMs` were purged from a group. */
  purged?(stream: string, group: string, count: number): void;
  /** A round failed for a stream (or before reaching one); the next round tries again. */
  error?(error: RheoError, stream: string | null): void;
}

/** Options of a {@link Trimmer}. */
export interface TrimmerOptions {
  /** Time between two rounds, ms. */
  intervalMs: number;
  /** This process's name in the turn; default a new random id. */
  holder?: string;
  events?: TrimmerEvents;
}

const OPTION_KEYS = keySet('a Trimmer option', ['intervalMs', 'holder', 'events']);
const EVENT_KEYS = keySet('a Trimmer event', ['trimmed', 'purged', 'error']);

/** What one round did: whether this process had the turn, and what it trimmed and purged. */
export interface TrimRound {
  ran: boolean;
  trims: TrimResult[];
  purged: number;
}

/**
 * The background retention job: every `intervalMs`, the process that holds the
 * store's trim turn (`claimTurn`, so one process at a time does the work and
 * another takes over within two intervals if it dies) trims every stream that has
 * a retention and purges dead letters past `deadLetterMaxAgeMs`. A trim works in
 * chunks (see Backend.trim), so it never holds claims up; it never forces, so it
 * only removes what every group has finished.
 */
export class Trimmer {
  private readonly holder: string;
  private timer?: NodeJS.Timeout;
  private round?: Promise<TrimRound>;
  private stopped = false;

  constructor(
    private readonly rheo: Rheo,
    private readonly options: TrimmerOptions,
  ) {
    checkKeys('options', checkObject('options', options), OPTION_KEYS);
    if (options.events !== undefined) checkKeys('events', checkObject('events', options.events), EVENT_KEYS);
    this.holder = options.holder ?? newId();
  }

  /** Run a first round at once, then one every interval. Idempotent. */
  start(): void {
    if (this.timer || this.stopped) return;
    const tick = () => {
      this.timer = setTimeout(() => void this.runOnce().finally(() => !this.stopped && tick()), this.options.intervalMs);
      // A timer of ours never keeps the process alive on its own.
      this.timer.unref();
    };
    void this.runOnce().finally(() => !this.stopped && tick());
  }

  /** Stop scheduling rounds. A round in progress finishes its current backend call; its errors are no longer reported. */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  /** One round now (waits for a round already running instead of starting a second). */
  runOnce(): Promise<TrimRound> {
    this.round ??= this.work().finally(() => (this.round = undefined));
    return this.round;
  }

  private async work(): Promise<TrimRound> {
    const round: TrimRound = { ran: false, trims: [], purged: 0 };
    const rheo = this.rheo;
    try {
      // The turn outlives two intervals, so a holder that keeps running keeps it, and one that died frees it soon.
      if (!(await rheo.backend.claimTurn(TRIM_JOB, this.holder, this.options.intervalMs * 2))) return round;
      round.ran = true;
      for (const info of await rheo.listStreams()) {
        if (this.stopped) break;
        const retention = info.retention;
        if (!retention) continue;
        try {
          if (retention.maxAgeMs !== undefined || retention.maxEvents !== undefined) {
            const result = await rheo.trim(info.name);
            round.trims.push(result);
            this.report((e) => e.trimmed?.(result));
          }
          if (retention.deadLetterMaxAgeMs !== undefined) {
            const before = new Date(rheo.backend.clock.now() - retention.deadLetterMaxAgeMs);
            for (const g of await rheo.listGroups(info.name)) {
              const n = await rheo.purgeDeadLetters(info.name, g.group, { before });
              round.purged += n;
              if (n > 0) this.report((e) => e.purged?.(info.name, g.group, n));
            }
          }
        } catch (err) {
          this.report((e) => e.error?.(toRheoError(err), info.name));
        }
      }
    } catch (err) {
      this.report((e) => e.error?.(toRheoError(err), null));
    }
    return round;
  }

  private report(call: (events: TrimmerEvents) => void): void {
    if (this.stopped || !this.options.events) return;
    try {
      call(this.options.events);
    } catch {
      // A listener's failure is not the trim's.
    }
  }
}
