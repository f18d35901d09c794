/**
 * `logEntry(log, seq)`: the entry `{ id, fields }` of sequence `seq` in a partition's
 * log (entry id `0-<seq>`), or nil; `entryField(entry, name)`: one field of an entry
 * (nil when the entry or the field is missing). Entry fields are listed in ../../codec.ts.
 */
import { include } from '../loader';

export const LOG_ENTRY = include(
  'log-entry',
  {},
  `
-- The log entry of sequence seq (entry id 0-<seq>), or nil.
local function logEntry(log, seq)
  return redis.call('XRANGE', log, '0-' .. seq, '0-' .. seq)[1]
end
-- One field of a log entry (i id, t timestamp, ...), or nil.
local function entryField(e, name)
  local v = nil
  if e then
    for i = 1, #e[2], 2 do if e[2][i] == name then v = e[2][i + 1] end end
  end
  return v
end
`,
);
