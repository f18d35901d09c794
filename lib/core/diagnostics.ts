// Node's diagnostics_channel: the hooks OpenTelemetry, Prometheus metrics, the
// Nest logs and any user's own tooling sit on (undici and pg expose theirs the
// same way). Every publish is guarded by `hasSubscribers`, so a channel nobody
// listens to costs one property read. Messages never carry payloads or metadata
// values: ids, positions, counts, outcomes and reasons only.
// docs/observability.md has the table of channels and fields.
import { channel, type Channel, tracingChannel, type TracingChannel } from 'node:diagnostics_channel';
import type { GroupPause } from './types';

/** Facade operations traced by a `rheo:<operation>` TracingChannel. */
export const TRACED_OPERATIONS = [
  'append',
  'appendBatch',
  'query',
  'fetch',
  'renew',
  'ack',
  'nack',
  'reject',
  'settleMany',
  'replay',
  'reset',
  'redrive',
  'createStream',
  'createGroup',
  'deleteGroup',
  'trim',
  'purgeDeadLetters',
] as const;

export type TracedOperation = (typeof TRACED_OPERATIONS)[number];

/**
 * The context object of a `rheo:<operation>` TracingChannel, the same object on
 * its `start`, `end`, `asyncStart`, `asyncEnd` and `error` events (as with
 * `TracingChannel#tracePromise`, but never with the `result`: it may hold
 * payloads). Fields that do not apply are absent. A call refused by its argument
 * checks throws before `start`; from the first store access on, a failure is
 * published on `error`.
 */
export interface OperationMessage {
  operation: TracedOperation;
  /** The `Rheo#id` of the instance that ran it: two instances in one process share the channels. */
  rheo: string;
  stream?: string;
  group?: string;
  /** Known at start: events appended, leases renewed or settled; by `asyncEnd`: events a query returned, leases fetched, events replayed, redriven, trimmed or purged. */
  count?: number;
  /**
   * append and appendBatch, by `asyncEnd`: how many of `count` were idempotent repeats (an id the
   * stream held already, or one given twice in the batch), so not written; absent when the backend
   * does not tell.
   */
  repeats?: number;
  /** The single lease's or event's identity (ack, nack, reject, renew of one lease; append of one event after `asyncEnd`). */
  eventId?: string;
  partition?: number;
  sequence?: number;
  attempt?: number;
  consumerId?: string;
  /** nack and reject: the reason given. */
  reason?: string;
  /** On `error`: what the operation threw (a RheoError). */
  error?: unknown;
}

/** `rheo:lease`: one fetch handed out leases (not published for an empty fetch). */
export interface LeaseMessage {
  stream: string;
  group: string;
  consumerId: string;
  count: number;
}

/** Where a delivery stands: the event and the attempt. */
export interface DeliveryMessage {
  stream: string;
  group: string;
  consumerId: string;
  eventId: string;
  partition: number;
  sequence: number;
  attempt: number;
}

/**
 * `rheo:dead_letter`: a settle dead-lettered the event for the group, or a fetch
 * did (`lease_expired`: `consumerId` is then the fetching consumer's, not the one
 * that held the expired lease).
 */
export interface DeadLetterMessage extends DeliveryMessage {
  reason: string;
  /**
   * `rejected`: the handler (or caller) rejected it; `max_attempts`: a nack on the group's last attempt;
   * `lease_expired`: its lease expired on the group's last attempt (nobody settled it: a crash, a lost
   * process) and the next claim dead-lettered it. No `rheo:settle` message goes with this one.
   */
  cause: 'rejected' | 'max_attempts' | 'lease_expired';
}

/** What a settle decided for a delivery, in the vocabulary of metrics. */
export type SettleOutcome = 'ack' | 'retry' | 'reject' | 'dead_letter';

/** `rheo:settle`: a settle was written (one message per lease of a batch that succeeded). */
export interface SettleMessage extends DeliveryMessage {
  outcome: SettleOutcome;
  reason?: string;
}

/** `rheo:frontier`: this process saw a partition's frontier at a new value (from a lag or groupInfo read). */
export interface FrontierMessage {
  stream: string;
  group: string;
  partition: number;
  frontier: number;
  highWatermark: number;
}

/** `rheo:consumer:start` and `rheo:consumer:stop`: a runtime Consumer started or stopped. */
export interface ConsumerMessage {
  stream: string;
  group: string;
  consumerId: string;
  /** stop only: the drain finished (`drained`) or gave up (`timeout`). */
  reason?: 'drained' | 'timeout';
}

