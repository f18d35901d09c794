import { Logger } from '@nestjs/common';
import { ClientProxy, type ReadPacket, type WritePacket } from '@nestjs/microservices';
import type { Observable } from 'rxjs';
import { RheoError } from '../core/errors';
import type { Rheo } from '../core/rheo';
import type {
  AppendInput,
  AppendOptions,
  DeadLetter,
  GroupConfig,
  GroupInfo,
  GroupPause,
  GroupOptions,
  JsonValue,
  Lag,
  Page,
  PauseGroupOptions,
  PurgeDeadLettersOptions,
  Query,
  RedriveOptions,
  ReplayOptions,
  ResetOptions,
  Retention,
  RheoEvent,
  StreamInfo,
  TrimOptions,
  TrimResult,
} from '../core/types';
import { pauseLine, purgeLine, redriveLine, replayLine, resetLine, resumeLine, trimLine } from '../admin/admin-log';

/** What `RheoClient.status` emits. */
export type RheoClientStatus = 'connected' | 'disconnected';

/**
 * The producer and admin side of an instance, injectable anywhere
 * (`constructor(private readonly rheo: RheoClient)`, or `@InjectRheoClient('audit')`).
 * A `ClientProxy`, so `emit(stream, payload)` works like any Nest client; `send`
 * is refused (an event log has no request/response).
 */
export class RheoClient extends ClientProxy<Record<never, Function>, RheoClientStatus> {
  /** Admin actions are logged here, at LOG level, with their counts. */
  private readonly log: Logger;

  /**
   * `instanceName` (when not the default) names the instance in the log context:
   * `RheoClient(audit)`. `explain` rewrites the error of a call on a stream (RheoModule
   * passes its instance's: a declared stream used before it is created says when it will be).
   */
  constructor(
    private readonly core: Rheo,
    instanceName?: string,
    private readonly explain: (stream: string, err: unknown) => unknown = (_stream, err) => err,
  ) {
    super();
    this.log = new Logger(instanceName === undefined || instanceName === 'default' ? 'RheoClient' : `RheoClient(${instanceName})`);
  }

  /** Connect the backend (idempotent); every call does it on first use. */
  async connect(): Promise<void> {
    await this.core.init();
    this._status$.next('connected');
  }

  /** A no-op: the module closes the backend on application shutdown, after consumers drained. */
  close(): void {}

  /** The core facade, for the operations this client does not wrap (fetch, ack, ...): the one way to reach it (as Nest's clients unwrap their driver). */
  unwrap<T = Rheo>(): T {
    return this.core as T;
  }

  /** Not supported: an event log has no replies. Use `emit()` or `append()`. */
  override send<TResult = never, TInput = unknown>(pattern: unknown, data: TInput): Observable<TResult> {
    void pattern;
    void data;
    throw new RheoError(
      'invalid_argument',
      'RheoClient does not support send() (request/response); use emit(stream, payload) or append(stream, event)',
      {
        field: 'send',
      },
    );
  }

  /** `emit(stream, payload)`: appends `{ payload }` to `stream`; the Observable emits the stored event. */
  override emit<TResult = RheoEvent, TInput = JsonValue>(stream: string, payload: TInput): Observable<TResult> {
    return super.emit<TResult, TInput>(stream, payload);
  }

  protected publish(packet: ReadPacket, callback: (packet: WritePacket) => void): () => void {
    void packet;
    callback({
      err: new RheoError('invalid_argument', 'RheoClient does not support request/response', { field: 'send' }),
      isDisposed: true,
    });
    return () => undefined;
  }

  protected async dispatchEvent<T = RheoEvent>(packet: ReadPacket): Promise<T> {
    if (typeof packet.pattern !== 'string') throw RheoError.invalid('stream', 'must be a string (emit(stream, payload))');
    return (await this.explained(packet.pattern, this.core.append(packet.pattern, { payload: packet.data as JsonValue }))) as T;
  }

  /** A call on `stream`, its failure through {@link explain}. */
  private explained<T>(stream: string, call: Promise<T>): Promise<T> {
    return call.catch((err: unknown) => Promise.reject(this.explain(stream, err)));
  }

  /** Append one event; returns it as stored (id, partition, sequence, timestamp). */
  append<P = JsonValue>(stream: string, event: AppendInput<P>, options?: AppendOptions): Promise<RheoEvent<P>> {
    return this.explained(stream, this.core.append(stream, event, options));
  }

