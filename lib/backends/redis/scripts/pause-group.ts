/**
 * pauseGroup: store a pause on a group (docs/adr/046-pausing-a-group.md), replacing
 * any pause it has: four fields of its cfg hash, written together. From this call on,
 * every fetch script call finds the gate (`pu`) and claims nothing; nothing else of
 * the group changes.
 *
 * KEYS[1]  meta  HASH  the stream's meta (existence)
 * KEYS[2]  cfg   HASH  the group's config (written: pu, pa, pr, pb)
 *
 * ARGV[1]  pausedAt  ms, from the backend's clock
 * ARGV[2]  until     ms, or '-' when the pause holds until resumed
 * ARGV[3]  reason    '' when none
 * ARGV[4]  by        '' when none
 * (the stored names and values of STORED_PAUSE_FIELDS in ../group-config.ts)
 *
 * Returns the stored pause fields: { pu, pa, pr, pb }.
 * Errors:
 *   RHEO:stream_not_found  no meta hash -> RheoError stream_not_found (explained)
 *   RHEO:group_not_found   no cfg hash -> RheoError group_not_found
 */
import { script } from './includes';

export const PAUSE_GROUP = script(
  { uses: ['error', 'check-group'] },
  `
local gone = missing(KEYS[1], KEYS[2])
if gone then return rheoError(gone) end
redis.call('HSET', KEYS[2], 'pu', ARGV[2], 'pa', ARGV[1], 'pr', ARGV[3], 'pb', ARGV[4])
return redis.call('HMGET', KEYS[2], 'pu', 'pa', 'pr', 'pb')
`,
);
