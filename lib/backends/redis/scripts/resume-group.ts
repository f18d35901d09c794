/**
 * resumeGroup: lift a group's pause (docs/adr/046-pausing-a-group.md): its four
 * fields of the cfg hash are removed together. When the pause was holding the group
 * back (no `until`, or one after now), the stream's wake key is bumped as an append
 * bumps it, so consumers blocked in wait() claim at once.
 *
 * KEYS[1]  meta  HASH    the stream's meta (existence)
 * KEYS[2]  cfg   HASH    the group's config (removed: pu, pa, pr, pb)
 * KEYS[3]  wake  STREAM  bumped when a pause was holding
 *
 * ARGV[1]  now  ms, from the backend's clock
 *
 * Returns 1 when a pause was holding the group back, else 0 (none, or past its `until`).
 * Errors:
 *   RHEO:stream_not_found  no meta hash -> RheoError stream_not_found (explained)
 *   RHEO:group_not_found   no cfg hash -> RheoError group_not_found
 */
import { script } from './includes';

export const RESUME_GROUP = script(
  { uses: ['error', 'check-group', 'wake'] },
  `
local gone = missing(KEYS[1], KEYS[2])
if gone then return rheoError(gone) end
local pu = redis.call('HGET', KEYS[2], 'pu')
if not pu then return 0 end
redis.call('HDEL', KEYS[2], 'pu', 'pa', 'pr', 'pb')
if pu ~= '-' and tonumber(pu) <= tonumber(ARGV[1]) then return 0 end
wake(KEYS[3])
return 1
`,
);
