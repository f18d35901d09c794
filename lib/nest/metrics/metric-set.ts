// The Prometheus metrics of one (registry, prefix), fed by the diagnostics
// channels (lib/core/diagnostics.ts). Shared by every instance that chose the
// same registry and prefix (two named instances in one app, two apps in one
// process): the metrics are registered once, each instance adds what is its
// own, and the last one to leave unsubscribes and unregisters, so a closed app
// leaves no subscriber (no cost on the hot paths) and no metric behind.
import type { Channel } from 'node:diagnostics_channel';
import type { Counter, Gauge, Histogram, Registry } from 'prom-client';
import {
  channels,
  type DeadLetterMessage,
  type FlowHeldMessage,
  type LeaseLostMessage,
  type OperationMessage,
  operationChannel,
  processChannel,
  type ProcessMessage,
  type SettleMessage,
} from '../../core/diagnostics';
import { RheoError } from '../../core/errors';
import type { GroupInfo } from '../../core/types';
import type { ResolvedMetrics } from './resolve';

/** What an instance brings to a metric set: what is its own, its clock, its groups' figures. */
export interface MetricsSource {
  ownsConsumer(consumerId: string): boolean;
  /** The operation came from this instance's Rheo (`OperationMessage.rheo`). */
  ownsRheo(id: string): boolean;
  consumersChanged(): void;
  /** The instance's clock (the backend's), ms: event timestamps are on it. */
  now(): number;
  groupFigures(): Promise<GroupInfo[]>;
  /** A scrape could not read the figures. */
  figuresFailed(error: unknown): void;
}

/** Delivery outcomes as `rheo_deliveries_total` labels them. */
export type DeliveryOutcome = 'ack' | 'retry' | 'reject' | 'dead_letter' | 'lease_lost' | 'expired';

// Handler runs are short; append-to-handler spans a backlog too (minutes, hours).
const HANDLER_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600];

const sets = new WeakMap<Registry, Map<string, MetricSet>>();

export class MetricSet {
  private readonly sources = new Set<MetricsSource>();
  private readonly appended: Counter<'stream'>;
  private readonly repeats: Counter<'stream'>;
  private readonly deliveries: Counter<'stream' | 'group' | 'outcome'>;
  private readonly flowHeld: Counter<'stream' | 'group' | 'reason'>;
  private readonly handlerDuration: Histogram<'stream' | 'group'>;
  private readonly appendToHandler: Histogram<'stream' | 'group'>;
  /** Full names of the metrics registered, to unregister them. */
  private readonly names: string[] = [];
  /** Handler start times (performance.now()) by `rheo:process` message: the same object reaches asyncEnd. */
  private readonly started = new WeakMap<ProcessMessage, number>();
  private readonly unsubscribe: Array<() => void> = [];

  /** Join the set of `resolved`'s registry and prefix, creating (and registering) it for the first source. */
  static attach(resolved: ResolvedMetrics, source: MetricsSource): MetricSet {
    let byPrefix = sets.get(resolved.registry);
    if (!byPrefix) sets.set(resolved.registry, (byPrefix = new Map()));
    let set = byPrefix.get(resolved.prefix);
    if (!set) byPrefix.set(resolved.prefix, (set = new MetricSet(resolved)));
    set.sources.add(source);
    return set;
  }

  /** Leave the set; the last source out unsubscribes and unregisters the metrics. */
  detach(source: MetricsSource): void {
    if (!this.sources.delete(source) || this.sources.size > 0) return;
    for (const off of this.unsubscribe.splice(0)) off();
    for (const name of this.names) this.resolved.registry.removeSingleMetric(name);
    sets.get(this.resolved.registry)?.delete(this.resolved.prefix);
  }

  private constructor(private readonly resolved: ResolvedMetrics) {
    const { prom, prefix } = resolved;
    const registers = [resolved.registry];
    const named = <T>(name: string, make: (fullName: string) => T): T => {
      const fullName = prefix + name;
      try {
        const metric = make(fullName);
        this.names.push(fullName);
        return metric;
      } catch (err) {
        // Registered by someone else (prom-client throws on a second registration): undo ours and say which option to change.
        for (const n of this.names) resolved.registry.removeSingleMetric(n);
        throw new RheoError('invalid_argument', `metrics.prefix: ${(err as Error).message}; choose another prefix or registry`, {
          field: 'metrics.prefix',
          cause: err,
        });
      }
    };
    this.appended = named(
      'appended_events_total',
      (name) => new prom.Counter({ name, help: 'Events appended (stored), by stream.', labelNames: ['stream'], registers }),
    );
    this.repeats = named(
      'append_repeats_total',
      (name) =>
        new prom.Counter({
          name,
          help: 'Events appended again under an id the stream held (or twice in one batch): idempotent repeats, nothing stored.',
          labelNames: ['stream'],
          registers,
        }),
    );
    this.deliveries = named(
      'deliveries_total',
      (name) =>
        new prom.Counter({
          name,
          help: 'Deliveries by how they ended: ack, retry, reject, dead_letter, lease_lost, expired.',
          labelNames: ['stream', 'group', 'outcome'],
          registers,
        }),
    );
    this.flowHeld = named(
      'flow_held_total',
      (name) =>
        new prom.Counter({
          name,
          help:
            "What the group's flow limits held back: fetches a group-wide limit took below what they asked for (reason " +
            'group_concurrency, rate_limit), and events set waiting for their key (reason key).',
          labelNames: ['stream', 'group', 'reason'],
          registers,
        }),
    );
    this.handlerDuration = named(
      'handler_duration_seconds',
      (name) =>
        new prom.Histogram({
          name,
          help: 'Handler run time, from its call to its result.',
          labelNames: ['stream', 'group'],
          buckets: HANDLER_BUCKETS,
          registers,
        }),
    );
    this.appendToHandler = named(
      'append_to_handler_seconds',
      (name) =>
        new prom.Histogram({
          name,
          help: "End-to-end latency: from the event's timestamp (its append) to the start of a handler run on it.",
          labelNames: ['stream', 'group'],
          buckets: LATENCY_BUCKETS,
          registers,
        }),
    );
    const gauge = (name: string, help: string, value: (info: GroupInfo) => number): void => {
      const g: Gauge<'stream' | 'group'> = named(
        name,
        (fullName) =>
          new prom.Gauge({
            name: fullName,
            help,
            labelNames: ['stream', 'group'],
            registers,
            collect: () => this.collect(g, value),
          }),
      );
    };
    gauge('group_lag', 'Events not yet finished by the group (sum over partitions), read at scrape time.', (i) => i.lag.lag);
    gauge('group_inflight', 'Events leased to consumers now, read at scrape time.', (i) => i.inflight);
    gauge('group_dead_letters', 'Dead letters the group holds, read at scrape time.', (i) => i.deadLetters);
    gauge(
      'group_oldest_unsettled_age_seconds',
      'Age of the oldest event the group has not finished (0 when none), read at scrape time.',
      (i) => (i.oldestUnsettledAgeMs ?? 0) / 1000,
    );
    gauge(
      'group_paused',
      'Whether a pause holds the group back from claiming (1) or not (0), read at scrape time; its lag grows while paused.',
      (i) => (i.paused ? 1 : 0),
    );
    gauge(
      'group_waiting_for_key',
      'Events the group has reached that wait for their key (ordering key, keyConcurrency), read at scrape time.',
      (i) => i.waitingForKey,
    );
    this.subscribe();
  }

