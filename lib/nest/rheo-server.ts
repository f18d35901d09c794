import { EventEmitter } from 'node:events';
import { Logger } from '@nestjs/common';
import { type CustomTransportStrategy, type MessageHandler, Server } from '@nestjs/microservices';
import { RheoError, toRheoError } from '../core/errors';
import { DEFAULT_DRAIN_TIMEOUT_MS } from '../core/limits';
import type { Outcome } from '../core/outcomes';
import type { SettleWritten } from '../backends/backend';
import type { Rheo } from '../core/rheo';
import type { GroupConfig, Lease } from '../core/types';
import {
  type BatchControl,
  type BroadcastJoined,
  BroadcastMemberships,
  Consumer,
  type ConsumerState,
  type DeliveryControl,
  type Trimmer,
} from '../runtime';
import { settingsSnapshot } from '../runtime/consumer-settings';
import { startBackgroundTrim } from './background-trim';
import { rheoTransportId } from './constants';
import { checkStreams, collectConsumers, warnUnmatchedConfiguration } from './consumer-bootstrap';
import { blameSource, prefixed, type ResolvedConsumer } from './consumer-options';
import { declaredGroup } from './declared-group';
import { deliverThroughNest } from './deliver-through-nest';
import { consumerLabel, expiredDeadLetterLine, settingsText, settleLine, settleReport } from './consumer-log';
import { quietReportedRpcErrors } from './quiet-rpc-errors';
import { RheoBatchContext, RheoContext, type RheoDeliveryContext } from './rheo-context';
import { deliveryEvent, RHEO_EVENT_NAMES, RheoEventHub, type RheoEventListener, type RheoEventName } from './rheo-events';
import type { RheoInstance } from './rheo-instance';
import { capturedError } from './thrown-error-capture';

/** What `RheoServer.status` emits: every consumer fetching, some backing off on errors, or stopped. */
export type RheoServerStatus = 'connected' | 'reconnecting' | 'disconnected';

/** Identifies the consumer an event is about. */
export interface RheoConsumerRef {
  stream: string;
  group: string;
  handlerName: string;
}

/** Listeners `RheoServer.on()` accepts. */
export type RheoServerEvents = {
  /** A consumer's fetch failed; it backs off and retries. */
  fetch_error: (ref: RheoConsumerRef, error: RheoError) => void;
  /** A consumer fetched again after errors. */
  recovered: (ref: RheoConsumerRef) => void;
  /** A delivery was settled by its outcome. */
  settled: (ref: RheoConsumerRef, lease: Lease, outcome: Outcome) => void;
  /** Settling failed; the lease is left to expire (or nacked, for a definite failure). */
  settle_error: (ref: RheoConsumerRef, lease: Lease, outcome: Outcome, error: RheoError) => void;
  /** A renewal found the lease taken over: another consumer now holds the event. */
  lease_lost: (ref: RheoConsumerRef, lease: Lease) => void;
  /**
   * Renewing a consumer's leases failed (not "lost": the store did not answer or
   * failed); retried on the fetch backoff. `consecutive` is 1 at the start of a burst.
   */
  renew_error: (ref: RheoConsumerRef, error: RheoError, leases: number, consecutive: number) => void;
  /** Renewals succeed again after `renew_error`. */
  renew_recovered: (ref: RheoConsumerRef) => void;
  /** A handler finished after the drain timed out; its outcome was not written (the event will be redelivered). */
  late_settle: (ref: RheoConsumerRef, lease: Lease, outcome: Outcome) => void;
};

/** A snapshot of one running consumer, for health and diagnostics. */
export interface RheoConsumerState extends RheoConsumerRef {
  state: ConsumerState;
  /** Unsettled leases held. */
  inflight: number;
  /** Handlers running now. */
  running: number;
  /** The fetch error while backing off, else null. */
  lastError: RheoError | null;
  /** The renewal error while renewals are failing (leases at risk of expiring under their handlers), else null. */
  renewError: RheoError | null;
  /** The consumer's last claim found the group paused (`Rheo#pauseGroup`): it claims nothing until the group resumes. */
  paused: boolean;
}

