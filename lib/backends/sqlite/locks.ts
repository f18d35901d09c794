// How the SQLite backend waits for a lock another connection holds (ADR 015).
//
// better-sqlite3 is synchronous, and so is SQLite's own busy handler: with a busy
// timeout of 5 s, a statement that finds the database locked sleeps up to 5 s ON
// THE EVENT LOOP (no timer, no I/O, no other request runs meanwhile). So SQLite's
// own wait is kept to a few milliseconds, long enough to absorb the short
// transactions of another process, and the rest of the wait happens here, between
// attempts, on timers: the loop keeps running while we wait.
import { performance } from 'node:perf_hooks';
import { RheoError } from '../../core/errors';
import { checkInt } from '../../core/validate';
import { mapDriverError, StatementKind } from '../sql/errors';

/** SQLite's own (synchronous) wait for a lock in each attempt. */
export const SQLITE_BUSY_TIMEOUT_MS = 5;
/** Default bound on the whole wait for one lock: what the busy timeout allowed before (5 s). */
export const DEFAULT_LOCK_TIMEOUT_MS = 5000;
/** Largest accepted `lockTimeoutMs`. */
export const MAX_LOCK_TIMEOUT_MS = 600_000;

/** Check a `lockTimeoutMs` option (default {@link DEFAULT_LOCK_TIMEOUT_MS}). */
export function checkLockTimeout(field: string, value: unknown): number {
  return value === undefined ? DEFAULT_LOCK_TIMEOUT_MS : checkInt(field, value, 0, MAX_LOCK_TIMEOUT_MS);
}

/**
 * Pause between attempts: doubles from the first to the largest, with jitter so
 * that waiting processes do not retry in step. Retries are non-blocking probes
 * (microseconds, see LockWaiter), so they can be frequent: a waiter gets the lock
 * within about 20 ms of its release.
 */
const BACKOFF_FIRST_MS = 1;
const BACKOFF_MAX_MS = 20;

/**
 * True when an attempt failed only because another connection holds a lock:
 * SQLITE_BUSY, SQLITE_LOCKED and their extended codes (BUSY_RECOVERY, BUSY_TIMEOUT,
 * LOCKED_SHAREDCACHE...). Not SQLITE_BUSY_SNAPSHOT: a read transaction whose
 * snapshot went stale can never be upgraded to write, so waiting cannot help.
 */
export function isLockBusy(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== 'string' || code === 'SQLITE_BUSY_SNAPSHOT') return false;
  return code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED' || code.startsWith('SQLITE_BUSY_') || code.startsWith('SQLITE_LOCKED_');
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Runs an attempt (a synchronous statement or transaction) until it gets its
 * lock, for at most `lockTimeoutMs` in all, then fails with `backend_unavailable`
 * naming the lock. Any other failure is mapped at once. The first attempt runs
 * synchronously, so an uncontended call costs nothing extra. The attempt must be
 * repeatable: a failed one has rolled back (better-sqlite3's transactions do) and
 * must leave nothing behind in memory either.
 *
 * The attempt is told which busy timeout to run with. SQLite's few milliseconds
 * only while no operation of this process is already waiting for the lock (then
 * the lock is most likely another process's short transaction); once one waits,
 * every attempt, its own retries included, is a non-blocking probe (0). Otherwise
 * ten operations meeting the same lock would sleep their few milliseconds one
 * after the other on the loop (measured: a 66 ms stall for ten).
 */
export class LockWaiter {
  /** Operations of this backend waiting for a lock right now. */
  private waiting = 0;

  constructor(
    private readonly lockTimeoutMs: number,
    /** The database, as error messages name it. */
    private readonly database: string,
  ) {}

  async run<T>(kind: StatementKind, what: string, attempt: (busyTimeoutMs: number) => T): Promise<T> {
    const started = performance.now();
    let backoff = BACKOFF_FIRST_MS;
    let waits = false;
    try {
      for (let tries = 1; ; tries++) {
        try {
          return attempt(waits || this.waiting > 0 ? 0 : SQLITE_BUSY_TIMEOUT_MS);
        } catch (err) {
          if (!isLockBusy(err)) throw mapDriverError(err, kind, what);
          if (!waits) {
            waits = true;
            this.waiting++;
          }
          const now = performance.now();
          const left = this.lockTimeoutMs - (now - started);
          if (left <= 0) {
            const lock = kind === 'write' ? 'write lock' : 'lock';
            throw new RheoError(
              'backend_unavailable',
              `${what}: gave up after ${Math.round(now - started)} ms (${tries} attempts) waiting for the ${lock} on SQLite database ` +
                `${this.database}, held by another connection (lockTimeoutMs ${this.lockTimeoutMs})`,
              { cause: err },
            );
          }
          await sleep(Math.min(left, backoff * (0.5 + Math.random() / 2)));
          backoff = Math.min(BACKOFF_MAX_MS, backoff * 2);
        }
      }
    } finally {
      if (waits) this.waiting--;
    }
  }
}
