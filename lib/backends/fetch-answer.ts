// What a backend's fetch answers beside its leases (Backend.fetch): the deliveries its
// claim dead-lettered, a pause, what flow limits held back. Attached by core/fetched.ts.
import type { Lease } from '../core/types';

/**
 * A delivery a claim dead-lettered instead of leasing it: its lease expired on
 * attempt `attempt`, the group's last (docs/adr/035-every-delivery-ends.md), and
 * `reason` is what the dead letter stores (`leaseExpiredReason`).
 */
export interface ClaimDeadLetter {
  eventId: string;
  partition: number;
  sequence: number;
  attempt: number;
  reason: string;
}

/**
 * What `Backend.fetch` returns: the leases, and `deadLettered`, the deliveries
 * its claim dead-lettered, each once, attached (not enumerable: see
 * `fetched`) only when there are any. The facade reports each as a dead letter
 * (`rheo:dead_letter`, cause `lease_expired`), as a settle's would be: a claim's
 * dead letter has no settle to tell of it. A backend that leaves it out still
 * works; its claims' dead letters are only counted, never told. `paused`, set
 * the same way (an empty answer only): the group is paused, so the Consumer
 * waits for the resume's wake-up without counting the wake-ups that the
 * pause leaves empty as spurious.
 */
export type FetchedLeases = Lease[] & { deadLettered?: ClaimDeadLetter[]; paused?: true; held?: FlowHeld };

/**
 * What a group's flow limits held back in one fetch (docs/adr/049-flow-control.md),
 * attached like `paused` (`heldAnswer`, core/fetched.ts) when any held something:
 * `limit`, the group-wide limit that took the claim below its `limit` (its
 * `groupConcurrency`, or its `rateLimit` with `retryInMs`, how long until the window
 * frees a start, by the store's clock); `waitingForKey`, the events this claim
 * reached and set waiting for their key. The Consumer waits `retryInMs` instead of
 * its poll interval, and counts none of it as a spurious wake-up.
 */
export interface FlowHeld {
  limit?: 'group_concurrency' | 'rate_limit';
  retryInMs?: number;
  waitingForKey?: number;
}
