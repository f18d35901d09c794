// Delayed events (docs/adr/028-delayed-events.md), the part every backend shares.
// A delayed event is stored with its sequence like any other, so it keeps its
// place in the log. No claim leases it before its deliverAt: the claim that
// reaches it earlier "parks" it instead — it moves the cursor past it and leaves
// a delivery of attempt 0 due at deliverAt, exactly what a nack with a delay
// leaves. From then on the usual machinery does the rest: the delivery holds the
// frontier (lag counts the event), an ordered group's partition waits for it as
// its head, an unordered group claims the events after it, and the claim that
// finds it due leases it as attempt 1. Nothing filters the log on every fetch:
// a claim looks at a fresh event's deliverAt only while the partition holds a
// delayed event at or above the cursor (a per-partition mark of the last one).

import { fetched, heldAnswer } from '../core/fetched';
import type { Lease } from '../core/types';
import type { ClaimDeadLetter, FetchedLeases, FlowHeld } from './backend';

/**
 * What one claim statement (or script call) did: the leases it took, and how
 * many delayed events it parked or expired deliveries it dead-lettered (their
 * places of the limit); `deadLettered`, when it dead-lettered any, names those.
 */
export interface ClaimRound<L> {
  leases: L[];
  parked: number;
  deadLettered?: ClaimDeadLetter[];
  /** What the group's flow limits held back (docs/adr/049-flow-control.md); a round held by a group-wide limit ends the fetch. */
  held?: FlowHeld;
}

/**
 * How many times one fetch claims again for the rest of its limit while its
 * claims park delayed events. A parked event takes a place of the claim's
 * limit, so a claim that parked some returns fewer leases than it could have;
 * claiming again fills the fetch, and a long run of delayed events is passed
 * at most `limit` × this many per fetch (the next fetch goes on from there).
 */
export const PARKING_ROUNDS = 8;

/**
 * Claim up to `limit` leases, claiming again while the last round parked a
 * delayed event and the fetch is not full (at most {@link PARKING_ROUNDS}
 * rounds). Without delayed events this is exactly one claim. The rounds'
 * `deadLettered` are attached to the result (`fetched`, ../core/fetched.ts).
 */
export async function claimPastDelays<L extends Lease>(
  limit: number,
  claim: (want: number) => Promise<ClaimRound<L>>,
): Promise<L[] & FetchedLeases> {
  const first = await claim(limit);
  if (first.parked === 0 || first.leases.length >= limit || first.held?.limit)
    return heldAnswer(fetched(first.leases, first.deadLettered), first.held);
  const leases = [...first.leases];
  let dead = first.deadLettered;
  let held = first.held;
  for (let round = 1; round < PARKING_ROUNDS && leases.length < limit; round++) {
    const next = await claim(limit - leases.length);
    leases.push(...next.leases);
    if (next.deadLettered?.length) dead = dead ? [...dead, ...next.deadLettered] : next.deadLettered;
    held = mergeHeld(held, next.held);
    if (next.parked === 0 || next.held?.limit) break;
  }
  return heldAnswer(fetched(leases, dead), held);
}

/** Two rounds' holds as one: the later group-wide limit, the events set waiting by both. */
function mergeHeld(a: FlowHeld | undefined, b: FlowHeld | undefined): FlowHeld | undefined {
  if (!a || !b) return a ?? b;
  const waitingForKey = (a.waitingForKey ?? 0) + (b.waitingForKey ?? 0);
  return { ...(b.limit ? { limit: b.limit, retryInMs: b.retryInMs } : {}), ...(waitingForKey ? { waitingForKey } : {}) };
}
