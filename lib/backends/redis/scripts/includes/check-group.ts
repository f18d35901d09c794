/**
 * `missing(meta, cfg)`: `'stream_not_found'` when the stream's meta hash is gone,
 * `'group_not_found'` when the group's cfg hash is (pass no cfg to check the
 * stream alone), else nil.
 *
 * The stream's meta hash is the authority for its existence, the group's cfg hash
 * for the group's. Group scripts check both before they write, so keys that
 * vanished (FLUSHDB, eviction, a manual DEL) are reported (docs/redis.md, "Keys
 * that vanish") instead of being half-recreated by the writes that follow.
 */
import { include } from '../loader';

export const CHECK_GROUP = include(
  'check-group',
  {},
  `
-- The code of what is missing (the stream's meta, or the group's cfg when given), or nil.
local function missing(meta, cfg)
  if redis.call('EXISTS', meta) == 0 then return 'stream_not_found' end
  if cfg and redis.call('EXISTS', cfg) == 0 then return 'group_not_found' end
  return nil
end
`,
);