/** What `RheoServer.unwrap()` returns. */
export interface RheoServerInternals {
  rheo: Rheo;
  /** The running Groups, by `'stream/group'`. */
  groups: ReadonlyMap<string, Consumer>;
}

interface Running {
  consumer: ResolvedConsumer;
  group: Consumer;
  ref: RheoConsumerRef;
  /** The group as stored (maxAttempts and retry decide what a nack means). */
  config: GroupConfig;
}

/**
 * The nestjs-rheo transport: runs one runtime `Consumer` per `@RheoConsumer` handler
 * of its instance. Provided by `RheoModule` (so it is built with the instance's
 * backend); connect it with
 * `app.connectMicroservice({ strategy: app.get(RheoServer) }, { inheritAppConfig: true })`.
 */
export class RheoServer extends Server<RheoServerEvents, RheoServerStatus> implements CustomTransportStrategy {
  /**
   * Nest 12: the transport awaits each handler's stream and settles by its
   * outcome, so Nest need not log unmatched RpcExceptions again. Inert on Nest 11.
   */
  readonly propagatesEventHandlerErrors = true;
  protected readonly logger = new Logger(RheoServer.name);
  private readonly emitter = new EventEmitter();
  private readonly running = new Map<string, Running>();
  /** Nest's handler (guards, pipes, interceptors, filters around the method) per `'stream/group'`. */
  private readonly handlers = new Map<string, MessageHandler>();
  private readonly backingOff = new Set<string>();
  /** The stored configuration of each consumer's group, by `'stream/group'` (from ensureGroup). */
  private readonly configs = new Map<string, GroupConfig>();
  /** Consumers whose group config is being read again (rereadConfig). */
  private readonly rereading = new Set<string>();
  /** What `@OnRheoEvent` methods listen to: this server's events only. */
  private readonly events = new RheoEventHub();
  private listening?: Promise<void>;
  private closing?: Promise<void>;
  private draining?: Promise<void>;
  private trimmer?: Trimmer;
  /** The broadcast consumers' groups of this instance (docs/adr/031), once one joined. */
  private memberships?: BroadcastMemberships;

  constructor(private readonly instance: RheoInstance) {
    super();
    this.transportId = rheoTransportId(instance.name);
    quietReportedRpcErrors();
  }

  /** The instance name this server belongs to. */
  get instanceName(): string {
    return this.instance.name;
  }

  /**
   * How far Nest got with this transport: `'unbound'` (no `@RheoConsumer` of this
   * instance registered with it: no `connectMicroservice` / `createMicroservice` with it
   * yet), `'bound'` (its handlers registered, not started), `'started'`
   * (`startAllMicroservices()` or a standalone `listen()` called it).
   */
  get transportState(): 'unbound' | 'bound' | 'started' {
    if (this.listening) return 'started';
    return this.getHandlers().size > 0 ? 'bound' : 'unbound';
  }

  /**
   * Ping the backend, create missing streams and groups, then start one Consumer per
   * consumer. `callback(err)` (rejecting `app.listen()` / `startAllMicroservices()`)
   * on an unreachable backend or invalid consumer options, with a RheoError that
   * names the handler.
   */
  listen(callback: (err?: unknown, ...optionalParams: unknown[]) => void): void {
    if (!this.listening) this.listening = this.start();
    this.listening.then(
      () => callback(),
      (err) => callback(err),
    );
  }

