import { checkClock, type Clock, systemClock } from '../../core/clock';
import { checkKeys, checkObject, keySet } from '../../core/validate';

/** Options of {@link memoryBackend}. */
export interface MemoryBackendOptions {
  clock?: Clock;
}

/** What the backend runs with, from its options once checked ({@link checkOptions}). */
export interface MemorySettings {
  clock: Clock;
}

const OPTION_KEYS = keySet('a memoryBackend option', ['clock']);

/**
 * The options of {@link memoryBackend}, checked (the first thing wrong refuses them, as
 * `invalid_argument` on `options.<field>`), and what the backend runs with taken from them.
 */
export function checkOptions(options: MemoryBackendOptions): MemorySettings {
  checkKeys('options', checkObject('options', options), OPTION_KEYS);
  return { clock: options.clock === undefined ? systemClock : checkClock('options.clock', options.clock) };
}
