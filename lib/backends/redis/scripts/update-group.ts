/**
 * updateGroup: replace a group's settings in place (docs/adr/047-changing-a-group-in-place.md);
 * its positions, delivery records and dead letters are untouched. fetch and settle read
 * `maxAttempts`, `ri`, `rf` and `rm` from the cfg hash when they decide, so every
 * process applies the change from this call on.
 *
 * KEYS[1]  meta  HASH  the stream's meta (existence)
 * KEYS[2]  cfg   HASH  the group's config (written: maxAttempts, ri, rf, rm)
 *
 * ARGV[1]  maxAttempts
 * ARGV[2]  ri  retry initialMs
 * ARGV[3]  rf  retry factor
 * ARGV[4]  rm  retry maxMs
 * (the stored names of ../group-config.ts)
 *
 * Returns the group's stored config fields, in the order of STORED_GROUP_FIELD_NAMES
 * (../group-config.ts: maxAttempts, ri, rf, rm, ord, createdAt).
 * Errors:
 *   RHEO:stream_not_found  no meta hash -> RheoError stream_not_found (explained)
 *   RHEO:group_not_found   no cfg hash -> RheoError group_not_found
 */
import { script } from './includes';

export const UPDATE_GROUP = script(
  { uses: ['error', 'check-group'] },
  `
local gone = missing(KEYS[1], KEYS[2])
if gone then return rheoError(gone) end
redis.call('HSET', KEYS[2], 'maxAttempts', ARGV[1], 'ri', ARGV[2], 'rf', ARGV[3], 'rm', ARGV[4])
return redis.call('HMGET', KEYS[2], 'maxAttempts', 'ri', 'rf', 'rm', 'ord', 'createdAt')
`,
);
