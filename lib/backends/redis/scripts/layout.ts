/**
 * layout: record the layout version this code writes under the prefix, unless a
 * version at least as new is recorded already (../layout.ts decides what the
 * answer means: a newer one refuses the process).
 *
 * KEYS[1]  layout  STRING  `<prefix>:layout` (written when absent or older)
 *
 * ARGV[1]  version  the layout version this code writes
 *
 * Returns the version recorded now, as stored (a string).
 * Errors: none raised.
 */
export const LAYOUT = `
local v = redis.call('GET', KEYS[1])
if not v or (tonumber(v) and tonumber(v) < tonumber(ARGV[1])) then
  redis.call('SET', KEYS[1], ARGV[1])
  return ARGV[1]
end
return v
`;