  private async start(): Promise<void> {
    try {
      if (this.closing)
        throw new RheoError('failed', `RheoServer(${this.instance.name}) is closed; build a new application to listen again`);
      const consumers = collectConsumers(this.messageHandlers, this.instance, this.logger, this.handlers);
      warnUnmatchedConfiguration(consumers, this.instance, this.logger);
      const rheo = this.instance.rheo;
      try {
        await rheo.ping();
      } catch (err) {
        const e = toRheoError(err, 'backend_unavailable');
        throw new RheoError(e.code, `RheoServer(${this.instance.name}): the ${rheo.backend.name} backend is unreachable: ${e.message}`, {
          cause: err,
        });
      }
      this.instance.announceBackend();
      await this.instance.ensureStreams();
      await checkStreams(this.instance.rheo, consumers);
      for (const c of consumers) await this.ensureGroup(c);
      if (this.closing) return;
      for (const c of consumers) this.startConsumer(c);
      this.trimmer = startBackgroundTrim(this.instance.rheo, this.instance.trimIntervalMs, this.logger);
      this._status$.next('connected');
    } catch (err) {
      // A consumer already started must not strand what it claimed: give it back.
      await this.drainAll().catch(() => undefined);
      this._status$.next('disconnected');
      throw err;
    }
  }

  private async ensureGroup(c: ResolvedConsumer): Promise<void> {
    if (c.broadcast) {
      // A group of this instance's own, at the end of the stream: nothing of an existing group to compare.
      this.memberships ??= new BroadcastMemberships(this.instance.rheo, this.logger);
      const { stream, group } = c.run;
      const { maxAttempts, retry, ordering, keyConcurrency } = c.group;
      let joined: BroadcastJoined;
      try {
        joined = await this.memberships.join({
          key: c.key,
          handlerName: c.handlerName,
          stream,
          group,
          ttlMs: c.broadcast.ttlMs,
          maxAttempts,
          retry,
          ordering,
          keyConcurrency,
        });
      } catch (err) {
        throw prefixed(c.handlerName, blameSource(c.sources, err));
      }
      // From here on the consumer runs, reports and is checked by health on its instance's group.
      c.run.group = joined.group;
      this.configs.set(c.key, joined.config);
      return;
    }
    const { handlerName, key } = c;
    const declared = { handlerName, key, stream: c.run.stream, group: c.run.group, declared: c.group };
    try {
      this.configs.set(key, await declaredGroup(this.instance.rheo, this.logger, this.instance.groupSettings, declared));
    } catch (err) {
      throw prefixed(handlerName, blameSource(c.sources, err));
    }
  }

