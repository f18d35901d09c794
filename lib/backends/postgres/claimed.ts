// The rows of a claim statement (plans/claim.ts, plans/flow-claim.ts) as one claim
// round (../delays.ts): its leases, the places parked or dead-lettered rows took.
import { leaseExpiredReason } from '../../core/settle';
import type { Lease } from '../../core/types';
import type { ClaimDeadLetter, FetchRequest } from '../backend';
import type { ClaimRound } from '../delays';
import { toEvent } from '../sql/rows';
import type { DbClaimed } from './plans/claim';

/** `rows` as a round; `maxAttempts` the group's as the process knows it (a dead-lettered row carries the stored one). */
export function claimedRound(rows: DbClaimed[], req: FetchRequest, now: number, maxAttempts: number): ClaimRound<Lease> {
  const leases: Lease[] = [];
  let deadLettered: ClaimDeadLetter[] | undefined;
  for (const r of rows) {
    // A row without a lease id is a delayed event the claim parked (no id), or one it dead-lettered.
    if (r.lease_id === null) {
      if (r.id !== null) {
        const attempt = Number(r.attempt);
        const dead = { eventId: r.id, partition: Number(r.partition), sequence: Number(r.sequence), attempt };
        (deadLettered ??= []).push({ ...dead, reason: leaseExpiredReason(attempt, Number(r.max_attempts ?? maxAttempts)) });
      }
      continue;
    }
    leases.push({
      leaseId: r.lease_id,
      receipt: r.lease_id,
      stream: req.stream,
      group: req.group,
      consumerId: req.consumerId,
      attempt: Number(r.attempt),
      leasedAt: new Date(now),
      expiresAt: new Date(now + req.leaseMs),
      event: toEvent(req.stream, r),
    });
  }
  const parked = rows.length - leases.length;
  return deadLettered ? { leases, parked, deadLettered } : { leases, parked };
}
