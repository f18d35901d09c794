import { channels, type ClockSkewMessage } from './diagnostics';
import { RheoError } from './errors';
import { checkKeys, keySet } from './validate';

/**
 * Where nestjs-rheo reads the time: event timestamps, lease expiry, retry delays.
 * Backends take one so that tests can expire leases without sleeping.
 */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
}

/** The wall clock. */
export const systemClock: Clock = { now: () => Date.now() };

/** A clock that only moves when told to; for tests. */
export class ManualClock implements Clock {
  private current: number;

  constructor(start: number | Date = Date.UTC(2026, 0, 1)) {
    this.current = typeof start === 'number' ? start : start.getTime();
  }

  now(): number {
    return this.current;
  }

  /** Move the clock to `to`. */
  set(to: number | Date): void {
    this.current = typeof to === 'number' ? to : to.getTime();
  }

  /** Move the clock forward by `ms`. */
  advance(ms: number): void {
    this.current += ms;
  }
}

/** Options of {@link storeClock}. */
export interface StoreClockOptions {
  /**
   * How often the offset is measured again in the background, ms (an unref'd timer, never on an operation's path).
   * `0`: measured once, when the backend starts. Default 10,000.
   */
  refreshMs?: number;
}

/** Reads the store's current time, ms since the Unix epoch (a backend's `SELECT clock_timestamp()`, Redis `TIME`). */
export type StoreTimeReader = () => Promise<number>;

/**
 * An offset beyond this (either way), less the measurement's own error, is reported: the
 * corrected clock is right, but the process's own clock (its logs, a `deliverAt` computed
 * from `Date.now()`) is not. A thirtieth of the default lease, a tenth of a 10 s one.
 */
export const CLOCK_SKEW_WARN_MS = 1000;

/** Round trips per measurement: the one with the shortest round trip is kept (the tightest bound). */
const SAMPLES = 3;
const DEFAULT_REFRESH_MS = 10_000;
const STORE_CLOCK_KEYS = keySet('a storeClock option', ['refreshMs']);
const MAX_REFRESH_MS = 24 * 3600 * 1000;

/**
 * The store's time, read from this process: `base.now()` plus an offset measured against the
 * store the backend talks to (the midpoint of a round trip that reads the store's clock), taken
 * when the backend starts and refreshed in the background. `now()` is one addition: no round trip.
 * PostgreSQL and Redis backends use one by default (ADR 041); give `storeClock(base)` as a backend's
 * `clock` to correct a clock of your own (a skewed test clock); any other clock is used as it is.
 */
export class StoreClock implements Clock {
  readonly base: Clock;
  readonly refreshMs: number;
  private offset = 0;
  private error = Number.POSITIVE_INFINITY;
  private readers: Array<{ backend: string; read: StoreTimeReader }> = [];
  private timer?: ReturnType<typeof setInterval>;
  private warned = false;
  private skewed = false;

  constructor(base: Clock = systemClock, options: StoreClockOptions = {}) {
    checkClock('storeClock.base', base);
    if (typeof options !== 'object' || options === null) throw invalid('options', 'must be an object');
    checkKeys('storeClock.options', options, STORE_CLOCK_KEYS);
    const refreshMs = options.refreshMs ?? DEFAULT_REFRESH_MS;
    if (!Number.isSafeInteger(refreshMs) || refreshMs < 0 || refreshMs > MAX_REFRESH_MS)
      throw invalid('options.refreshMs', `must be a whole number of ms from 0 to ${MAX_REFRESH_MS}`);
    this.base = base;
    this.refreshMs = refreshMs;
  }

  now(): number {
    return this.base.now() + this.offset;
  }

  /** Store time minus the base clock, ms, as last measured (0 before the first measurement). */
  get offsetMs(): number {
    return this.offset;
  }

  /** Half the round trip of the last measurement kept, ms: how far `now()` may be from the store's time. Infinity before one. */
  get errorMs(): number {
    return this.error;
  }

  /** The skew warning, while the last measurement found the base clock beyond {@link CLOCK_SKEW_WARN_MS} from the store's. */
  warning(): string | undefined {
    if (!this.skewed) return undefined;
    const s = Math.round(Math.abs(this.offset));
    return `this process's clock is ${s} ms ${this.offset < 0 ? 'ahead of' : 'behind'} the store's (measured within ${Math.ceil(this.error)} ms): leases, retries and delays run on the store's time, but this process's own timestamps (logs, Date.now()) are off; fix its time sync (NTP)`;
  }

  /**
   * Called by a backend as it starts: measure against `read` now (the start fails if the store
   * cannot be read), then keep measuring every `refreshMs` while any backend is attached. Returns
   * the detach to call on close. A refresh that fails keeps the last offset: it never fails an
   * operation.
   */
  async attach(backend: string, read: StoreTimeReader): Promise<() => void> {
    const entry = { backend, read };
    await this.measure(entry);
    this.readers.push(entry);
    if (this.refreshMs > 0 && !this.timer) {
      this.timer = setInterval(() => {
        const live = this.readers[0];
        if (live) this.measure(live).catch(() => undefined);
      }, this.refreshMs);
      this.timer.unref?.();
    }
    return () => {
      this.readers = this.readers.filter((r) => r !== entry);
      if (this.readers.length === 0 && this.timer) {
        clearInterval(this.timer);
        this.timer = undefined;
      }
    };
  }

  /** Measure the offset again now, through the first attached backend (what the background refresh runs). */
  async sync(): Promise<void> {
    const live = this.readers[0];
    if (!live) throw new RheoError('failed', 'this store clock is not attached to a started backend');
    await this.measure(live);
  }

  private async measure(entry: { backend: string; read: StoreTimeReader }): Promise<void> {
    let best: { offset: number; error: number } | undefined;
    for (let i = 0; i < SAMPLES; i++) {
      const t0 = this.base.now();
      const store = await entry.read();
      const t1 = this.base.now();
      if (!Number.isFinite(store)) throw new RheoError('failed', `${entry.backend}: the store's time read back as ${String(store)}`);
      const sample = { offset: store - (t0 + t1) / 2, error: Math.max(0, t1 - t0) / 2 };
      if (!best || sample.error < best.error) best = sample;
    }
    this.offset = Math.round(best!.offset);
    this.error = best!.error;
    this.skewed = Math.abs(this.offset) - this.error > CLOCK_SKEW_WARN_MS;
    if (!this.skewed) return;
    const message: ClockSkewMessage = {
      backend: entry.backend,
      offsetMs: this.offset,
      errorMs: this.error,
      thresholdMs: CLOCK_SKEW_WARN_MS,
    };
    if (channels.clockSkew.hasSubscribers) channels.clockSkew.publish(message);
    if (!this.warned) {
      this.warned = true;
      process.emitWarning(`nestjs-rheo ${entry.backend} backend: ${this.warning()}`, { type: 'RheoWarning', code: 'RHEO_CLOCK_SKEW' });
    }
  }
}

/** A {@link StoreClock} over `base` (default the system clock): give it as a backend's `clock`. */
export function storeClock(base?: Clock, options?: StoreClockOptions): StoreClock {
  return new StoreClock(base, options);
}

/** `value` as a Clock, or a RheoError on `field`: the one check of every `clock` option. */
export function checkClock(field: string, value: unknown): Clock {
  if (typeof value !== 'object' || value === null || typeof (value as Clock).now !== 'function')
    throw RheoError.invalid(field, 'must be a Clock ({ now(): number })');
  return value as Clock;
}

function invalid(field: string, message: string): RheoError {
  return RheoError.invalid(`storeClock.${field}`, message);
}