  private startConsumer(consumer: ResolvedConsumer): void {
    const handler = this.handlers.get(consumer.key)!;
    const ref: RheoConsumerRef = { stream: consumer.run.stream, group: consumer.run.group, handlerName: consumer.handlerName };
    const config = this.configs.get(consumer.key)!;
    const { batch, ...single } = consumer.run;
    const group = batch
      ? new Consumer(this.instance.rheo, { ...single, batch }, (leases, control) => this.deliverBatch(ref, handler, leases, control))
      : new Consumer(this.instance.rheo, single, (lease, control) => this.deliver(ref, handler, lease, control));
    const label = consumerLabel(ref);
    group.on('fetch_error', (error) => {
      if (!this.backingOff.has(consumer.key)) this.logger.error(`${label}: fetch failed, backing off: ${error.message}`);
      this.backingOff.add(consumer.key);
      if (!this.closing) this._status$.next('reconnecting');
      this.emitter.emit('fetch_error', ref, error);
      this.events.emit('fetch_error', { ...ref, error });
    });
    group.on('recovered', () => {
      this.backingOff.delete(consumer.key);
      this.logger.log(`${label}: fetching again`);
      if (this.backingOff.size === 0 && !this.closing) this._status$.next('connected');
      this.emitter.emit('recovered', ref);
      this.events.emit('recovered', { ...ref });
    });
    // The Consumer tells a change only (paused, then claiming again): one line each, however long the pause.
    group.on('paused', (paused) => {
      if (paused) this.logger.warn(`${label}: the group is paused (Rheo#pauseGroup); claiming nothing until it resumes`);
      else this.logger.log(`${label}: the group is no longer paused; claiming again`);
    });
    group.on('settled', ({ lease, outcome, written }) => {
      this.emitter.emit('settled', ref, lease, outcome);
      this.reportSettled(consumer.key, ref, lease, outcome, written);
    });
    group.on('dead_letter', (d) => {
      // The config as last read: a settle that told of another stored maxAttempts had it read again.
      const { maxAttempts } = this.configs.get(consumer.key) ?? config;
      this.logger.warn(expiredDeadLetterLine(ref, d, maxAttempts));
      this.events.emit('dead_letter', { ...ref, ...d, cause: 'lease_expired', maxAttempts });
    });
    group.on('settle_error', ({ lease, outcome, error }) => {
      this.logger.warn(`${label}: settling event ${lease.event.id} (${outcome.kind}) failed: ${error.message}`);
      this.emitter.emit('settle_error', ref, lease, outcome, error);
      this.events.emit('settle_error', { ...deliveryEvent(ref, lease), outcome, error });
    });
    group.on('lease_lost', (lease) => {
      this.logger.warn(`${label}: lease on event ${lease.event.id} lost (expired and taken over); the result of this attempt is discarded`);
      this.emitter.emit('lease_lost', ref, lease);
      this.events.emit('lease_lost', deliveryEvent(ref, lease));
    });
    group.on('renew_error', ({ error, leases, consecutive }) => {
      // One warning per burst, not one per lease or per round.
      if (consecutive === 1) this.logger.warn(`${label}: renewing ${leases} lease(s) failed, retrying: ${error.message}`);
      this.emitter.emit('renew_error', ref, error, leases, consecutive);
    });
    group.on('renew_recovered', () => {
      this.logger.log(`${label}: renewals succeed again`);
      this.emitter.emit('renew_recovered', ref);
    });
    group.on('late_result', ({ leases, timeoutMs, ended }) => {
      const what = leases.length === 1 ? `event ${leases[0].event.id}` : `a batch of ${leases.length} events`;
      this.logger.warn(`${label}: the handler of ${what} ${ended} after its ${timeoutMs} ms timeout; its result is dropped`);
    });
    group.on('late_settle', ({ lease, outcome }) => {
      this.logger.warn(
        `${label}: event ${lease.event.id} finished (${outcome.kind}) after the drain timed out; not settled, it will be redelivered`,
      );
      this.emitter.emit('late_settle', ref, lease, outcome);
    });
    this.running.set(consumer.key, { consumer, group, ref, config });
    group.start();
    const settings = settingsSnapshot(group.config, config);
    this.logger.log(`${label}: consumer started: ${settingsText(settings)}`);
    this.events.emit('consumer_start', { ...ref, settings });
  }

  /**
   * A written retry or dead letter: one WARN line, and the event for `@OnRheoEvent`,
   * told as the store says it wrote it (`written`), else by the group's config.
   */
  private reportSettled(key: string, ref: RheoConsumerRef, lease: Lease, outcome: Outcome, written?: SettleWritten): void {
    if (this.events.has('settled')) this.events.emit('settled', { ...deliveryEvent(ref, lease), outcome });
    const config = this.configs.get(key)!;
    if (written?.maxAttempts !== undefined && written.maxAttempts !== config.maxAttempts) this.rereadConfig(key, ref);
    const report = settleReport(lease, outcome, config, written);
    if (!report) return;
    this.logger.warn(settleLine(ref, lease, report));
    const { reason, maxAttempts } = report;
    if (report.kind === 'retry') this.events.emit('retry', { ...deliveryEvent(ref, lease), reason, maxAttempts, delayMs: report.delayMs });
    else this.events.emit('dead_letter', { ...deliveryEvent(ref, lease), reason, maxAttempts, cause: report.cause });
  }

