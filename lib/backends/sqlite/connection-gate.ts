// Who may use the one SQLite connection while a transactional consumer's
// handler holds a transaction open on it (ADR 030).
//
// SQLite through TypeORM is one connection, and a transaction on it is the
// connection's: any statement run while it is open joins it, and commits or
// rolls back with it. A handler's transaction stays open across its awaits, so
// without a gate this backend's own work of those moments (another consumer's
// claim, a renewal, an append from an HTTP request) would silently ride in the
// handler's transaction and vanish with its rollback: a claim lost, or worse an
// append the caller was told had been stored. So while a handler's transaction
// is open, the backend's operations wait for it, except those the handler makes
// itself (an append with `ctx.manager`, a read): they run in its async context,
// inside its transaction, which is what they mean. Transactions of several
// handlers take turns, first come first served.
import { AsyncLocalStorage } from 'node:async_hooks';

/** What an attempt throws when it finds the gate taken: the lock waiter treats it as a lock held elsewhere and tries again. */
function gateBusy(): Error {
  return Object.assign(new Error("the connection is in a transactional consumer's transaction"), { code: 'SQLITE_BUSY' });
}

export class ConnectionGate {
  private readonly context = new AsyncLocalStorage<symbol>();
  /** The transaction running now: its token (carried by its async context) and the promise its end resolves. */
  private holder: { token: symbol; ended: Promise<void> } | null = null;
  /** A transaction runs, or has been handed the turn and is about to. */
  private taken = false;
  /** Transactions waiting for their turn, in arrival order. */
  private readonly queue: Array<() => void> = [];

  /**
   * Null when the caller may use the connection now (no transaction holds it, or
   * the caller runs inside the one that does), else a promise to wait on before
   * asking again. The hot path's cost while no transaction runs: one comparison.
   */
  blocked(): Promise<void> | null {
    const h = this.holder;
    if (h === null || this.context.getStore() === h.token) return null;
    return h.ended;
  }

  /**
   * For an attempt already under way (one that waited for another process's lock
   * while a transaction began here): throw a lock-busy error, so the lock waiter
   * tries again later, instead of running inside someone else's transaction.
   */
  check(): void {
    if (this.blocked() !== null) throw gateBusy();
  }

  /** Run `fn` holding the connection: other callers wait (see {@link blocked}), calls made from inside `fn` do not. */
  async hold<T>(fn: () => Promise<T>): Promise<T> {
    if (this.taken) await new Promise<void>((resolve) => this.queue.push(resolve));
    else this.taken = true;
    const token = Symbol('rheo.sqlite.transaction');
    let end!: () => void;
    this.holder = { token, ended: new Promise<void>((resolve) => (end = resolve)) };
    try {
      return await this.context.run(token, fn);
    } finally {
      this.holder = null;
      end();
      // The next transaction starts on a later turn: the operations that waited
      // for this one (a renewal, a settle) resume first, in the microtasks `end`
      // queued, and do not starve behind a stream of transactions.
      const next = this.queue.shift();
      if (next)
        setImmediate(next); // the turn passes to it: `taken` stays true
      else this.taken = false;
    }
  }
}
