// The facade's context: what every section of the facade (registry, log, delivery,
// recovery, retention) shares, as each backend has one context object
// (lib/backends/memory/context.ts). It holds the backend, the append limits, the
// registrations this process remembers, the frontier watch, the connect state and
// the `traced` wrapper; the sections are functions over it, and `Rheo` only
// delegates. It is a class, unlike the backends' plain records, because the
// connect (`init`) is state shared by every section and read on the hot paths.
import type { Backend, SettleOp, SettleResult } from '../../backends/backend';
import { type OperationMessage, traced } from '../diagnostics';
import { RheoError, toRheoError } from '../errors';
import { FrontierWatch } from '../published';
import { Registrations } from '../registrations';
import type { AppendLimits } from '../requests';
import type { GroupConfig, StreamInfo } from '../types';

/** An operation's message before the instance's id is added. */
export type MessageDraft = Omit<OperationMessage, 'rheo'>;

export class FacadeContext {
  /**
   * The stream and group registrations this process remembers: the backend's own
   * when it keeps them (`Backend.registrations`), so they are remembered once.
   * Streams for their partitions; groups for their maxAttempts, read only when a
   * settle's outcome is observed (diagnostics.ts).
   */
  readonly registrations: Registrations;
  readonly frontiers = new FrontierWatch();
  private ready?: Promise<void>;
  /** The backend's init resolved: {@link init} need not be awaited again. */
  private connected = false;

  constructor(
    /** The instance's id, named in every diagnostics message (`OperationMessage.rheo`). */
    readonly id: string,
    readonly backend: Backend,
    readonly limits: AppendLimits,
  ) {
    this.registrations = backend.registrations ?? new Registrations();
  }

  /** True once the backend's init resolved: the hot paths then skip the wait. */
  get isConnected(): boolean {
    return this.connected;
  }

  /** Connect the backend (idempotent); a failed connect is tried again by the next call. */
  init(): Promise<void> {
    if (!this.ready) {
      this.ready = this.backend.init().then(
        () => {
          this.connected = true;
        },
        (err) => {
          this.ready = undefined;
          throw toRheoError(err, 'backend_unavailable');
        },
      );
    }
    return this.ready;
  }

  /**
   * The stream's registration, without a wait when the backend is connected and
   * the stream known: the hot paths (append, fetch) then reach the backend in the
   * same turn, and the telemetry hooks around them cost no extra promise.
   */
  ensured(stream: string): StreamInfo | Promise<StreamInfo> {
    const known = this.connected ? this.registrations.stream(stream) : undefined;
    return known ?? this.init().then(() => this.stream(stream));
  }

  /**
   * The stream's registration, for its partition count: looked up once, then
   * remembered (a stream's partitions never change and streams are never
   * deleted), so appends, fetches and reads cost no extra round trip. Its
   * `retention` may be stale: {@link freshStream} reads that.
   */
  async stream(name: string): Promise<StreamInfo> {
    const known = this.registrations.stream(name);
    if (known) return known;
    const info = await this.freshStream(name);
    this.registrations.rememberStream(info);
    return info;
  }

  /** The stream's registration as the store has it now (retention included). */
  async freshStream(name: string): Promise<StreamInfo> {
    const info = await this.backend.getStream(name);
    if (!info) throw RheoError.streamNotFound(name);
    return info;
  }

  /** The group's config as the store has it now; `group_not_found` when there is none. */
  async groupConfig(stream: string, group: string): Promise<GroupConfig> {
    const cfg = await this.backend.getGroup(stream, group);
    if (!cfg) throw RheoError.groupNotFound(stream, group);
    return cfg;
  }

  /** An operation on its `rheo:<op>` TracingChannel (diagnostics.ts), the message naming this instance. */
  traced<T>(
    op: OperationMessage['operation'],
    message: () => MessageDraft,
    fn: () => Promise<T>,
    done?: (result: T, message: OperationMessage) => void,
  ): Promise<T> {
    return traced(op, () => ({ ...message(), rheo: this.id }), fn, done);
  }

  /** The backend's settle, bound once: the settle hot path hands it to settleEach without a closure per call. */
  readonly settleOps = (ops: SettleOp[]): Promise<SettleResult[]> => this.backend.settle(ops);
}

/** `done` for operations whose result is a count, or a list whose length is the count. */
export function counted(result: number | unknown[], m: OperationMessage): void {
  m.count = typeof result === 'number' ? result : result.length;
}
