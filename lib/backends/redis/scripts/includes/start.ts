/**
 * `startAfter(meta, cfg, p, mode, after)`: (re)start partition `p` of a group
 * after a sequence: frontier = that sequence, cursor = the next one. Mode `'end'`
 * reads the high watermark `hw:<p>` here (atomic with appends); mode `'after'`
 * takes `after` (nil counts as 0). Never before the trim point `lw:<p>`, read in
 * the same step: a trim's slices and a start cannot interleave, so a group never
 * starts among deleted events. Used by create-group and reset.
 */
import { include } from '../loader';

export const START = include(
  'start',
  {},
  `
-- Frontier and cursor of partition p after a start position: 'end' (the high watermark now) or a
-- sequence, never below the trim point (the events there are gone).
local function startAfter(meta, cfg, p, mode, given)
  local v = redis.call('HMGET', meta, 'hw:' .. p, 'lw:' .. p)
  local after
  if mode == 'end' then after = tonumber(v[1] or '0') else after = tonumber(given or '0') end
  after = math.max(after, tonumber(v[2] or '0'))
  redis.call('HSET', cfg, 'f:' .. p, after, 'c:' .. p, after + 1)
end
`,
);