  /** Append many events atomically; returns them as stored, in input order. */
  appendBatch<P = JsonValue>(stream: string, events: AppendInput<P>[], options?: AppendOptions): Promise<RheoEvent<P>[]> {
    return this.explained(stream, this.core.appendBatch(stream, events, options));
  }

  /** Create a stream (partitions default 1), optionally with a retention. */
  createStream(stream: string, options?: { partitions?: number; ifNotExists?: boolean; retention?: Retention }): Promise<StreamInfo> {
    return this.core.createStream(stream, options);
  }

  /** Replace a stream's retention (`{}` keeps everything again). */
  setRetention(stream: string, retention: Retention): Promise<StreamInfo> {
    return this.explained(stream, this.core.setRetention(stream, retention));
  }

  /** Apply the stream's retention now (`force` also skips what groups have not finished). */
  async trim(stream: string, options?: TrimOptions): Promise<TrimResult> {
    const result = await this.explained(stream, this.core.trim(stream, options));
    this.log.log(trimLine(result, options));
    return result;
  }

  /** Delete a group's dead letters dead-lettered before a time, or all of them. */
  async purgeDeadLetters(stream: string, group: string, options: PurgeDeadLettersOptions): Promise<number> {
    const n = await this.explained(stream, this.core.purgeDeadLetters(stream, group, options));
    this.log.log(purgeLine(stream, group, options, n));
    return n;
  }

  /** How many dead letters the group holds: all, or those dead-lettered at or after `since`. */
  countDeadLetters(stream: string, group: string, options?: { since?: Date }): Promise<number> {
    return this.explained(stream, this.core.countDeadLetters(stream, group, options));
  }

  /** Create a consumer group. */
  createGroup(stream: string, group: string, options?: GroupOptions): Promise<GroupConfig> {
    return this.explained(stream, this.core.createGroup(stream, group, options));
  }

  /** How far `group` is behind `stream`. */
  lag(stream: string, group: string): Promise<Lag> {
    return this.explained(stream, this.core.lag(stream, group));
  }

  /** Lag, inflight, dead letters, oldest unsettled age and configuration of a group. */
  groupInfo(stream: string, group: string): Promise<GroupInfo> {
    return this.explained(stream, this.core.groupInfo(stream, group));
  }

  /** Events matching `query`. */
  query(query: Query): Promise<RheoEvent[]> {
    return this.core.query(query);
  }

  /** One page of events matching `query`. */
  queryPage(query: Query): Promise<Page<RheoEvent>> {
    return this.core.queryPage(query);
  }

  /** Re-open a group's deliveries from a sequence, a time or a query. */
  async replay(stream: string, group: string, options: ReplayOptions): Promise<number> {
    const n = await this.explained(stream, this.core.replay(stream, group, options));
    this.log.log(replayLine(stream, group, options, n));
    return n;
  }

  /** Forget a group's deliveries and restart it (requires `confirm: true`). */
  async reset(stream: string, group: string, options: ResetOptions): Promise<void> {
    await this.explained(stream, this.core.reset(stream, group, options));
    this.log.log(resetLine(stream, group, options));
  }

  /** A group's dead letters. */
  deadLetters(stream: string, group: string, options?: { limit?: number; after?: string }): Promise<DeadLetter[]> {
    return this.explained(stream, this.core.deadLetters(stream, group, options));
  }

  /** Make dead letters available again. */
  async redrive(stream: string, group: string, options: RedriveOptions): Promise<number> {
    const n = await this.explained(stream, this.core.redrive(stream, group, options));
    this.log.log(redriveLine(stream, group, options, n));
    return n;
  }

  /**
   * Stop every process claiming the group's events until `until` or {@link resumeGroup};
   * handlers running finish and settle as usual. Returns the pause as stored.
   */
  async pauseGroup(stream: string, group: string, options?: PauseGroupOptions): Promise<GroupPause> {
    const pause = await this.explained(stream, this.core.pauseGroup(stream, group, options));
    this.log.log(pauseLine(stream, group, pause));
    return pause;
  }

  /** Let a paused group claim again, at once; false when no pause was holding it back. */
  async resumeGroup(stream: string, group: string): Promise<boolean> {
    const wasPaused = await this.explained(stream, this.core.resumeGroup(stream, group));
    this.log.log(resumeLine(stream, group, wasPaused));
    return wasPaused;
  }

  /** Every stream of the store. */
  listStreams(): Promise<StreamInfo[]> {
    return this.core.listStreams();
  }

  /** The consumer groups of `stream`. */
  listGroups(stream: string): Promise<GroupConfig[]> {
    return this.explained(stream, this.core.listGroups(stream));
  }
}
