/**
 * skip: settle waiting deliveries of one group as handled without running the
 * handler (docs/adr/048-skip-reschedule-cancel.md). Per id, its waiting delivery
 * (includes/waiting.ts) is made terminal as an ack makes it: out of the leased and
 * available sets, a terminal record, and, at frontier + 1, the frontier walks past
 * it (bounded by `budget` records for the call; a walk cut short is finished by
 * tidy). The skips are counted in cfg (`sk`, and `skr` the reason, `ska` the time).
 * The backend sends at most SKIP_PER_CALL ids per call.
 *
 * KEYS[1]     meta    HASH    the stream's meta (existence, lw:<p>)
 * KEYS[2]     cfg     HASH    the group's config: f:<p> (written), c:<p>, sk, skr, ska (written)
 * KEYS[3]     dl      HASH    delivery records (written)
 * KEYS[4]     ids     HASH    event id -> <partition>:<sequence>
 * KEYS[5]     wake    STREAM  bumped when something was skipped (an ordered partition is free)
 * KEYS[6+2p]  leased  ZSET    partition p's leased set (skipped ones removed), for every partition p
 * KEYS[7+2p]  avail   ZSET    partition p's available set (skipped ones removed)
 * KEYS[6+2P+3p]  ko   HASH    open deliveries per key of partition p (P partitions): in a group with key
 *                             places a skip ends the delivery, and its key's place goes to the key's
 *                             earliest waiting delivery (a skipped waiting one just leaves kw)
 * KEYS[7+2P+3p]  kw   ZSET    its deliveries waiting for their key
 * KEYS[8+2P+3p]  log  STREAM  its log (the key of a skipped event)
 *
 * ARGV[1]    now     ms, from the backend's clock
 * ARGV[2]    budget  records the frontier walk may look at in this call
 * ARGV[3]    reason  the skip's reason ('' = none)
 * ARGV[4..]  ids     event ids
 *
 * Returns per id 'ok' or a code of waitingOf ('not_in_stream', 'not_offered', 'settled',
 * 'lease_held:<expiresAt>'), then one more element: 1 when a frontier walk was cut short.
 * Errors:
 *   RHEO:stream_not_found  no meta hash -> RheoError stream_not_found (explained)
 *   RHEO:group_not_found   no cfg hash -> RheoError group_not_found (explained)
 */
import { script } from './includes';

export const SKIP = script(
  { uses: ['error', 'check-group', 'record', 'positions', 'frontier', 'waiting', 'key-places', 'wake'] },
  `
local now, budget = tonumber(ARGV[1]), tonumber(ARGV[2])
local gone = missing(KEYS[1], KEYS[2])
if gone then return rheoError(gone) end
local done, cut = {}, false
local places = placesOf(KEYS[2])
local P = (#KEYS - 5) / 5
local out, n = eachWaiting(KEYS[1], KEYS[4], KEYS[2], KEYS[3], now, ARGV, 4, function(p, b, att, j, st)
  if places then
    local k = 6 + 2 * P + 3 * j
    local book = keyBook(KEYS[k], KEYS[k + 1], KEYS[3], KEYS[7 + 2 * j], KEYS[k + 2], p, places)
    local key = entryField(logEntry(book.log, b), 'k')
    if key and st == 'W' then
      keyUnwait(book, key, b)
    elseif key then
      keyEnded(book, key, now)
    end
  end
  redis.call('ZREM', KEYS[6 + 2 * j], b)
  redis.call('ZREM', KEYS[7 + 2 * j], b)
  redis.call('HSET', KEYS[3], p .. ':' .. b, terminalRecord(att))
  done[p] = true
end)
-- Walk each frontier that now has a terminal record at frontier + 1 (one budget for the call).
for p in pairs(done) do
  local s = position(KEYS[2], p)
  local more
  s.f, budget, more = walkFrontier(KEYS[3], p, s.f, s.c, budget)
  if more then cut = true end
end
saveFrontiers(KEYS[2])
if n > 0 then
  redis.call('HINCRBY', KEYS[2], 'sk', n)
  redis.call('HSET', KEYS[2], 'ska', now)
  if ARGV[3] ~= '' then redis.call('HSET', KEYS[2], 'skr', ARGV[3]) else redis.call('HDEL', KEYS[2], 'skr') end
  wake(KEYS[5])
end
out[#out + 1] = cut and 1 or 0
return out
`,
);
