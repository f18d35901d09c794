/**
 * `storeRetention(meta, ra, re, rd)`: replace a stream's retention in its meta hash:
 * `ra` maxAgeMs, `re` maxEvents, `rd` deadLetterMaxAgeMs, each written only when
 * not '' (an unset limit has no field). Used by create-stream and set-retention.
 */
import { include } from '../loader';

export const RETENTION = include(
  'retention',
  {},
  `
-- Replace the stream's retention: a limit given as '' is not set (its field removed).
local function storeRetention(meta, ra, re, rd)
  redis.call('HDEL', meta, 'ra', 're', 'rd')
  local fields = {}
  if ra ~= '' then fields[#fields + 1] = 'ra'; fields[#fields + 1] = ra end
  if re ~= '' then fields[#fields + 1] = 're'; fields[#fields + 1] = re end
  if rd ~= '' then fields[#fields + 1] = 'rd'; fields[#fields + 1] = rd end
  if #fields > 0 then redis.call('HSET', meta, unpack(fields)) end
end
`,
);
