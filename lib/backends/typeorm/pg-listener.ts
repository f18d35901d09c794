import type { Client, ClientConfig, Notification } from 'pg';
import type { WaitRequest } from '../backend';
import { quoteIdent } from './names';

type PgModule = { Client: new (config: ClientConfig) => Client };

const RECONNECT_MIN_MS = 100;
const RECONNECT_MAX_MS = 5000;

/**
 * The LISTEN side of wake-ups: one dedicated connection per backend (a pooled one
 * would be handed to other queries). When the connection dies (server restart,
 * `pg_terminate_backend`, network), it reconnects with capped backoff and wakes
 * every waiter, since notifications sent meanwhile were lost. Waiters never depend
 * on it for correctness: each one also ends at its timeout, i.e. polling is the
 * fallback.
 */
export class PgListener {
  private client: Client | null = null;
  private connecting: Promise<void> | null = null;
  private retryTimer: NodeJS.Timeout | null = null;
  private delay = RECONNECT_MIN_MS;
  private stopped = false;
  private readonly waiters = new Map<string, Set<() => void>>();
  /** Times a LISTEN connection was established; tests read it to see a reconnect. */
  connections = 0;

  constructor(
    private readonly pg: PgModule,
    private readonly config: ClientConfig,
    private readonly channel: string,
  ) {}

  /** Resolves on a notification for the stream, at `timeoutMs`, on abort, or on stop. */
  wait(req: WaitRequest): Promise<void> {
    if (this.stopped || req.signal.aborted) return Promise.resolve();
    this.ensure();
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

  /** Start listening now (the first wait() does it otherwise). Resolves once LISTEN is in place or failed once. */
  start(): Promise<void> {
    this.ensure();
    return this.connecting ?? Promise.resolve();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.wakeAll();
    const c = this.client;
    this.client = null;
    if (c) await c.end().catch(() => undefined);
  }

  /** Wake waiters of `stream` (also used for local appends, so a same-process consumer never waits for the round trip). */
  wake(stream: string): void {
    const set = this.waiters.get(stream);
    if (set) for (const w of [...set]) w();
  }

  private wakeAll(): void {
    for (const stream of [...this.waiters.keys()]) this.wake(stream);
  }

  private ensure(): void {
    if (this.stopped || this.client || this.connecting || this.retryTimer) return;
    this.connecting = this.connect().finally(() => {
      this.connecting = null;
    });
  }

  private async connect(): Promise<void> {
    const client = new this.pg.Client(this.config);
    let lost = false;
    const onLost = () => {
      if (lost) return;
      lost = true;
      if (this.client === client) this.client = null;
      client.end().catch(() => undefined);
      this.scheduleReconnect();
    };
    client.on('error', onLost);
    client.on('end', onLost);
    client.on('notification', (n: Notification) => {
      if (n.channel === this.channel && n.payload) this.wake(n.payload);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${quoteIdent(this.channel)}`);
    } catch {
      onLost();
      return;
    }
    if (this.stopped || lost) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    this.connections++;
    this.delay = RECONNECT_MIN_MS;
    // Anything notified while we were not listening is lost: let every waiter look.
    if (this.connections > 1) this.wakeAll();
  }

  private scheduleReconnect(): void {
    if (this.stopped || this.retryTimer) return;
    const delay = this.delay;
    this.delay = Math.min(RECONNECT_MAX_MS, this.delay * 2);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.ensure();
    }, delay);
    this.retryTimer.unref?.();
  }
}