/** `rheo:fetch:error`: a runtime fetch failed; the Consumer backs off. */
export interface FetchErrorMessage {
  stream: string;
  group: string;
  consumerId: string;
  /** The RheoError's code. */
  code: string;
  reason: string;
}

/** `rheo:handler:error`: a handler threw (or returned an error) for a delivery. */
export interface HandlerErrorMessage extends DeliveryMessage {
  reason: string;
  /** The thrown value, for stack traces (never serialise it into telemetry blindly: it may quote a payload). */
  error: unknown;
}

/** `rheo:lease:lost` (a renewal found the lease taken over) and `rheo:lease:expired` (dropped or aborted because it expired). */
export interface LeaseLostMessage extends DeliveryMessage {
  reason: string;
}

/** `rheo:renew:error`: a renewal round failed for a reason other than losing leases. */
export interface RenewErrorMessage {
  stream: string;
  group: string;
  consumerId: string;
  code: string;
  reason: string;
  leases: number;
  consecutive: number;
}

/**
 * The context object of the `rheo:process` TracingChannel: one handler run of the
 * runtime. `outcome` and `reason` are set before `asyncEnd` (the handler's own
 * decision: `ack`, `nack` or `reject`; a throw is a `nack` with its message).
 */
export interface ProcessMessage extends DeliveryMessage {
  /** When the event was appended (its timestamp): `start` minus this is the append-to-handler latency. */
  eventTimestamp: Date;
  outcome?: 'ack' | 'nack' | 'reject';
  reason?: string;
  error?: unknown;
}

/** `rheo:clock_skew`: a measurement of the store's time found this process's clock far from it (ADR 041). */
export interface ClockSkewMessage {
  /** The backend's name (`postgres`, `redis`). */
  backend: string;
  /** Store time minus this process's clock, ms: negative when the process is ahead. */
  offsetMs: number;
  /** How far the measurement itself may be off, ms (half its round trip). */
  errorMs: number;
  /** The offset beyond which this is reported, ms. */
  thresholdMs: number;
}

/** `rheo:group:paused` / `rheo:group:resumed`: this process paused or resumed a group (docs/adr/046-pausing-a-group.md). */
export interface GroupPauseMessage {
  stream: string;
  group: string;
  /** The pause as stored (`rheo:group:paused`); absent on `rheo:group:resumed`. */
  pause?: GroupPause;
  /** `rheo:group:resumed`: whether a pause was holding the group back. */
  wasPaused?: boolean;
}

/**
 * `rheo:flow:held`: a group's flow limits held one fetch back
 * (docs/adr/049-flow-control.md): `limit`, the group-wide limit that took the
 * claim below what it asked for, with `retryInMs` when a rate limit allowed no
 * start (how long until its window frees one, by the store's clock);
 * `waitingForKey`, how many events the claim reached and set waiting for their key.
 */
export interface FlowHeldMessage {
  stream: string;
  group: string;
  consumerId: string;
  limit?: 'group_concurrency' | 'rate_limit';
  retryInMs?: number;
  waitingForKey?: number;
}

/** The channels, by name. Subscribe with `diagnostics_channel.subscribe(name, fn)` or `tracingChannel(name).subscribe({...})`. */
export const CHANNELS = {
  lease: 'rheo:lease',
  redelivery: 'rheo:redelivery',
  deadLetter: 'rheo:dead_letter',
  settle: 'rheo:settle',
  frontier: 'rheo:frontier',
  consumerStart: 'rheo:consumer:start',
  consumerStop: 'rheo:consumer:stop',
  fetchError: 'rheo:fetch:error',
  handlerError: 'rheo:handler:error',
  leaseLost: 'rheo:lease:lost',
  leaseExpired: 'rheo:lease:expired',
  renewError: 'rheo:renew:error',
  process: 'rheo:process',
  clockSkew: 'rheo:clock_skew',
  groupPaused: 'rheo:group:paused',
  groupResumed: 'rheo:group:resumed',
  flowHeld: 'rheo:flow:held',
} as const;

