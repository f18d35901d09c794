/**
 * `reopen(cfg, dl, leased, avail, now, p, seq)`: make delivered sequence `seq` of
 * partition `p` available now with its attempt count reset, and pull the frontier
 * back before it (saved by `saveFrontiers`). A sequence at or above the cursor was
 * never delivered: it is pending already, and false is returned.
 * Used by reopen (replay by query, redrive by id) and redrive (redrive all).
 *
 * Needs: chunked, record, positions.
 */
export const REOPEN_ONE = `
-- Make delivered sequence seq of p available now with its attempt count reset, and pull the
-- frontier back before it. A sequence at or above the cursor was never delivered: it is pending already.
local function reopen(cfg, dl, leased, avail, now, p, seq)
  local s = position(cfg, p)
  if seq >= s.c then return false end
  redis.call('HSET', dl, p .. ':' .. seq, availableRecord(0))
  redis.call('ZREM', leased, seq)
  redis.call('ZADD', avail, now, seq)
  if seq - 1 < s.f then s.f = seq - 1 end
  return true
end
`;
