// Subscribes to every diagnostics channel nestjs-rheo publishes (each
// `rheo:<operation>` TracingChannel, `rheo:process` and every plain channel) and
// keeps what each delivered, so a test can check names, order and exact fields.
import { subscribe, tracingChannel, unsubscribe } from 'node:diagnostics_channel';
import { CHANNELS, TRACED_OPERATIONS } from '../../lib';

export type TraceEvent = 'start' | 'end' | 'asyncStart' | 'asyncEnd' | 'error';

/** One delivery on one channel; `message` is a copy taken when it was published. */
export interface Recorded {
  channel: string;
  /** The TracingChannel event; absent on plain channels. */
  event?: TraceEvent;
  message: Record<string, unknown>;
}

/** Every TracingChannel name: one per traced operation, and `rheo:process`. */
export const TRACING_CHANNEL_NAMES: string[] = [...TRACED_OPERATIONS.map((op) => `rheo:${op}`), CHANNELS.process];

/** Every plain channel name. */
export const PLAIN_CHANNEL_NAMES: string[] = Object.values(CHANNELS).filter((name) => name !== CHANNELS.process);

export class ChannelRecorder {
  readonly records: Recorded[] = [];
  /** Every channel that delivered something since construction (not emptied by {@link clear}). */
  readonly everSeen = new Set<string>();
  /** Everything recorded since construction, for {@link serialised}. */
  private readonly all: Recorded[] = [];
  private readonly undo: Array<() => void> = [];

  constructor() {
    for (const name of TRACING_CHANNEL_NAMES) {
      const ch = tracingChannel(name);
      // A TracingChannel reuses one context object across its events: copy it at each one.
      const on = (event: TraceEvent) => (m: unknown) => this.add({ channel: name, event, message: { ...(m as object) } });
      const handlers = { start: on('start'), end: on('end'), asyncStart: on('asyncStart'), asyncEnd: on('asyncEnd'), error: on('error') };
      ch.subscribe(handlers);
      this.undo.push(() => ch.unsubscribe(handlers));
    }
    for (const name of PLAIN_CHANNEL_NAMES) {
      const fn = (m: unknown) => this.add({ channel: name, message: { ...(m as object) } });
      subscribe(name, fn);
      this.undo.push(() => unsubscribe(name, fn));
    }
  }

  private add(record: Recorded): void {
    this.records.push(record);
    this.all.push(record);
    this.everSeen.add(record.channel);
  }

  /** Stop listening (the channels go back to costing one read). */
  close(): void {
    for (const fn of this.undo.splice(0)) fn();
  }

  /** Forget what was recorded so far. */
  clear(): void {
    this.records.length = 0;
  }

  /** Records of one channel (all events, in order). */
  on(channel: string): Recorded[] {
    return this.records.filter((r) => r.channel === channel);
  }

  /** Messages of one plain channel, in order. */
  messages(channel: string): Record<string, unknown>[] {
    return this.on(channel).map((r) => r.message);
  }

  /**
   * Every message since construction as JSON, leaving out `error` (the thrown value is handed over
   * for stack traces and may quote anything): what a telemetry exporter may see.
   */
  serialised(): string {
    return JSON.stringify(
      this.all.map((r) => r.message),
      (key, value: unknown) => (key === 'error' ? undefined : value),
    );
  }
}