  /**
   * Another process changed the group (updateGroup): read its config again, once
   * (not once per settle that tells of it), for what is told by the config later
   * (a dead letter of an expired lease). A failed read leaves the old one.
   */
  private rereadConfig(key: string, ref: RheoConsumerRef): void {
    if (this.rereading.has(key)) return;
    this.rereading.add(key);
    this.instance.rheo
      .listGroups(ref.stream)
      .then((groups) => {
        const fresh = groups.find((g) => g.group === ref.group);
        if (!fresh) return;
        this.configs.set(key, fresh);
        const running = this.running.get(key);
        if (running) running.config = fresh;
      })
      .catch(() => undefined)
      .finally(() => this.rereading.delete(key));
  }

  /**
   * A delivery that failed (not a deliberate RheoReject / RheoRetry): its stack at
   * DEBUG (the WARN line comes when the outcome is written), and `handler_error`.
   */
  private reportFailure(ref: RheoConsumerRef, leases: readonly Lease[], reason: string, ctx: RheoDeliveryContext): void {
    const { error, deliberate } = capturedError(ctx);
    if (deliberate) return;
    const lease = leases[0];
    const which = leases.length === 1 ? `event ${lease.event.id} attempt ${lease.attempt}` : `a batch of ${leases.length} events`;
    if (error instanceof Error && error.stack) this.logger.debug(`${consumerLabel(ref)}: ${which} threw: ${error.stack}`);
    if (this.events.has('handler_error')) {
      for (const l of leases)
        this.events.emit('handler_error', { ...deliveryEvent(ref, l), reason, error: error ?? new RheoError('failed', reason) });
    }
  }

  /** One delivery through Nest's pipeline; never throws: every result is an outcome. */
  private deliver(ref: RheoConsumerRef, handler: MessageHandler, lease: Lease, control: DeliveryControl): Promise<Outcome> {
    return this.runDelivery(ref, handler, new RheoContext(lease, control), [lease]);
  }

  /** One batch through Nest's pipeline (`@Payload()` the array of payloads); the outcome applies to events without their own. */
  private deliverBatch(ref: RheoConsumerRef, handler: MessageHandler, leases: readonly Lease[], control: BatchControl): Promise<Outcome> {
    return this.runDelivery(ref, handler, new RheoBatchContext(leases, control), leases);
  }

  private runDelivery(
    ref: RheoConsumerRef,
    handler: MessageHandler,
    ctx: RheoContext | RheoBatchContext,
    leases: readonly Lease[],
  ): Promise<Outcome> {
    const invoke = async (): Promise<Outcome> => {
      const outcome = await deliverThroughNest(handler, ctx);
      if (outcome.kind !== 'ack') this.reportFailure(ref, leases, outcome.reason, ctx);
      return outcome;
    };
    // Tracing hooks (setOnProcessingStartHook) wrap the delivery as they wrap Nest's own transports.
    return new Promise<Outcome>((resolve) => {
      let started = false;
      const done = () => {
        started = true;
        const p = invoke().finally(() => this.onProcessingEndHook?.(this.transportId!, ctx));
        p.then(resolve);
        return p;
      };
      try {
        this.onProcessingStartHook(this.transportId!, ctx, done);
      } catch (err) {
        if (!started) resolve({ kind: 'nack', reason: `processing hook failed: ${toRheoError(err).message}` });
      }
    });
  }

  /**
   * Stop fetching, give back at once every prefetched lease no handler started
   * on, wait up to `drainTimeoutMs` for running handlers and their settles
   * (renewals go on meanwhile), then stop: the signals of handlers still running
   * abort, and their leases expire and are redelivered. Idempotent.
   */
  close(): Promise<void> {
    if (!this.closing) this.closing = this.shutdown();
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    this.trimmer?.stop();
    await this.listening?.catch(() => undefined);
    this.trimmer?.stop();
    await this.drainAll();
    this._status$.next('disconnected');
  }

