import type { Client, ClientConfig, Notification } from 'pg';
import { quoteIdent } from './names';
import type { WakeBoard } from './wake-board';

type PgModule = { Client: new (config: ClientConfig) => Client };

const RECONNECT_MIN_MS = 100;
const RECONNECT_MAX_MS = 5000;

/**
 * The LISTEN side of wake-ups: one dedicated connection per backend (a pooled one
 * would be handed to other queries). When the connection dies (server restart,
 * `pg_terminate_backend`, network), it reconnects with capped backoff and wakes
 * every waiter, since notifications sent meanwhile were lost. Waiters never depend
 * on it for correctness: each one also ends at its timeout, i.e. polling is the
 * fallback. Notifications are posted to the backend's {@link WakeBoard}.
 */
export class PgListener {
  private client: Client | null = null;
  private connecting: Promise<void> | null = null;
  private retryTimer: NodeJS.Timeout | null = null;
  private delay = RECONNECT_MIN_MS;
  private stopped = false;
  /** Times a LISTEN connection was established; tests read it to see a reconnect. */
  connections = 0;

  constructor(
    private readonly pg: PgModule,
    private readonly config: ClientConfig,
    private readonly channel: string,
    private readonly board: WakeBoard,
  ) {}

  /** Make sure a LISTEN connection is up or coming (idempotent). Resolves once this attempt is done. */
  start(): Promise<void> {
    if (!this.stopped && !this.client && !this.connecting && !this.retryTimer) {
      this.connecting = this.connect().finally(() => {
        this.connecting = null;
      });
    }
    return this.connecting ?? Promise.resolve();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    await this.connecting?.catch(() => undefined);
    const c = this.client;
    this.client = null;
    if (c) await c.end().catch(() => undefined);
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
      if (n.channel === this.channel && n.payload) this.board.wake(n.payload);
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
    if (this.connections > 1) this.board.wakeAll();
  }

  private scheduleReconnect(): void {
    if (this.stopped || this.retryTimer) return;
    const delay = this.delay;
    this.delay = Math.min(RECONNECT_MAX_MS, this.delay * 2);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      void this.start();
    }, delay);
    this.retryTimer.unref?.();
  }
}