/** The plain channels (typed by their message). */
export const channels = {
  lease: channel(CHANNELS.lease) as Channel & { publish(m: LeaseMessage): void },
  redelivery: channel(CHANNELS.redelivery) as Channel & { publish(m: DeliveryMessage): void },
  deadLetter: channel(CHANNELS.deadLetter) as Channel & { publish(m: DeadLetterMessage): void },
  settle: channel(CHANNELS.settle) as Channel & { publish(m: SettleMessage): void },
  frontier: channel(CHANNELS.frontier) as Channel & { publish(m: FrontierMessage): void },
  consumerStart: channel(CHANNELS.consumerStart) as Channel & { publish(m: ConsumerMessage): void },
  consumerStop: channel(CHANNELS.consumerStop) as Channel & { publish(m: ConsumerMessage): void },
  fetchError: channel(CHANNELS.fetchError) as Channel & { publish(m: FetchErrorMessage): void },
  handlerError: channel(CHANNELS.handlerError) as Channel & { publish(m: HandlerErrorMessage): void },
  leaseLost: channel(CHANNELS.leaseLost) as Channel & { publish(m: LeaseLostMessage): void },
  leaseExpired: channel(CHANNELS.leaseExpired) as Channel & { publish(m: LeaseLostMessage): void },
  renewError: channel(CHANNELS.renewError) as Channel & { publish(m: RenewErrorMessage): void },
  clockSkew: channel(CHANNELS.clockSkew) as Channel & { publish(m: ClockSkewMessage): void },
  groupPaused: channel(CHANNELS.groupPaused) as Channel & { publish(m: GroupPauseMessage): void },
  groupResumed: channel(CHANNELS.groupResumed) as Channel & { publish(m: GroupPauseMessage): void },
  flowHeld: channel(CHANNELS.flowHeld) as Channel & { publish(m: FlowHeldMessage): void },
};

/** `rheo:process`: one handler run (start when the handler is called, asyncEnd when its result is known). */
export const processChannel: TracingChannel<object, ProcessMessage> = tracingChannel(CHANNELS.process);

const operationChannels = new Map<TracedOperation, TracingChannel<object, OperationMessage>>(
  TRACED_OPERATIONS.map((op) => [op, tracingChannel(`rheo:${op}`)]),
);

/** The TracingChannel `rheo:<operation>`. */
export function operationChannel(op: TracedOperation): TracingChannel<object, OperationMessage> {
  return operationChannels.get(op)!;
}

/**
 * Run `fn` as a traced operation: with no subscriber, just `fn()`. Otherwise
 * like `TracingChannel#tracePromise`, except that the message never receives the
 * result (it may hold payloads): `done` copies what may be told (counts, ids).
 */
export function traced<T>(
  op: TracedOperation,
  message: () => OperationMessage,
  fn: () => Promise<T>,
  done?: (result: T, message: OperationMessage) => void,
): Promise<T> {
  const ch = operationChannels.get(op)!;
  if (!ch.hasSubscribers) return fn();
  return traceWith(ch, message(), fn, done);
}

/** The tracePromise sequence on any TracingChannel, with the result kept out of the message. */
export function traceWith<T, M extends { error?: unknown }>(
  ch: TracingChannel<object, M>,
  msg: M,
  fn: () => Promise<T>,
  done?: (result: T, message: M) => void,
  failed?: (error: unknown, message: M) => void,
): Promise<T> {
  return ch.start.runStores(msg, () => {
    let promise: Promise<T>;
    try {
      promise = fn();
    } catch (err) {
      msg.error = err;
      ch.error.publish(msg);
      ch.end.publish(msg);
      throw err;
    }
    ch.end.publish(msg);
    return promise.then(
      (result) => {
        done?.(result, msg);
        ch.asyncStart.publish(msg);
        ch.asyncEnd.publish(msg);
        return result;
      },
      (err: unknown) => {
        msg.error = err;
        failed?.(err, msg);
        ch.error.publish(msg);
        ch.asyncStart.publish(msg);
        ch.asyncEnd.publish(msg);
        throw err;
      },
    );
  });
}

/** The identity of a lease, as messages carry it. */
export function deliveryOf(lease: {
  stream: string;
  group: string;
  consumerId: string;
  attempt: number;
  event: { id: string; partition: number; sequence: number };
}): DeliveryMessage {
  return {
    stream: lease.stream,
    group: lease.group,
    consumerId: lease.consumerId,
    eventId: lease.event.id,
    partition: lease.event.partition,
    sequence: lease.event.sequence,
    attempt: lease.attempt,
  };
}
