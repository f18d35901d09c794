/**
 * tidy: finish, in one bounded slice, the work other calls left: per given
 * partition, a rewind (`rw:<p>`, from replay), then the frontier walk. The backend
 * calls it until no partition is left (docs/adr/014-redis-bounded-scripts.md).
 *
 * A rewind slice lowers the cursor from the top: it forgets the deliveries and dead
 * letters of the highest sequences (at most `budget` of each), then sets the cursor
 * to the lowest sequence it cleared and the frontier to at most one below it.
 * Everything from the cursor up is then fresh and everything below is as it was,
 * which is exactly the state a replay to (cursor - 1) would leave: a consistent
 * state after every slice, and any lease on a cleared sequence is stale at once.
 * A rewind never goes below the partition's trim point (a forced trim raises the
 * target; this reads the point again in case it moved since).
 *
 * KEYS[1]     meta    HASH    the stream's meta (existence, lw:<p>)
 * KEYS[2]     cfg     HASH    the group's positions (read; written: c:, f:, rw: removed when done)
 * KEYS[3]     dl      HASH    delivery records (cleared ones and walked-over ones removed)
 * KEYS[4]     dead    HASH    dead letters (cleared ones removed)
 * KEYS[5]     deadz   ZSET    dead-letter order (cleared ones removed)
 * KEYS[6]     wake    STREAM  bumped when a rewind finished or a frontier moved
 * KEYS[7]     deadt   ZSET    dead letters by time (cleared ones removed)
 * KEYS[8+2j]  leased  ZSET    the leased set of the partition in slot j (cleared ones removed)
 * KEYS[9+2j]  avail   ZSET    its retry set (cleared ones removed)
 * KEYS[8+2n+3j]  ko   HASH    open deliveries per key of the partition in slot j (n slots): in a group with
 *                             key places a cleared open delivery gives its place up, a cleared waiting one
 *                             its member, and the keys' places go to their earliest waiting deliveries
 * KEYS[9+2n+3j]  kw   ZSET    its deliveries waiting for their key
 * KEYS[10+2n+3j] log  STREAM  its log (the keys of the cleared deliveries)
 *
 * ARGV[1]    budget     records and dead letters this call may look at or drop
 * ARGV[2+j]  partition  the partition of slot j
 *
 * Returns the partitions (of those given) with work left.
 * Errors:
 *   RHEO:stream_not_found / RHEO:group_not_found  keys gone -> that RheoError (explained)
 */
import { script } from './includes';

export const TIDY = script(
  { uses: ['error', 'check-group', 'chunked', 'frontier', 'dead-letter', 'trim-point', 'key-places', 'wake'] },
  `
local gone = missing(KEYS[1], KEYS[2])
if gone then return rheoError(gone) end
local budget = tonumber(ARGV[1])
local places = placesOf(KEYS[2])
local nslots = #ARGV - 1
local promotedAny = false
-- A group with key places: the cleared records' keys give up their places (or waiting members), then
-- every touched key's places go to its earliest waiting deliveries (below the new cursor).
local function unkey(j, p, fields, seqs, avail)
  local b = 8 + 2 * nslots + 3 * j
  local book = keyBook(KEYS[b], KEYS[b + 1], KEYS[3], avail, KEYS[b + 2], p, places)
  local touched = {}
  for i = 1, #fields, 200 do
    local recs = redis.call('HMGET', KEYS[3], unpack(fields, i, math.min(i + 199, #fields)))
    for n = 1, #recs do
      local rec, seq = recs[n], seqs[i + n - 1]
      if rec and not isTerminal(rec) then
        local key = entryField(logEntry(book.log, seq), 'k')
        if key then
          keyGiveUp(book, key, seq, rec)
          touched[key] = true
        end
      end
    end
  end
  return book, touched
end
local function rewind(p, f, c, t, leased, avail, j)
  local lo = t + 1
  local top = c - 1
  local newc = lo
  if top - math.max(f + 1, lo) + 1 > budget then newc = top - budget + 1 end
  local dead = {}
  if top >= newc then
    dead = redis.call('ZREVRANGEBYLEX', KEYS[5], '(' .. deadPosition(p, top + 1), '[' .. deadPosition(p, newc), 'LIMIT', 0, budget)
    -- As many dead letters as the budget: there may be more below, so stop at the lowest one taken.
    if #dead >= budget then newc = math.max(newc, deadMemberSequence(dead[#dead])) end
  end
  local fields, seqs = {}, {}
  for s = math.max(newc, f + 1), top do
    fields[#fields + 1] = p .. ':' .. s
    seqs[#seqs + 1] = s
  end
  local book, touched = nil, nil
  if places and #fields > 0 then book, touched = unkey(j, p, fields, seqs, avail) end
  if #fields > 0 then
    chunked('HDEL', KEYS[3], fields, 500)
    chunked('ZREM', leased, seqs, 500)
    chunked('ZREM', avail, seqs, 500)
  end
  local ids, members = {}, {}
  for _, m in ipairs(dead) do
    if deadMemberSequence(m) >= newc then
      ids[#ids + 1] = deadMemberId(m)
      members[#members + 1] = m
    end
  end
  if #ids > 0 then
    chunked('HDEL', KEYS[4], ids, 500)
    chunked('ZREM', KEYS[5], members, 500)
    chunked('ZREM', KEYS[7], ids, 500)
  end
  if touched then
    for key in pairs(touched) do
      if keyPromote(book, key, 0) > 0 then promotedAny = true end
    end
  end
  f = math.min(f, newc - 1)
  redis.call('HSET', KEYS[2], 'c:' .. p, newc, 'f:' .. p, f)
  local done = newc <= lo
  if done then redis.call('HDEL', KEYS[2], 'rw:' .. p) end
  budget = budget - #fields - #ids
  return f, newc, not done
end
local left = {}
local woke = false
for j = 0, #ARGV - 2 do
  local p = ARGV[2 + j]
  if budget <= 0 then
    left[#left + 1] = tonumber(p)
  else
    local v = redis.call('HMGET', KEYS[2], 'f:' .. p, 'c:' .. p, 'rw:' .. p)
    local f, c = tonumber(v[1]), tonumber(v[2])
    local more = false
    if v[3] then
      local t = math.max(tonumber(v[3]), trimPoint(KEYS[1], p))
      f, c, more = rewind(p, f, c, t, KEYS[8 + 2 * j], KEYS[9 + 2 * j], j)
      woke = woke or not more
    end
    if not more then
      local f2
      f2, budget, more = walkFrontier(KEYS[3], p, f, c, budget)
      if f2 ~= f then
        redis.call('HSET', KEYS[2], 'f:' .. p, f2)
        woke = true
      end
    end
    if more then left[#left + 1] = tonumber(p) end
  end
end
-- A finished rewind makes its partition claimable again; a moved frontier frees a partition-ordered head.
if woke or promotedAny then wake(KEYS[6]) end
return left
`,
);
