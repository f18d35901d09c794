/**
 * reopen: re-open chosen events of one group (replay by query, or redrive of named
 * dead letters): each becomes available now with its attempt count reset, and the
 * frontier moves back before it. An event at or below its partition's trim point is
 * gone: it is not re-opened nor counted, and its dead letter stays listed. The
 * backend sends at most 100 events per call.
 *
 * KEYS[1]     meta    HASH    the stream's meta (existence, lw:<p>)
 * KEYS[2]     cfg     HASH    the group's positions (frontiers written)
 * KEYS[3]     dl      HASH    delivery records (written: available)
 * KEYS[4]     dead    HASH    dead letters (the event's removed)
 * KEYS[5]     deadz   ZSET    dead-letter order (the event's removed)
 * KEYS[6]     wake    STREAM  bumped
 * KEYS[7]     deadt   ZSET    dead letters by time (the event's removed)
 * KEYS[8+2j]  leased  ZSET    the leased set of the partition in slot j (re-opened ones removed)
 * KEYS[9+2j]  avail   ZSET    its retry set (re-opened ones added, due now)
 * KEYS[8+2n+3j]  ko    HASH  open deliveries per key of the partition in slot j (n slots; touched only in
 *                            a group with key places: a re-opened keyed event comes back waiting for its key)
 * KEYS[9+2n+3j]  kw    ZSET  its deliveries waiting for their key
 * KEYS[10+2n+3j] log   STREAM its log (the key of a re-opened event)
 *
 * ARGV[1]  mode  'events': re-open each event (a never-delivered one is pending already) |
 *                'redrive': re-open only the events that were dead letters
 * ARGV[2]  now   ms
 * then per event (at b = 3 + 4i): ARGV[b] slot j, ARGV[b+1] partition, ARGV[b+2] sequence,
 * ARGV[b+3] event id.
 *
 * Returns a count: 'events' counts re-opened deliveries, 'redrive' counts dead letters found.
 * Errors:
 *   RHEO:stream_not_found / RHEO:group_not_found  keys gone -> that RheoError (explained)
 */
import { script } from './includes';

export const REOPEN = script(
  { uses: ['error', 'check-group', 'positions', 'reopen-one', 'dead-letter', 'trim-point', 'key-places', 'wake'] },
  `
local gone = missing(KEYS[1], KEYS[2])
if gone then return rheoError(gone) end
local redrive = ARGV[1] == 'redrive'
local now = ARGV[2]
local n = 0
local places = placesOf(KEYS[2])
local nslots = (#KEYS - 7) / 5
local books = {}
for b = 3, #ARGV, 4 do
  local j, p, seq, id = tonumber(ARGV[b]), ARGV[b + 1], tonumber(ARGV[b + 2]), ARGV[b + 3]
  -- A trimmed event is gone: nothing to re-open (its dead letter, if any, stays listed).
  if seq > trimPoint(KEYS[1], p) then
    -- The dead letter filed under this id, if it is this event's (not a trimmed namesake's).
    local rec = redis.call('HGET', KEYS[4], id)
    local wasDead = false
    if rec then
      local dp, ds = deadRecordPosition(rec)
      wasDead = tonumber(dp) == tonumber(p) and tonumber(ds) == seq
    end
    if wasDead then
      redis.call('HDEL', KEYS[4], id)
      redis.call('ZREM', KEYS[5], deadMember(p, seq, id))
      redis.call('ZREM', KEYS[7], id)
    end
    if wasDead or not redrive then
      local book = nil
      if places then
        local b = 8 + 2 * nslots + 3 * j
        books[j] = books[j] or keyBook(KEYS[b], KEYS[b + 1], KEYS[3], KEYS[9 + 2 * j], KEYS[b + 2], p, places)
        book = books[j]
      end
      local reopened = reopen(KEYS[2], KEYS[3], KEYS[8 + 2 * j], KEYS[9 + 2 * j], now, p, seq, book)
      if redrive or reopened then n = n + 1 end
    end
  end
end
for _, book in pairs(books) do keysRecount(book, tonumber(now)) end
saveFrontiers(KEYS[2])
wake(KEYS[6])
return n
`,
);
