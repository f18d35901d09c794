import { BaseRpcContext } from '@nestjs/microservices';
import { RheoError } from '../core/errors';
import type { EventMetadata, JsonValue, Lease, RheoEvent } from '../core/types';
import type { BatchControl, BatchRetryOptions, DeliveryControl } from '../runtime/consumer-types';

/** The signal of a context built without a runtime delivery (tests, tools): it never aborts. */
const NEVER_ABORTED = new AbortController().signal;

/**
 * The transaction of a `transactional` consumer's delivery, as the library types
 * it without TypeORM: name the real type as {@link RheoContext}'s second type
 * parameter (`@Ctx() ctx: RheoContext<Order, EntityManager>`).
 */
export interface RheoTransactionManager {
  query(sql: string, parameters?: unknown[]): Promise<unknown>;
}

/**
 * What `@Ctx()` gives a `@RheoConsumer` handler: the event and the lease it is
 * delivered under, each value once, as a read-only property. `@Payload()` is
 * `event.payload`. `M` types {@link manager} (a transactional consumer's).
 */
export class RheoContext<P = JsonValue, M = RheoTransactionManager> extends BaseRpcContext<[Lease<P>]> {
  constructor(
    lease: Lease<P>,
    private readonly control?: DeliveryControl,
  ) {
    super([lease]);
  }

  /**
   * Aborts when this delivery's lease is lost (taken over, or expired while
   * renewals failed) or when the shutdown drain times out: the result would be
   * discarded, so a long handler can stop early (pass it to fetch, a database
   * query, `setTimeout` from `node:timers/promises`). `signal.reason` is a
   * `RheoError` saying which.
   */
  get signal(): AbortSignal {
    // Read through: the runtime makes the signal only when a handler asks for it.
    return this.control ? this.control.signal : NEVER_ABORTED;
  }

  /**
   * A `transactional` consumer's transaction: the TypeORM `EntityManager` of the
   * backend's DataSource. Write through it and the writes commit together with
   * this delivery's ack, exactly once; any outcome but an ack rolls them back.
   * Throws when the consumer is not `transactional`: a write meant to be
   * exactly-once must not silently run outside the transaction.
   */
  get manager(): M {
    const manager = this.control?.manager;
    if (manager === undefined)
      throw RheoError.invalid('transactional', 'ctx.manager exists only in a @RheoConsumer with transactional: true');
    return manager as M;
  }

  /** The lease: leaseId, receipt, attempt, expiry, consumer, event. */
  get lease(): Lease<P> {
    return this.args[0];
  }

  /** The delivered event (id, key, type, metadata, partition, sequence, timestamp, payload). */
  get event(): RheoEvent<P> {
    return this.args[0].event;
  }

  /** The stream the event belongs to. */
  get stream(): string {
    return this.args[0].stream;
  }

  /** The consumer group this delivery is for. */
  get group(): string {
    return this.args[0].group;
  }

  /** 1 on first delivery. */
  get attempt(): number {
    return this.args[0].attempt;
  }

  /** Fencing token of this delivery. */
  get leaseId(): string {
    return this.args[0].leaseId;
  }

  /** Lease expiry, kept current: the transport renews the lease at about half the lease time while the handler runs, and this moves with it. */
  get leaseExpiresAt(): Date {
    return this.args[0].expiresAt;
  }

  /** The event's partition. */
  get partition(): number {
    return this.args[0].event.partition;
  }

  /** The event's sequence in its partition. */
  get sequence(): number {
    return this.args[0].event.sequence;
  }

  /** The event's metadata (correlationId, causationId, traceparent, ...). */
  get metadata(): EventMetadata {
    return this.args[0].event.metadata;
  }
}

/**
 * What `@Ctx()` gives a batch consumer (`@RheoConsumer({ batch })`): the leases
 * and events of the batch, in fetch order, and per-event outcomes. `@Payload()`
 * is the array of their payloads, in the same order. Returning acks every event
 * without an outcome of its own; throwing settles those by the error (a
 * `RheoReject` dead-letters them, a `RheoRetry` or any other error retries them).
 * Outcomes given through {@link ack}, {@link reject} and {@link retry} before the
 * handler ends always stand.
 */
export class RheoBatchContext<P = JsonValue> extends BaseRpcContext<[readonly Lease<P>[]]> {
  constructor(
    leases: readonly Lease<P>[],
    private readonly control: BatchControl,
  ) {
    super([leases]);
  }

  /**
   * Aborts at the consumer's `timeoutMs`, when the shutdown drain times out, and
   * when every lease of the batch is lost: the results would be discarded.
   * `signal.reason` is a `RheoError` saying which.
   */
  get signal(): AbortSignal {
    return this.control.signal;
  }

  /** The batch's leases, in fetch order. */
  get leases(): readonly Lease<P>[] {
    return this.args[0];
  }

  /** The batch's events, in fetch order (the order of `@Payload()`). */
  get events(): RheoEvent<P>[] {
    return this.args[0].map((lease) => lease.event);
  }

  /** The stream the events belong to. */
  get stream(): string {
    return this.args[0][0].stream;
  }

  /** The consumer group this batch is for. */
  get group(): string {
    return this.args[0][0].group;
  }

  /** Ack this event whatever the handler then does. `target`: one of the batch's events or leases. */
  ack(target: RheoEvent<P> | Lease<P>): void {
    this.control.ack(target as RheoEvent | Lease);
  }

  /** Dead-letter this event now, with `reason`. */
  reject(target: RheoEvent<P> | Lease<P>, reason: string): void {
    this.control.reject(target as RheoEvent | Lease, reason);
  }

  /** Retry this event, after `delayMs` or the group's backoff (counts as an attempt). */
  retry(target: RheoEvent<P> | Lease<P>, options?: BatchRetryOptions): void {
    this.control.retry(target as RheoEvent | Lease, options);
  }
}

/** The context of one delivery: a single event's, or a batch's. */
export type RheoDeliveryContext = RheoContext<unknown> | RheoBatchContext<unknown>;

/** True for the context the transport built for a delivery (not another transport's). */
export function isRheoDeliveryContext(value: unknown): value is RheoDeliveryContext {
  return value instanceof RheoContext || value instanceof RheoBatchContext;
}
