/**
 * redrive: redrive every dead letter of one group, one page per call: the first
 * `limit` dead letters after a position in (partition, sequence) order, each
 * re-opened as reopen does. The backend walks the positions forward, so an event
 * dead-lettered again while the redrive runs is not redriven twice by it. A dead
 * letter whose event was trimmed (at or below its partition's trim point) is
 * skipped: not re-opened, not counted, still listed.
 *
 * KEYS[1]     meta    HASH    the stream's meta (existence, lw:<p>)
 * KEYS[2]     cfg     HASH    the group's positions (frontiers written)
 * KEYS[3]     dl      HASH    delivery records (written: available)
 * KEYS[4]     dead    HASH    dead letters (the page's redriven ones removed)
 * KEYS[5]     deadz   ZSET    dead-letter order (read; the page's redriven ones removed)
 * KEYS[6]     wake    STREAM  bumped when something was redriven
 * KEYS[7]     deadt   ZSET    dead letters by time (the page's redriven ones removed)
 * KEYS[8+2p]  leased  ZSET    the leased set of partition p (every partition, in order)
 * KEYS[9+2p]  avail   ZSET    the retry set of partition p
 * KEYS[8+2P+3p]  ko    HASH  open deliveries per key of partition p (P partitions; a group with key places only)
 * KEYS[9+2P+3p]  kw    ZSET  its deliveries waiting for their key
 * KEYS[10+2P+3p] log   STREAM its log (the key of a redriven event)
 *
 * ARGV[1]  now    ms
 * ARGV[2]  start  '-', or '(' followed by the last member of the previous page
 * ARGV[3]  limit  dead letters per page
 *
 * Returns { dead letters redriven, dead letters looked at (the page is the last when
 * fewer than limit), the last member of this page or '' }.
 * Errors:
 *   RHEO:stream_not_found / RHEO:group_not_found  keys gone -> that RheoError (explained)
 */
import { script } from './includes';

export const REDRIVE = script(
  { uses: ['error', 'check-group', 'chunked', 'positions', 'reopen-one', 'dead-letter', 'trim-point', 'key-places', 'wake'] },
  `
local gone = missing(KEYS[1], KEYS[2])
if gone then return rheoError(gone) end
local now = ARGV[1]
local members = redis.call('ZRANGEBYLEX', KEYS[5], ARGV[2], '+', 'LIMIT', 0, tonumber(ARGV[3]))
if #members == 0 then return { 0, 0, '' } end
local ids, taken = {}, {}
local places = placesOf(KEYS[2])
local P = (#KEYS - 7) / 5
local books = {}
for _, m in ipairs(members) do
  local p, seq = deadMemberPartition(m), deadMemberSequence(m)
  -- A trimmed event is gone: its dead letter stays listed, and is not counted.
  if seq > trimPoint(KEYS[1], p) then
    ids[#ids + 1] = deadMemberId(m)
    taken[#taken + 1] = m
    local book = nil
    if places then
      local b = 8 + 2 * P + 3 * p
      books[p] = books[p] or keyBook(KEYS[b], KEYS[b + 1], KEYS[3], KEYS[9 + 2 * p], KEYS[b + 2], tostring(p), places)
      book = books[p]
    end
    reopen(KEYS[2], KEYS[3], KEYS[8 + 2 * p], KEYS[9 + 2 * p], now, p, seq, book)
  end
end
if #ids > 0 then
  chunked('HDEL', KEYS[4], ids, 500)
  chunked('ZREM', KEYS[5], taken, 500)
  chunked('ZREM', KEYS[7], ids, 500)
  for _, book in pairs(books) do keysRecount(book, tonumber(now)) end
  saveFrontiers(KEYS[2])
  wake(KEYS[6])
end
return { #ids, #members, members[#members] }
`,
);
