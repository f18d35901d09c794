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

  get stream(): string {
    return this.args[0].stream;
  }

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

  get partition(): number {
    return this.args[0].event.partition;
  }

  get sequence(): number {
    return this.args[0].event.sequence;
  }

  get metadata(): EventMetadata {
    return this.args[0].event.metadata;
  }

  /** Kafka-style accessors, for symmetry with Nest's built-in contexts. */
  getLease(): Lease<P> {
    return this.lease;
  }

  getEvent(): RheoEvent<P> {
    return this.event;
  }

  getStream(): string {
    return this.stream;
  }

  getGroup(): string {
    return this.group;
  }

  getAttempt(): number {
    return this.attempt;
  }
}
