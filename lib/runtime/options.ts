import { RheoError } from '../core/errors';
import type { RetryBackoff } from '../core/types';
import { checkKeys, checkObject, keySet } from '../core/validate';
import { checkFields, defaultOf, MAX_DEMAND, type ResolvedGroupOptions, RUNTIME_KEYS, type RuntimeKey } from './consumer-settings';

// The runtime's option types are declared with every other consumer option, in consumer-settings.ts.
export type { BatchOptions, GroupRunOptions, OnTimeout, ResolvedGroupOptions } from './consumer-settings';
export { checkDrainTimeout } from './consumer-settings';

/**
 * Fetch errors back off 100 ms, doubling to 5 s, through the one `backoffDelay`
 * of core (step = consecutive failures).
 */
export const FETCH_BACKOFF: Required<RetryBackoff> = { initialMs: 100, factor: 2, maxMs: 5000 };

const OPTION_KEYS = keySet('a Consumer option', RUNTIME_KEYS);

/**
 * Validate and default {@link GroupRunOptions}. Throws `RheoError('invalid_argument')`
 * naming the offending field; partition numbers are checked against the stream's
 * partition count by the facade on the first fetch. Each field is checked by its
 * declaration (consumer-settings.ts); what is checked here is what ties fields
 * together.
 */
export function resolveGroupOptions(options: unknown): ResolvedGroupOptions {
  const o = checkObject('options', options);
  checkKeys('options', o, OPTION_KEYS);
  const given = checkFields(o, RUNTIME_KEYS);
  const r: Record<string, unknown> = {};
  for (const k of RUNTIME_KEYS) r[k] = k in given ? given[k] : defaultOf(k);
  const resolved = r as { -readonly [K in RuntimeKey]: ResolvedGroupOptions[K] };
  const { batch, concurrency, leaseMs } = resolved;
  // A batch consumer holds its running batches and one more being gathered, unless told otherwise.
  if (batch && given.maxDemand === undefined) resolved.maxDemand = Math.min(MAX_DEMAND, batch.size * (concurrency + 1));
  if (batch && batch.size > resolved.maxDemand)
    throw RheoError.invalid('batch.size', `must be at most maxDemand (${resolved.maxDemand}): a batch is made of held leases`);
  // A short lease pulls the default poll interval below it rather than being refused.
  if (given.pollMs === undefined) resolved.pollMs = Math.min(resolved.pollMs, leaseMs - 1);
  if (resolved.pollMs >= leaseMs) throw RheoError.invalid('pollMs', `must be less than leaseMs (${leaseMs})`);
  // One transaction per delivery: a batch's events would share one fence and one fate.
  if (resolved.transactional && batch) throw RheoError.invalid('transactional', 'cannot be combined with batch');
  return Object.freeze(resolved);
}
