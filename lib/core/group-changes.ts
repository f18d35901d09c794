// The check of `Rheo#updateGroup`'s changes (docs/adr/047-changing-a-group-in-place.md):
// the shape first, before anything reaches the store, then the changes applied to the
// stored config, checked as a whole (retry.maxMs >= retry.initialMs), so a refusal
// changes nothing.
import type { UpdateGroupRequest } from '../backends/backend';
import { RheoError } from './errors';
import { MAX_ATTEMPTS_LIMIT, MAX_DELAY_MS } from './limits';
import type { GroupChanges, GroupConfig, RetryBackoff } from './types';
import { checkInt, checkKeys, checkObject, keySet } from './validate';

/** The settings updateGroup may change. */
const CHANGE_KEYS = keySet('a group setting updateGroup can change', ['maxAttempts', 'retry']);
const RETRY_KEYS = keySet('a retry setting', ['initialMs', 'factor', 'maxMs']);

/** Stored settings a change may not touch, each with the reason it gives. */
const REFUSED: Record<string, string> = {
  start: 'cannot change: a start position only decides where a new group begins; use reset to move a group (it forgets every delivery)',
  ordering:
    'cannot change in place: deliveries already leased under one ordering would break the other (two leases live in one ' +
    'partition, or a partition held back by a lease taken without it); create a new group, or reset this one',
};

/** The changes, checked for their shape and values (not yet against the stored config). */
export function checkGroupChanges(changes: unknown): GroupChanges {
  const c = checkObject('changes', changes);
  for (const key of Object.keys(REFUSED)) if (Object.prototype.hasOwnProperty.call(c, key)) throw RheoError.invalid(key, REFUSED[key]);
  checkKeys('changes', c, CHANGE_KEYS);
  const checked: GroupChanges = {};
  if (c.maxAttempts !== undefined) checked.maxAttempts = checkInt('maxAttempts', c.maxAttempts, 1, MAX_ATTEMPTS_LIMIT);
  if (c.retry !== undefined) {
    const r = checkObject('retry', c.retry);
    checkKeys('retry', r, RETRY_KEYS);
    const retry: RetryBackoff = {};
    if (r.initialMs !== undefined) retry.initialMs = checkInt('retry.initialMs', r.initialMs, 0, MAX_DELAY_MS);
    if (r.maxMs !== undefined) retry.maxMs = checkInt('retry.maxMs', r.maxMs, 0, MAX_DELAY_MS);
    if (r.factor !== undefined) {
      if (typeof r.factor !== 'number' || !(r.factor >= 1 && r.factor <= 100))
        throw RheoError.invalid('retry.factor', 'must be a number between 1 and 100');
      retry.factor = r.factor;
    }
    checked.retry = retry;
  }
  return checked;
}

/** The stored config with the changes applied, checked as a whole: what the backend stores. */
export function changedGroup(stored: GroupConfig, changes: GroupChanges): UpdateGroupRequest {
  const retry = { ...stored.retry, ...changes.retry };
  if (retry.maxMs < retry.initialMs) throw RheoError.invalid('retry.maxMs', `must be >= retry.initialMs (${retry.initialMs})`);
  return { stream: stored.stream, group: stored.group, maxAttempts: changes.maxAttempts ?? stored.maxAttempts, retry };
}
