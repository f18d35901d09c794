import { BaseRpcContext } from '@nestjs/microservices';
import type { EventMetadata, JsonValue, Lease, RheoEvent } from '../core/types';

/**
 * What `@Ctx()` gives a `@RheoConsumer` handler: the event and the lease it is
 * delivered under. `@Payload()` is `event.payload`.
 */
export class RheoContext<P = JsonValue> extends BaseRpcContext<[Lease<P>]> {
  constructor(lease: Lease<P>) {
    super([lease]);
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

  /** Lease expiry as delivered; the transport renews it at about half the lease time while the handler runs. */
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

  /** Kafka-style accessors, for symmetry with Nest's built-in contexts. */
  getLease(): Lease<P> {
    return this.lease;
  }

  /** Same as {@link RheoContext.event}. */
  getEvent(): RheoEvent<P> {
    return this.event;
  }

  /** Same as {@link RheoContext.stream}. */
  getStream(): string {
    return this.stream;
  }

  /** Same as {@link RheoContext.group}. */
  getGroup(): string {
    return this.group;
  }

  /** Same as {@link RheoContext.attempt}. */
  getAttempt(): number {
    return this.attempt;
  }
}
