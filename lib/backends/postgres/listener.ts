import type { PgClient, PgClientConfig, PgDataSourceOptions, PgModule, PgNotification } from '../sql/external';
import { listenerApplicationName, quoteIdent } from '../sql/names';
import type { WakeBoard } from '../sql/wake-board';

const RECONNECT_MIN_MS = 100;
const RECONNECT_MAX_MS = 5000;
/** Connect timeout of the LISTEN connection when the DataSource sets none (pg's default is to wait forever). */
const LISTENER_CONNECT_TIMEOUT_MS = 10_000;

/**
 * The pg Client settings of the LISTEN connection: exactly what TypeORM's
 * PostgresDriver hands each pooled connection (its createPool: the credentials,
 * `connectTimeoutMS`, `applicationName`, then `extra` over them), so the listener
 * reaches the server the way the host's pool does (TLS, socket options, startup
 * parameters, custom stream...). With replication, the master's credentials:
 * NOTIFY is delivered on the primary only. Then:
 * - `keepAlive: true`, always: the LISTEN connection only ever reads, and sits idle
 *   between notifications for hours; without TCP keepalive a peer that vanished
 *   (NAT or firewall timeout, host gone) leaves it waiting forever, deaf, instead
 *   of erroring and reconnecting;
 * - `application_name`: the DataSource's own when it sets one, else
 *   `rheo_listener_<schema>`;
 * - a 10 s connect timeout when the DataSource sets none.
 */
export function listenerClientConfig(options: PgDataSourceOptions, schema: string): PgClientConfig {
  const credentials = options.replication?.master ?? options;
  const config: PgClientConfig = {
    connectionString: credentials.url,
    host: credentials.host,
    user: credentials.username,
    password: credentials.password,
    database: credentials.database,
    port: credentials.port,
    // TypeORM types it as TlsOptions, pg as ConnectionOptions: the same object reaches pg's pool unchanged.
    ssl: credentials.ssl,
    connectionTimeoutMillis: options.connectTimeoutMS,
    application_name: options.applicationName ?? credentials.applicationName,
    ...(options.extra ?? {}),
  };
  // Pool sizing means nothing to a single Client; drop it so the config reads as what it is.
  for (const poolOnly of ['max', 'min', 'idleTimeoutMillis', 'maxUses', 'maxLifetimeSeconds', 'allowExitOnIdle']) delete config[poolOnly];
  config.application_name ??= listenerApplicationName(schema);
  config.connectionTimeoutMillis ??= LISTENER_CONNECT_TIMEOUT_MS;
  config.keepAlive = true;
  return config;
}

/**
 * A notice that a group's settings changed (updateGroup), on the wake-up channel:
 * a payload no stream name starts with (names hold no control characters), then
 * the stream and the group as JSON. Every process forgets its copy of the group,
 * so one that took the group for one without flow limits (whose claim never reads
 * the group's row) reads its limits again before its next claim. A process of an
 * older release wakes the waiters of a stream of that name: none.
 */
const GROUP_CHANGED = '\u0001';

export function groupChangedPayload(stream: string, group: string): string {
  return GROUP_CHANGED + JSON.stringify([stream, group]);
}

function groupChangedOf(payload: string): { stream: string; group: string } | null {
  if (!payload.startsWith(GROUP_CHANGED)) return null;
  try {
    const [stream, group] = JSON.parse(payload.slice(GROUP_CHANGED.length)) as [unknown, unknown];
    return typeof stream === 'string' && typeof group === 'string' ? { stream, group } : null;
  } catch {
    return null;
  }
}

/**
 * The LISTEN side of wake-ups: one dedicated connection per backend (a pooled one
 * would be handed to other queries). When the connection dies (server restart,
 * `pg_terminate_backend`, network), it reconnects with capped backoff and wakes
 * every waiter, since notifications sent meanwhile were lost. Waiters never depend
 * on it for correctness: each one also ends at its timeout, i.e. polling is the
 * fallback. Notifications are posted to the backend's {@link WakeBoard}.
 */
export class PgListener {
  private client: PgClient | null = null;
  private connecting: Promise<void> | null = null;
  private retryTimer: NodeJS.Timeout | null = null;
  private delay = RECONNECT_MIN_MS;
  private stopped = false;
  /** Times a LISTEN connection was established; tests read it to see a reconnect. */
  connections = 0;

  constructor(
    private readonly pg: PgModule,
    private readonly config: PgClientConfig,
    private readonly channel: string,
    private readonly board: WakeBoard,
    /** A group's settings changed in another process (updateGroup): this process reads them again. */
    private readonly onGroupChanged?: (stream: string, group: string) => void,
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
    client.on('notification', (n: PgNotification) => {
      if (n.channel !== this.channel || !n.payload) return;
      const changed = groupChangedOf(n.payload);
      if (changed) this.onGroupChanged?.(changed.stream, changed.group);
      this.board.wake(changed ? changed.stream : n.payload);
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
