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