  private subscribe(): void {
    // The channels hand listeners `unknown`; each of ours knows its channel's message type (diagnostics.ts).
    const on = <M>(ch: Channel, fn: (m: M) => void) => {
      const listener = fn as (m: unknown) => void;
      ch.subscribe(listener);
      this.unsubscribe.push(() => ch.unsubscribe(listener));
    };
    const appended = (m: OperationMessage) => {
      if (m.error !== undefined || m.stream === undefined || !this.some((s) => s.ownsRheo(m.rheo))) return;
      const count = m.count ?? 1;
      const repeats = Math.min(m.repeats ?? 0, count);
      // Both series exist from the stream's first append on, so rate() sees a 0 before the first repeat.
      this.appended.inc({ stream: m.stream }, count - repeats);
      this.repeats.inc({ stream: m.stream }, repeats);
    };
    on(operationChannel('append').asyncEnd, appended);
    on(operationChannel('appendBatch').asyncEnd, appended);
    on(channels.settle, (m: SettleMessage) => this.delivered(m, m.outcome));
    // A settle's dead letter is counted by its settle message; one a fetch made has no settle, only this.
    on(channels.deadLetter, (m: DeadLetterMessage) => {
      if (m.cause === 'lease_expired') this.delivered(m, 'dead_letter');
    });
    on(channels.leaseLost, (m: LeaseLostMessage) => this.delivered(m, 'lease_lost'));
    on(channels.leaseExpired, (m: LeaseLostMessage) => this.delivered(m, 'expired'));
    on(channels.flowHeld, (m: FlowHeldMessage) => {
      if (!this.owner(m.consumerId)) return;
      const labels = { stream: m.stream, group: m.group };
      if (m.limit !== undefined) this.flowHeld.inc({ ...labels, reason: m.limit });
      if (m.waitingForKey) this.flowHeld.inc({ ...labels, reason: 'key' }, m.waitingForKey);
    });
    on(channels.consumerStart, () => this.sources.forEach((s) => s.consumersChanged()));
    on(processChannel.start, (m: ProcessMessage) => {
      const source = this.owner(m.consumerId);
      if (!source) return;
      this.started.set(m, performance.now());
      // The backend's clock stamped the event: read the same clock (clock skew could make it negative: 0 then).
      const latency = Math.max(0, source.now() - m.eventTimestamp.getTime()) / 1000;
      this.appendToHandler.observe({ stream: m.stream, group: m.group }, latency);
    });
    on(processChannel.asyncEnd, (m: ProcessMessage) => {
      const t0 = this.started.get(m);
      if (t0 === undefined) return;
      this.started.delete(m);
      this.handlerDuration.observe({ stream: m.stream, group: m.group }, (performance.now() - t0) / 1000);
    });
  }

  private delivered(m: { stream: string; group: string; consumerId: string }, outcome: DeliveryOutcome): void {
    if (this.owner(m.consumerId)) this.deliveries.inc({ stream: m.stream, group: m.group, outcome });
  }

  private owner(consumerId: string): MetricsSource | undefined {
    for (const s of this.sources) if (s.ownsConsumer(consumerId)) return s;
    return undefined;
  }

  private some(test: (s: MetricsSource) => boolean): boolean {
    for (const s of this.sources) if (test(s)) return true;
    return false;
  }

  /** One gauge at scrape time, from every source's (cached) figures; a group two sources share is reported once. */
  private async collect(gauge: Gauge<'stream' | 'group'>, value: (info: GroupInfo) => number): Promise<void> {
    gauge.reset();
    const seen = new Set<string>();
    for (const source of this.sources) {
      let figures: GroupInfo[];
      try {
        figures = await source.groupFigures();
      } catch (err) {
        source.figuresFailed(err);
        continue;
      }
      for (const info of figures) {
        const key = `${info.stream}\0${info.group}`;
        if (seen.has(key)) continue;
        seen.add(key);
        gauge.set({ stream: info.stream, group: info.group }, value(info));
      }
    }
  }
}
