// The one way a backend's append tells the facade how many of the returned
// events it did not write (Backend.append, AppendedEvents).
import type { RheoEvent } from './types';
import type { AppendedEvents } from '../backends/backend';

/**
 * `events` with `repeats` attached, not enumerable: the array stays what callers
 * compare, spread and serialise, and the count reaches the facade.
 */
export function appended(events: RheoEvent[], repeats: number): AppendedEvents {
  return Object.defineProperty(events, 'repeats', { value: repeats, enumerable: false, configurable: true, writable: true });
}

/** What `appended` attached, or undefined (a backend that does not tell). */
export function repeatsOf(events: RheoEvent[]): number | undefined {
  const n = (events as AppendedEvents).repeats;
  return typeof n === 'number' && Number.isInteger(n) && n >= 0 && n <= events.length ? n : undefined;
}
