/**
 * `reopen(cfg, dl, leased, avail, now, p, seq)`: make delivered sequence `seq` of
 * partition `p` available now with its attempt count reset, and pull the frontier
 * back before it (saved by `saveFrontiers`). A sequence at or above the cursor was
 * never delivered: it is pending already, and false is returned. A delayed event
 * the cursor passed before its time (an available record of attempt 0) keeps its
 * due time: a replay never offers it early (docs/adr/028-delayed-events.md).
 * Used by reopen (replay by query, redrive by id) and redrive (redrive all).
 */
import { include } from '../loader';

export const REOPEN_ONE = include(
  'reopen-one',
  { needs: ['record', 'positions'] },
  `
-- Make delivered sequence seq of p available now with its attempt count reset, and pull the
-- frontier back before it. A sequence at or above the cursor was never delivered: it is pending already.
local function reopen(cfg, dl, leased, avail, now, p, seq)
  local s = position(cfg, p)
  if seq >= s.c then return false end
  local k = p .. ':' .. seq
  local rec = redis.call('HGET', dl, k)
  local due = now
  if rec and rec == availableRecord(0) then due = redis.call('ZSCORE', avail, seq) or now end
  redis.call('HSET', dl, k, availableRecord(0))
  redis.call('ZREM', leased, seq)
  redis.call('ZADD', avail, due, seq)
  if seq - 1 < s.f then s.f = seq - 1 end
  return true
end
`,
);
