/**
 * `trimPoint(meta, p)`: the trim point of partition `p` (`lw:<p>` in the stream's
 * meta, 0 when never trimmed): every sequence at or below it is gone from the log,
 * so nothing may re-open, replay or start there. Cached per partition for the call.
 */
import { include } from '../loader';

export const TRIM_POINT = include(
  'trim-point',
  {},
  `
-- The trim point of partition p (every sequence at or below it is gone), read once per call.
local trimPoints = {}
local function trimPoint(meta, p)
  local key = tostring(p)
  local lw = trimPoints[key]
  if not lw then
    lw = tonumber(redis.call('HGET', meta, 'lw:' .. key) or '0')
    trimPoints[key] = lw
  end
  return lw
end
`,
);
