import type { WaitRequest } from '../backend';

/**
 * In-process wake-ups for `wait()`: waiters per stream, woken by our own appends
 * and nacks and (on PostgreSQL) by NOTIFY from other nodes.
 *
 * It also closes the lost-wake-up gap: a wake that lands while a group's fetch is
 * in flight finds no waiter (the runtime only waits after an empty fetch), and that
 * fetch may have read before the new events committed. So every wake bumps the
 * stream's generation, fetch notes the generation it started at, and a wait that
 * sees a newer one returns at once instead of sleeping a whole poll.
 */
export class WakeBoard {
  private readonly waiters = new Map<string, Set<() => void>>();
  private readonly generation = new Map<string, number>();
  private readonly fetchedAt = new Map<string, number>();
  private closed = false;

  /** Call when a fetch of (stream, group) starts. */
  fetching(stream: string, group: string): void {
    this.fetchedAt.set(`${stream}\u0000${group}`, this.generation.get(stream) ?? 0);
  }

  wait(req: WaitRequest): Promise<void> {
    if (this.closed || req.signal.aborted) return Promise.resolve();
    const key = `${req.stream}\u0000${req.group}`;
    const gen = this.generation.get(req.stream) ?? 0;
    if (this.fetchedAt.has(key) && this.fetchedAt.get(key) !== gen) {
      this.fetchedAt.set(key, gen);
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      let set = this.waiters.get(req.stream);
      if (!set) this.waiters.set(req.stream, (set = new Set()));
      const waiters = set;
      const done = () => {
        clearTimeout(timer);
        req.signal.removeEventListener('abort', done);
        waiters.delete(done);
        if (waiters.size === 0 && this.waiters.get(req.stream) === waiters) this.waiters.delete(req.stream);
        resolve();
      };
      const timer = setTimeout(done, req.timeoutMs);
      req.signal.addEventListener('abort', done);
      waiters.add(done);
    });
  }

  wake(stream: string): void {
    this.generation.set(stream, (this.generation.get(stream) ?? 0) + 1);
    const set = this.waiters.get(stream);
    if (set) for (const w of [...set]) w();
  }

  /** Wake every waiter (a reconnect: notifications may have been lost). */
  wakeAll(): void {
    for (const stream of new Set([...this.waiters.keys(), ...this.generation.keys()])) this.wake(stream);
  }

  close(): void {
    this.closed = true;
    for (const set of this.waiters.values()) for (const w of [...set]) w();
  }
}
