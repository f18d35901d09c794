import type { Lease } from '../../lib';
import type { RetryBackoff } from '../../lib/core/types';
import { backoffDelay } from '../../lib/core/backoff';

/** What one group knows of one event, in the reference model. */
export interface ModelDelivery {
  state: 'fresh' | 'available' | 'leased' | 'acked' | 'dead';
  attempt: number;
  leaseId: string | null;
  expiresAt: number;
  availableAt: number;
}

/**
 * The reference model of one group's deliveries: the semantics of docs/concepts.md
 * and the Backend contract (lib/backends/backend.ts), written as plainly as possible, to compare a backend against.
 */
export class GroupModel {
  readonly events = new Map<string, ModelDelivery>();

  constructor(
    readonly maxAttempts: number,
    readonly retry: Required<RetryBackoff>,
  ) {}

  static key(partition: number, sequence: number): string {
    return `${partition}:${sequence}`;
  }

  add(partition: number, sequence: number): void {
    this.events.set(GroupModel.key(partition, sequence), { state: 'fresh', attempt: 0, leaseId: null, expiresAt: 0, availableAt: 0 });
  }

  private of(lease: Lease<unknown>): ModelDelivery {
    return this.events.get(GroupModel.key(lease.event.partition, lease.event.sequence))!;
  }

  /** A claim would lease it: fresh, due again, or expired before its last attempt. */
  claimable(d: ModelDelivery, now: number): boolean {
    return (
      d.state === 'fresh' ||
      (d.state === 'available' && d.availableAt <= now) ||
      (d.state === 'leased' && d.expiresAt <= now && d.attempt < this.maxAttempts)
    );
  }

  /** A claim that meets it dead-letters it: its lease expired on the last attempt (an expiry counts as an attempt). */
  buryable(d: ModelDelivery, now: number): boolean {
    return d.state === 'leased' && d.expiresAt <= now && d.attempt >= this.maxAttempts;
  }

  /** A claim dead-lettered it. */
  buried(partition: number, sequence: number): void {
    this.events.get(GroupModel.key(partition, sequence))!.state = 'dead';
  }

  claimableCount(now: number): number {
    return [...this.events.values()].filter((d) => this.claimable(d, now)).length;
  }

  /** A lease is live iff it is the latest one of its event, still leased and not expired. */
  live(lease: Lease<unknown>, now: number): boolean {
    const d = this.of(lease);
    return d.state === 'leased' && d.leaseId === lease.leaseId && d.expiresAt > now;
  }

  fetched(lease: Lease<unknown>): void {
    const d = this.of(lease);
    d.state = 'leased';
    d.attempt += 1;
    d.leaseId = lease.leaseId;
    d.expiresAt = lease.expiresAt.getTime();
  }

  settled(kind: 'ack' | 'nack' | 'reject', lease: Lease<unknown>, now: number, delayMs?: number): void {
    const d = this.of(lease);
    if (kind === 'ack') d.state = 'acked';
    else if (kind === 'reject' || d.attempt >= this.maxAttempts) d.state = 'dead';
    else {
      d.state = 'available';
      d.availableAt = now + (delayMs ?? backoffDelay(this.retry, d.attempt));
    }
  }

  renewed(lease: Lease<unknown>, expiresAt: number): void {
    this.of(lease).expiresAt = expiresAt;
  }

  expectedAttempt(lease: Lease<unknown>): number {
    return this.of(lease).attempt + 1;
  }

  /** Per partition: the highest F with every sequence up to F terminal. */
  frontiers(partitions: number): number[] {
    return Array.from({ length: partitions }, (_, p) => {
      let f = 0;
      while (['acked', 'dead'].includes(this.events.get(GroupModel.key(p, f + 1))?.state ?? '')) f++;
      return f;
    });
  }

  inflight(now: number): number {
    return [...this.events.values()].filter((d) => d.state === 'leased' && d.expiresAt > now).length;
  }

  dead(): number {
    return [...this.events.values()].filter((d) => d.state === 'dead').length;
  }
}
