import { BaseRpcContext } from '@nestjs/microservices';
import type { EventMetadata, JsonValue, Lease, RheoEvent } from '../core/types';
import type { DeliveryControl } from '../runtime/group-types';

/** The signal of a context built without a runtime delivery (tests, tools): it never aborts. */
const NEVER_ABORTED = new AbortController().signal;

/**
 * What `@Ctx()` gives a `@RheoConsumer` handler: the event and the lease it is
 * delivered under, each value once, as a read-only property. `@Payload()` is
 * `event.payload`.
 */
export class RheoContext<P = JsonValue> extends BaseRpcContext<[Lease<P>]> {
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