  /** Drain every consumer once (a failed start and the later shutdown share it), logging each stop and a summary. */
  private drainAll(): Promise<void> {
    // Broadcast groups go after the drain: a handler still running may settle in its group until then.
    if (!this.draining) this.draining = this.drainConsumers().then(() => this.memberships?.leaveAll());
    return this.draining;
  }

  private async drainConsumers(): Promise<void> {
    const timeoutMs = this.instance.options.drainTimeoutMs ?? DEFAULT_DRAIN_TIMEOUT_MS;
    const all = [...this.running.values()];
    if (all.length === 0) return;
    const startedAt = Date.now();
    const before = all.map(({ group }) => ({ running: group.running, released: group.stats.released }));
    const results = await Promise.all(
      all.map(async ({ consumer, group, ref }) => {
        const result = await group.drain(timeoutMs);
        const label = consumerLabel(ref);
        if (result === 'timeout') {
          this.logger.warn(
            `${consumer.key}: drain timed out after ${timeoutMs} ms with ${group.inflight} lease(s) unsettled; they will be redelivered after expiry`,
          );
        }
        this.logger.log(
          `${label}: consumer stopped${result === 'timeout' ? ` (drain timed out, ${group.inflight} lease(s) left to expire)` : ''}`,
        );
        this.events.emit('consumer_stop', { ...ref, result, unsettled: result === 'timeout' ? group.inflight : 0 });
        return result;
      }),
    );
    let finished = 0;
    let released = 0;
    let left = 0;
    all.forEach(({ group }, i) => {
      finished += before[i].running - group.running;
      released += group.stats.released - before[i].released;
      left += group.state === 'stopped' && results[i] === 'timeout' ? group.inflight : 0;
    });
    this.logger.log(
      `Drained ${all.length} consumer(s) in ${Date.now() - startedAt} ms: ${finished} running handler(s) finished, ${released} prefetched lease(s) released` +
        (left > 0 ? `, ${left} lease(s) left to expire` : ''),
    );
    if (results.includes('timeout')) this.logger.warn('Closed with unsettled leases (see above)');
  }

  /** Snapshots of the running consumers. */
  consumers(): RheoConsumerState[] {
    return [...this.running.values()].map(({ consumer, group }) => ({
      stream: consumer.run.stream,
      group: consumer.run.group,
      handlerName: consumer.handlerName,
      state: group.state,
      inflight: group.inflight,
      running: group.running,
      lastError: group.lastError,
      renewError: group.renewalError,
      paused: group.paused,
    }));
  }

  /** Subscribe to transport events (`fetch_error`, `recovered`, `settled`, `settle_error`, `lease_lost`, `renew_error`, `renew_recovered`, `late_settle`). */
  on<
    EventKey extends keyof RheoServerEvents = keyof RheoServerEvents,
    EventCallback extends RheoServerEvents[EventKey] = RheoServerEvents[EventKey],
  >(event: EventKey, callback: EventCallback): this {
    this.emitter.on(event, callback as (...args: unknown[]) => void);
    return this;
  }

  /**
   * Listen to one of this server's runtime events (what `@OnRheoEvent` methods
   * are wired to): one payload object per event, see {@link RheoEventMap}. A
   * listener that throws or rejects is logged; consumption goes on. `name`
   * identifies the listener in that log. Returns the function that removes it.
   */
  onRheoEvent<K extends RheoEventName>(event: K, listener: RheoEventListener<K>, name?: string): () => void {
    if (!(RHEO_EVENT_NAMES as readonly string[]).includes(event))
      throw RheoError.invalid('event', `must be one of ${RHEO_EVENT_NAMES.join(', ')} (got ${JSON.stringify(event)})`);
    if (typeof listener !== 'function') throw RheoError.invalid('listener', 'must be a function');
    return this.events.on(event, listener, name);
  }

  /** The core facade and the running Groups. */
  unwrap<T = RheoServerInternals>(): T {
    const groups = new Map([...this.running].map(([key, r]) => [key, r.group]));
    return { rheo: this.instance.rheo, groups } as T;
  }
}
