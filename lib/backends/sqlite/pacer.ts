// How a long SQLite job (a trim, a purge) gives the one connection back between
// its chunks. better-sqlite3 is synchronous, so a chunk holds the event loop and
// the write lock for as long as it runs, and whatever else the process wants
// from the database waits for it; between chunks, the job must let that work in.
//
// A pause ends at the next turn of the event loop (setImmediate), which lets
// timers and I/O in. But a caller that only ever awaits this backend never gives
// the loop a turn (each operation resolves within the same turn: SQLite answered
// synchronously), and a job that waited for one would starve for as long as that
// caller keeps going. So a pause also ends when another operation of the backend
// finishes (`poke`), once the job has been out of the way for at least as long
// as its last chunk ran: the others then get at least half of the connection's
// time, and no operation waits for more than about one chunk.
import { performance } from 'node:perf_hooks';

export class Pacer {
  private waiters = new Set<{ since: number; minGapMs: number; wake: () => void }>();

  /** Wait before the next chunk; `lastChunkMs` is how long the last one ran. */
  pause(lastChunkMs: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const waiter = {
        since: performance.now(),
        minGapMs: lastChunkMs,
        wake: () => {
          this.waiters.delete(waiter);
          clearImmediate(timer);
          resolve();
        },
      };
      const timer = setImmediate(waiter.wake);
      this.waiters.add(waiter);
    });
  }

  /** Another operation finished: a job that has kept out of the way long enough goes on. */
  poke(): void {
    if (this.waiters.size === 0) return;
    const now = performance.now();
    for (const w of this.waiters) if (now - w.since >= w.minGapMs) w.wake();
  }
}
