// The check of `Rheo#updateGroup`'s changes (docs/adr/047-changing-a-group-in-place.md):
// the shape first, before anything reaches the store, then the changes applied to the
// stored config, checked as a whole (retry.maxMs >= retry.initialMs), so a refusal
// changes nothing.
import type { UpdateGroupRequest } from '../backends/backend';
import { RheoError } from './errors';
import { checkGroupConcurrency, checkRateLimit, MAX_KEY_CONCURRENCY } from './flow';
import { MAX_ATTEMPTS_LIMIT } from './limits';
import { checkRetryFields } from './requests';
import type { GroupChanges, GroupConfig } from './types';
import { checkInt, checkKeys, checkObject, keySet } from './validate';

/** The settings updateGroup may change. */
const CHANGE_KEYS = keySet('a group setting updateGroup can change', [
  'maxAttempts',
  'retry',
  'keyConcurrency',
  'groupConcurrency',
  'rateLimit',
]);

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
  if (c.retry !== undefined) checked.retry = checkRetryFields(c.retry);
  if (c.keyConcurrency !== undefined) checked.keyConcurrency = checkInt('keyConcurrency', c.keyConcurrency, 1, MAX_KEY_CONCURRENCY);
  if (c.groupConcurrency !== undefined)
    checked.groupConcurrency = c.groupConcurrency === null ? null : checkGroupConcurrency(c.groupConcurrency);
  if (c.rateLimit !== undefined) checked.rateLimit = c.rateLimit === null ? null : checkRateLimit('rateLimit', c.rateLimit);
  return checked;
}

/** The stored config with the changes applied, checked as a whole: what the backend stores. */
export function changedGroup(stored: GroupConfig, changes: GroupChanges): UpdateGroupRequest {
  const retry = { ...stored.retry, ...changes.retry };
  if (retry.maxMs < retry.initialMs) throw RheoError.invalid('retry.maxMs', `must be >= retry.initialMs (${retry.initialMs})`);
  if (changes.keyConcurrency !== undefined && stored.keyConcurrency === null)
    throw RheoError.invalid(
      'keyConcurrency',
      'cannot be added in place: deliveries already open were not counted by key; create a new group, or reset this one',
    );
  return {
    stream: stored.stream,
    group: stored.group,
    maxAttempts: changes.maxAttempts ?? stored.maxAttempts,
    retry,
    keyConcurrency: changes.keyConcurrency ?? stored.keyConcurrency,
    groupConcurrency: changes.groupConcurrency !== undefined ? changes.groupConcurrency : stored.groupConcurrency,
    rateLimit: changes.rateLimit !== undefined ? changes.rateLimit : stored.rateLimit,
  };
}
