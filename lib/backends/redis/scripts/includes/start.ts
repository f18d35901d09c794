/**
 * `startAfter(meta, cfg, p, mode, after)`: (re)start partition `p` of a group
 * after a sequence: frontier = that sequence, cursor = the next one. Mode `'end'`
 * reads the high watermark `hw:<p>` here (atomic with appends); mode `'after'`
 * takes `after` (nil counts as 0). Used by create-group and reset.
 *
 * Needs: nothing.
 */
export const START = `
-- Frontier and cursor of partition p after a start position: 'end' (the high watermark now) or a sequence.
local function startAfter(meta, cfg, p, mode, given)
  local after
  if mode == 'end' then after = redis.call('HGET', meta, 'hw:' .. p) or '0' else after = given or '0' end
  redis.call('HSET', cfg, 'f:' .. p, after, 'c:' .. p, tonumber(after) + 1)
end
`;
