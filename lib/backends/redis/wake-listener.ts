import { compareEntryIds } from './codec';
import type { RedisClient } from './external';

interface Waiter {
  key: string;
  /** The wake entry id the caller last saw; anything newer wakes it. */
  lastId: string;
  done: () => void;
}

/** How long one blocking XREAD lasts before the loop re-arms; waiters also have their own timers. */
const BLOCK_MS = 5000;
/** Pause after a failed blocking read before trying again. */
const RETRY_MS = 200;

/**
 * Multiplexes every `wait()` of a backend onto ONE blocking connection: a loop
 * runs `XREAD BLOCK` over the wake keys of all current waiters, and resolves the
 * waiters of a key when an entry newer than what they last saw arrives. A waiter
 * for a key the in-flight read does not cover interrupts it with CLIENT UNBLOCK
 * (sent on the main connection), so it is included at once.
 *
 * Everything here is a hint: each waiter also resolves on its own timeout or
 * abort, and a failed or killed blocking connection only costs a poll (ioredis
 * reconnects it and the loop re-arms).
 *
 * With `onBroken` (a cluster's per-slot listeners, cluster.ts), a failed blocking
 * read ends the listener instead: `onBroken` is called, and every waiter is
 * released (they fetch and wait again, through a new listener).
 */
export class WakeListener {
  private readonly waiters = new Map<string, Set<Waiter>>();
  /** Newest wake id seen per key, so a waiter already behind resolves at once. */
  private readonly latest = new Map<string, string>();
  private running = false;
  private blocking: Map<string, string> | null = null;
  private blockerId: number | null = null;
  private closed = false;

  constructor(
    private readonly blocker: RedisClient,
    private readonly unblock: (clientId: number) => Promise<unknown>,
    private readonly onBroken?: () => void,
  ) {
    blocker.on('close', () => {
      this.blockerId = null;
    });
    // The loop sees failures through its own calls; this only keeps ioredis from logging them as unhandled.
    blocker.on('error', () => undefined);
  }

  /** Resolve when `key` gets an entry newer than `lastId`, after `timeoutMs`, or on abort. */
  wait(key: string, lastId: string, timeoutMs: number, signal: AbortSignal): Promise<void> {
    const seen = this.latest.get(key);
    if (this.closed || signal.aborted || (seen !== undefined && compareEntryIds(seen, lastId) > 0)) return Promise.resolve();
    return new Promise((resolve) => {
      const waiter: Waiter = {
        key,
        lastId,
        done: () => {
          clearTimeout(timer);
          signal.removeEventListener('abort', waiter.done);
          const set = this.waiters.get(key);
          set?.delete(waiter);
          if (set?.size === 0) this.waiters.delete(key);
          resolve();
        },
      };
      const timer = setTimeout(waiter.done, timeoutMs);
      signal.addEventListener('abort', waiter.done, { once: true });
      let set = this.waiters.get(key);
      if (!set) this.waiters.set(key, (set = new Set()));
      set.add(waiter);
      this.cover(waiter);
    });
  }

  /** No waiter now. */
  get idle(): boolean {
    return this.waiters.size === 0;
  }

  /** Resolve every waiter and stop; the blocking connection is closed by its owner. */
  close(): void {
    this.closed = true;
    for (const set of [...this.waiters.values()]) for (const w of [...set]) w.done();
  }

  /** Get a new waiter's key read: start the loop, or interrupt a blocking read that does not cover it. */
  private cover(w: Waiter): void {
    if (!this.running) {
      this.running = true;
      void this.loop();
      return;
    }
    const armed = this.blocking?.get(w.key);
    if (this.blocking && this.blockerId !== null && (armed === undefined || compareEntryIds(w.lastId, armed) < 0)) {
      this.unblock(this.blockerId).catch(() => undefined);
    }
  }

  private async loop(): Promise<void> {
    try {
      while (!this.closed && this.waiters.size > 0) {
        try {
          if (this.blockerId === null) this.blockerId = Number(await this.blocker.client('ID'));
          if (this.closed || this.waiters.size === 0) break;
          // Read the waiters only now, right before the read is sent, so none registered meanwhile is left out.
          const keys = [...this.waiters.keys()];
          const ids = keys.map((k) =>
            [...this.waiters.get(k)!].map((w) => w.lastId).reduce((a, b) => (compareEntryIds(a, b) <= 0 ? a : b)),
          );
          this.blocking = new Map(keys.map((k, i) => [k, ids[i]]));
          const res = (await this.blocker.xread('BLOCK', BLOCK_MS, 'STREAMS', ...keys, ...ids)) as Array<
            [string, Array<[string, string[]]>]
          > | null;
          this.blocking = null;
          for (const [key, entries] of res ?? []) {
            const newest = entries[entries.length - 1]?.[0];
            if (newest === undefined) continue;
            const prev = this.latest.get(key);
            if (prev === undefined || compareEntryIds(newest, prev) > 0) this.latest.set(key, newest);
            for (const w of [...(this.waiters.get(key) ?? [])]) if (compareEntryIds(w.lastId, newest) < 0) w.done();
          }
        } catch {
          this.blocking = null;
          if (this.closed) return;
          this.blockerId = null;
          await new Promise((r) => setTimeout(r, RETRY_MS));
          if (this.onBroken && !this.closed) {
            this.onBroken();
            this.close();
            return;
          }
        }
      }
    } finally {
      this.running = false;
    }
  }
}
