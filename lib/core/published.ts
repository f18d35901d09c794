// What the facade tells the plain diagnostics channels after an operation
// (diagnostics.ts): leases handed out, redeliveries, settles and dead letters,
// frontiers seen. Each publisher returns at once when nobody subscribes.
import type { SettleOp, SettleResult } from '../backends/backend';
import { channels, deliveryOf } from './diagnostics';
import { deadLetteredOf, heldOf } from './fetched';
import { groupKey, type Registrations } from './registrations';
import { writtenOutcome } from './settle';
import type { Lag, Lease } from './types';

/**
 * `rheo:lease` for a fetch that returned leases, `rheo:redelivery` for each lease
 * past its first attempt, and `rheo:dead_letter` (cause `lease_expired`) for each
 * delivery the claim dead-lettered (FetchedLeases.deadLettered): a dead letter no
 * settle tells of, told here by the consumer whose fetch made it; `rheo:flow:held`
 * when the group's flow limits held the claim back (FetchedLeases.held).
 */
export function publishLeases(stream: string, group: string, consumerId: string, leases: Lease[]): void {
  if (leases.length > 0 && channels.lease.hasSubscribers) channels.lease.publish({ stream, group, consumerId, count: leases.length });
  const held = heldOf(leases);
  if (held !== undefined && channels.flowHeld.hasSubscribers) channels.flowHeld.publish({ stream, group, consumerId, ...held });
  if (channels.redelivery.hasSubscribers) for (const lease of leases) if (lease.attempt > 1) channels.redelivery.publish(deliveryOf(lease));
  const dead = deadLetteredOf(leases);
  if (dead === undefined || !channels.deadLetter.hasSubscribers) return;
  for (const d of dead) {
    const { eventId, partition, sequence, attempt, reason } = d;
    channels.deadLetter.publish({ stream, group, consumerId, eventId, partition, sequence, attempt, reason, cause: 'lease_expired' });
  }
}

/** True when a settle's outcome is wanted: someone listens to `rheo:settle` or `rheo:dead_letter`. */
export function settlesObserved(): boolean {
  return channels.settle.hasSubscribers || channels.deadLetter.hasSubscribers;
}

/**
 * `rheo:settle` for each op that was written, and `rheo:dead_letter` for those
 * that dead-lettered: a reject, or a nack on the group's last attempt. The
 * outcome is the one the store says it wrote (SettleResult's `outcome`, by the
 * group's stored settings, which another process may have changed); for a
 * backend that does not say, the rule every backend applies (attempt >=
 * maxAttempts) by each group's setting as `registrations` remember it.
 */
export function publishSettles(ops: SettleOp[], results: SettleResult[], registrations?: Registrations): void {
  ops.forEach((op, i) => {
    const result = results[i];
    if (!result?.ok) return;
    const lease = op.lease;
    const outcome = result.outcome ?? writtenOutcome(op.kind, lease.attempt, registrations?.group(lease.stream, lease.group)?.maxAttempts);
    const delivery = deliveryOf(lease);
    const reason = op.kind === 'ack' ? undefined : op.reason;
    if (channels.settle.hasSubscribers)
      channels.settle.publish(reason === undefined ? { ...delivery, outcome } : { ...delivery, outcome, reason });
    if ((outcome === 'reject' || outcome === 'dead_letter') && channels.deadLetter.hasSubscribers) {
      channels.deadLetter.publish({ ...delivery, reason: reason!, cause: outcome === 'reject' ? 'rejected' : 'max_attempts' });
    }
  });
}

/**
 * `rheo:frontier` when a lag read shows a partition's frontier at a value this
 * process had not seen yet: one message per move, not one per read.
 */
export class FrontierWatch {
  private readonly seen = new Map<string, number>();

  /** Drop a deleted group's last frontiers (deleteGroup): groups named per process would otherwise pile up here. */
  forget(stream: string, group: string): void {
    const prefix = `${groupKey(stream, group)}\0`;
    for (const key of this.seen.keys()) if (key.startsWith(prefix)) this.seen.delete(key);
  }

  observe(lag: Lag): void {
    if (!channels.frontier.hasSubscribers) return;
    for (const p of lag.partitions) {
      const key = `${groupKey(lag.stream, lag.group)}\0${p.partition}`;
      if (this.seen.get(key) === p.frontier) continue;
      this.seen.set(key, p.frontier);
      channels.frontier.publish({
        stream: lag.stream,
        group: lag.group,
        partition: p.partition,
        frontier: p.frontier,
        highWatermark: p.highWatermark,
      });
    }
  }
}
