// The runtime events of one RheoServer as single typed payloads: what
// `@OnRheoEvent` methods receive (docs/adr/023). Each server has its own hub, so
// two named instances never see each other's events; a listener that throws or
// rejects is logged and consumption goes on.
import { Logger } from '@nestjs/common';
import type { RheoError } from '../core/errors';
import type { Outcome } from '../core/outcomes';
import type { Lease, Ordering, RateLimit, RetryBackoff } from '../core/types';

/** The consumer an event is about: its stream, group and handler (`Class.method`). */
export interface RheoEventConsumer {
  stream: string;
  group: string;
  handlerName: string;
}

/** One delivery of an event to a consumer. */
export interface RheoDeliveryEvent extends RheoEventConsumer {
  eventId: string;
  partition: number;
  sequence: number;
  /** 1 on the first delivery. */
  attempt: number;
  /** The lease (read-only; its `event` holds the payload). */
  lease: Lease;
}

/** A consumer's settings as it started (options and the group's stored configuration). */
export interface RheoConsumerSettingsSnapshot {
  maxDemand: number;
  concurrency: number;
  leaseMs: number;
  pollMs: number;
  drainTimeoutMs: number;
  /** Partitions consumed; absent: all. */
  partitions?: readonly number[];
  consumerId: string;
  maxAttempts: number;
  retry: Required<RetryBackoff>;
  ordering: Ordering;
  /** The group's flow limits (docs/consumers.md#flow-control); each absent: none. */
  keyConcurrency?: number;
  groupConcurrency?: number;
  rateLimit?: RateLimit;
}

/**
 * A delivery dead-lettered by a consumer's fetch, not by a settle: its lease
 * expired on the group's last attempt (the process holding it died or hung), so
 * the claim that found it dead-lettered it instead of leasing it again. No lease
 * of it is held: `lease` is absent (read the event with `RheoClient.deadLetters`).
 */
export interface RheoLeaseExpiredDeadLetterEvent extends RheoEventConsumer {
  eventId: string;
  partition: number;
  sequence: number;
  /** The attempt its lease expired on. */
  attempt: number;
  /** `lease expired on attempt N of M`, as the dead letter stores it. */
  reason: string;
  cause: 'lease_expired';
  maxAttempts: number;
  lease?: undefined;
}

/**
 * Every event `@OnRheoEvent` can react to, with its payload:
 * - `retry`: a failed delivery was nacked and will come back after `delayMs`;
 * - `dead_letter`: a delivery was dead-lettered, `rejected` (RheoReject, a 4xx
 *   HttpException, a guard that said no), at `max_attempts`, or, by a fetch,
 *   `lease_expired` (its lease expired on the last attempt: no `lease` then);
 * - `handler_error`: the handler (or a guard, pipe or interceptor) failed; `error`
 *   is what was thrown (it may quote the payload: do not ship it blindly);
 * - `settled`: an outcome was written (ack, retry or dead letter);
 * - `settle_error`: writing an outcome failed;
 * - `lease_lost`: a renewal found the lease taken over; the attempt's result is discarded;
 * - `fetch_error` / `recovered`: a consumer's fetch failed (it backs off) / works again;
 * - `consumer_start` / `consumer_stop`: a consumer started with its settings / stopped
 *   after its drain (`drained`, or `timeout` with leases left to expire).
 */
export interface RheoEventMap {
  retry: RheoDeliveryEvent & { reason: string; delayMs: number; maxAttempts: number };
  dead_letter:
    (RheoDeliveryEvent & { reason: string; cause: 'rejected' | 'max_attempts'; maxAttempts: number }) | RheoLeaseExpiredDeadLetterEvent;
  handler_error: RheoDeliveryEvent & { reason: string; error: unknown };
  settled: RheoDeliveryEvent & { outcome: Outcome };
  settle_error: RheoDeliveryEvent & { outcome: Outcome; error: RheoError };
  lease_lost: RheoDeliveryEvent;
  fetch_error: RheoEventConsumer & { error: RheoError };
  recovered: RheoEventConsumer;
  consumer_start: RheoEventConsumer & { settings: RheoConsumerSettingsSnapshot };
  consumer_stop: RheoEventConsumer & { result: 'drained' | 'timeout'; unsettled: number };
}

/** The name of a runtime event (a key of {@link RheoEventMap}). */
export type RheoEventName = keyof RheoEventMap;

/** The events `@OnRheoEvent` accepts, for validation. */
export const RHEO_EVENT_NAMES: readonly RheoEventName[] = [
  'retry',
  'dead_letter',
  'handler_error',
  'settled',
  'settle_error',
  'lease_lost',
  'fetch_error',
  'recovered',
  'consumer_start',
  'consumer_stop',
];

/** A listener of one event. */
export type RheoEventListener<K extends RheoEventName> = (payload: RheoEventMap[K]) => unknown;

/** The payload fields of a delivery, from its lease. */
export function deliveryEvent(consumer: RheoEventConsumer, lease: Lease): RheoDeliveryEvent {
  return {
    stream: consumer.stream,
    group: consumer.group,
    handlerName: consumer.handlerName,
    eventId: lease.event.id,
    partition: lease.event.partition,
    sequence: lease.event.sequence,
    attempt: lease.attempt,
    lease,
  };
}

interface Entry {
  event: RheoEventName;
  name: string;
  fn: (payload: never) => unknown;
}

/** The listeners of one server, by event. */
export class RheoEventHub {
  private readonly logger = new Logger('RheoEvents');
  private readonly listeners = new Map<RheoEventName, Entry[]>();

  /** Add a listener; `name` identifies it in the log when it throws. Returns the function that removes it. */
  on<K extends RheoEventName>(event: K, fn: RheoEventListener<K>, name = 'listener'): () => void {
    const entry: Entry = { event, name, fn: fn as (payload: never) => unknown };
    const list = this.listeners.get(event) ?? [];
    list.push(entry);
    this.listeners.set(event, list);
    return () => {
      const current = this.listeners.get(event);
      if (current)
        this.listeners.set(
          event,
          current.filter((e) => e !== entry),
        );
    };
  }

  /** True when `event` has a listener: lets the server skip building a payload nobody reads. */
  has(event: RheoEventName): boolean {
    return (this.listeners.get(event)?.length ?? 0) > 0;
  }

  /** Call every listener of `event`; what they throw or reject with is logged, never passed on. */
  emit<K extends RheoEventName>(event: K, payload: RheoEventMap[K]): void {
    for (const entry of this.listeners.get(event) ?? []) {
      try {
        const result = (entry.fn as RheoEventListener<K>)(payload);
        if (result instanceof Promise) result.catch((err: unknown) => this.failed(entry, err));
      } catch (err) {
        this.failed(entry, err);
      }
    }
  }

  private failed(entry: Entry, err: unknown): void {
    this.logger.error(`${entry.name} ('${entry.event}') threw: ${err instanceof Error ? err.message : String(err)}`);
    if (err instanceof Error && err.stack) this.logger.debug(err.stack);
  }
}
