// The one way a backend's fetch tells the facade which deliveries its claim
// dead-lettered, and that the group is paused (Backend.fetch, FetchedLeases), as
// appended.ts tells repeats.
import type { ClaimDeadLetter, FetchedLeases, FlowHeld } from '../backends/backend';
import type { Lease } from './types';

/**
 * `leases` with `deadLettered` attached, not enumerable: the array stays what
 * callers compare, spread and serialise. Nothing is attached (and the array is
 * returned as it is) when the claim dead-lettered nothing.
 */
export function fetched<L extends Lease>(leases: L[], deadLettered: ClaimDeadLetter[] | undefined): L[] & FetchedLeases {
  if (deadLettered === undefined || deadLettered.length === 0) return leases;
  return Object.defineProperty(leases, 'deadLettered', { value: deadLettered, enumerable: false, configurable: true, writable: true });
}

/** An empty answer marked paused: the claim found the group paused (docs/adr/046-pausing-a-group.md). */
export function pausedAnswer<L extends Lease>(): L[] & FetchedLeases {
  return Object.defineProperty([] as L[], 'paused', { value: true, enumerable: false, configurable: true, writable: true });
}

/** What `fetched` attached, or undefined (nothing dead-lettered, or a backend that does not tell). */
export function deadLetteredOf(leases: Lease[]): readonly ClaimDeadLetter[] | undefined {
  const dead = (leases as FetchedLeases).deadLettered;
  return Array.isArray(dead) && dead.length > 0 ? dead : undefined;
}

/** True when the answer says the group is paused (`pausedAnswer`). */
export function isPausedAnswer(leases: Lease[]): boolean {
  return (leases as FetchedLeases).paused === true;
}

/** `leases` with `held` attached (docs/adr/049-flow-control.md), not enumerable; as they are when nothing was held. */
export function heldAnswer<T extends Lease[]>(leases: T, held: FlowHeld | undefined): T & FetchedLeases {
  if (held === undefined || (held.limit === undefined && !held.waitingForKey)) return leases;
  return Object.defineProperty(leases, 'held', { value: held, enumerable: false, configurable: true, writable: true });
}

/** What a flow limit held back in the fetch that answered `leases`, or undefined. */
export function heldOf(leases: Lease[]): FlowHeld | undefined {
  return (leases as FetchedLeases).held;
}
