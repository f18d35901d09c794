/**
 * `reopen(cfg, dl, leased, avail, now, p, seq)`: make delivered sequence `seq` of
 * partition `p` available now with its attempt count reset, and pull the frontier
 * back before it (saved by `saveFrontiers`). A sequence at or above the cursor was
 * never delivered: it is pending already, and false is returned. A delayed event
 * the cursor passed before its time (an available record of attempt 0) keeps its
 * due time: a replay never offers it early (docs/adr/028-delayed-events.md).
 * Used by reopen (replay by query, redrive by id) and redrive (redrive all).
 * With `book` (a group with key places, includes/key-places.ts) a re-opened event of a
 * key comes back waiting for its key (an open one gives its place up first), the key
 * noted in `book.touched`: `keysRecount(book, now)` then gives the free places of every
 * touched key to its earliest waiting deliveries, so they take places in sequence order.
 */
import { include } from '../loader';

export const REOPEN_ONE = include(
  'reopen-one',
  { needs: ['record', 'positions', 'key-places', 'log-entry'] },
  `
-- Make delivered sequence seq of p available now with its attempt count reset, and pull the
-- frontier back before it. A sequence at or above the cursor was never delivered: it is pending already.
local function reopen(cfg, dl, leased, avail, now, p, seq, book)
  local s = position(cfg, p)
  if seq >= s.c then return false end
  local k = p .. ':' .. seq
  local rec = redis.call('HGET', dl, k)
  local key = book and entryField(logEntry(book.log, seq), 'k')
  if key then
    if rec and not isTerminal(rec) then keyGiveUp(book, key, seq, rec) end
    redis.call('ZREM', leased, seq)
    redis.call('ZREM', avail, seq)
    keyWait(book, key, seq)
    book.touched = book.touched or {}
    book.touched[key] = true
    if seq - 1 < s.f then s.f = seq - 1 end
    return true
  end
  local due = now
  if rec and rec == availableRecord(0) then due = redis.call('ZSCORE', avail, seq) or now end
  redis.call('HSET', dl, k, availableRecord(0))
  redis.call('ZREM', leased, seq)
  redis.call('ZADD', avail, due, seq)
  if seq - 1 < s.f then s.f = seq - 1 end
  return true
end
-- Give the free places of every key reopen touched to its earliest waiting deliveries; how many got one.
local function keysRecount(book, now)
  local n = 0
  for key in pairs(book and book.touched or {}) do n = n + keyPromote(book, key, now) end
  if book then book.touched = nil end
  return n
end
`,
);
