/**
 * trim: one bounded slice of a trim of one partition. It deletes the oldest events
 * of the partition, at most `budget` of them, up to the partition's retention point
 * (docs/redis.md, "Retention and trim"), and moves the trim point `lw:<p>` there. The
 * log entries and their ids in the idempotency index go in the same step, so the log
 * and the index agree after every slice, and an append (one script) sees both or
 * neither. The backend calls it until it answers anything but 'more': a claim,
 * settle or append waits at most one slice (docs/adr/020-redis-retention-and-layout-version.md).
 *
 * The point is the highest of `upTo` and, when `before` is given, the sequence
 * before the first event stamped at or after it; never above the high watermark.
 * The time bound is found by reading the entries this slice deletes anyway: a slice
 * that meets the first event stamped at or after `before` returns the sequence before
 * it (`found`), and the backend then passes it in `upTo` and no `before`.
 *
 * Unforced, the slice stops at every group's hold: its frontier, or the target of a
 * rewind under way when lower (a replay's events come back, so they are not
 * finished). Forced, a group held below the slice's end is moved there: its delivery
 * records and leased/retry entries at or below it are dropped (a live lease there
 * answers stale_lease), its frontier and cursor move up, a rewind target below it is
 * raised, and the events it had not finished (leased, waiting, never offered; not
 * acked or dead-lettered) are counted as skipped. Each group so moved shares the
 * budget: its records in the slice are work too.
 *
 * KEYS[1]     meta    HASH    the stream's meta (hw:<p> read; lw:<p> written)
 * KEYS[2]     ids     HASH    event id -> `<p>:<seq>` (the slice's ids removed)
 * KEYS[3]     groups  SET     the stream's group names (must be exactly the ones given)
 * KEYS[4]     log     STREAM  the partition's log (the slice's entries removed: XTRIM MINID)
 * KEYS[5]     wake    STREAM  bumped when a forced slice moved a group
 * KEYS[6j]    cfg     HASH    group j's positions (j from 1; f:, c:, rw: of the partition)
 * KEYS[1+6j]  dl      HASH    group j's delivery records
 * KEYS[2+6j]  leased  ZSET    group j's leased set of the partition
 * KEYS[3+6j]  avail   ZSET    group j's retry set of the partition
 * KEYS[4+6j]  ko      HASH    group j's open deliveries per key of the partition (a group with key places:
 *                             a forced trim's dropped deliveries give up their places, which go to the
 *                             keys' earliest waiting deliveries above the point)
 * KEYS[5+6j]  kw      ZSET    group j's deliveries of the partition waiting for their key
 *
 * ARGV[1]    partition
 * ARGV[2]    upTo     every sequence up to this goes (0: none by count)
 * ARGV[3]    before   ms, or '' (no time bound, or already found)
 * ARGV[4]    force    '1' | '0'
 * ARGV[5]    budget   entries this call may delete
 * ARGV[5+j]  group j's name (j from 1), every group of the stream
 *
 * Returns { status, removed, trim point now, found or '', then per group j its skipped count }:
 *   'done'     the point is reached
 *   'more'     the budget ran out first: call again
 *   'capped'   unforced, a group has not finished the next event: the trim stops here
 *   'regroup'  (alone) the stream's groups are not the ones given: list them and call again
 * Errors:
 *   RHEO:stream_not_found  no meta hash -> RheoError stream_not_found
 *   RHEO:group_not_found   a listed group's cfg is gone -> RheoError group_not_found
 */
import { script } from './includes';

export const TRIM = script(
  { uses: ['error', 'chunked', 'record', 'log-entry', 'key-places', 'wake'] },
  `
if redis.call('EXISTS', KEYS[1]) == 0 then return rheoError('stream_not_found') end
local p = ARGV[1]
local upTo = tonumber(ARGV[2])
local before = nil
if ARGV[3] ~= '' then before = tonumber(ARGV[3]) end
local force = ARGV[4] == '1'
local budget = tonumber(ARGV[5])
local ng = #ARGV - 5
-- A group created since the caller listed the groups would be trimmed past unseen.
if redis.call('SCARD', KEYS[3]) ~= ng then return { 'regroup' } end
for j = 1, ng do
  if redis.call('SISMEMBER', KEYS[3], ARGV[5 + j]) == 0 then return { 'regroup' } end
end
local m = redis.call('HMGET', KEYS[1], 'hw:' .. p, 'lw:' .. p)
local hw, lw = tonumber(m[1] or '0'), tonumber(m[2] or '0')
local skipped = {}
for j = 1, ng do skipped[j] = 0 end
local function answer(status, removed, point, found)
  local out = { status, removed, point, found or '' }
  for j = 1, ng do out[#out + 1] = skipped[j] end
  return out
end
-- The highest the point can be: the high watermark while a time bound is still to be found.
local bound = upTo
if before then bound = hw end
bound = math.min(bound, hw)
if bound <= lw then return answer('done', 0, lw) end
-- Each group's hold: its frontier, or a rewind target below it.
local groups = {}
local cap = bound
for j = 1, ng do
  local v = redis.call('HMGET', KEYS[6 * j], 'f:' .. p, 'c:' .. p, 'rw:' .. p)
  if not v[1] then return rheoError('group_not_found') end
  local g = { f = math.max(tonumber(v[1]), lw), c = math.max(tonumber(v[2]), lw + 1) }
  if v[3] then g.rw = tonumber(v[3]) end
  g.hold = g.f
  if g.rw and g.rw < g.hold then g.hold = g.rw end
  groups[j] = g
  if not force and g.hold < cap then cap = g.hold end
end
if cap <= lw then return answer('capped', 0, lw) end
local behind = 0
if force then
  for j = 1, ng do
    if groups[j].hold < math.min(cap, lw + budget) then behind = behind + 1 end
  end
end
local e = math.min(cap, lw + math.max(1, math.floor(budget / (1 + behind))))
local entries = redis.call('XRANGE', KEYS[4], '0-' .. (lw + 1), '0-' .. e)
local found = nil
if before then
  for _, en in ipairs(entries) do
    if tonumber(entryField(en, 't') or '0') >= before then
      found = tonumber(string.sub(en[1], 3)) - 1
      break
    end
  end
  if found then e = math.min(e, math.max(upTo, found)) end
end
if e <= lw then return answer('done', 0, lw, found) end
-- The ids of the slice's entries leave the index (only where it still points at them).
local ids, refs = {}, {}
for _, en in ipairs(entries) do
  local seq = tonumber(string.sub(en[1], 3))
  local id = entryField(en, 'i')
  if seq <= e and id then
    ids[#ids + 1] = id
    refs[#refs + 1] = p .. ':' .. seq
  end
end
local drop = {}
for i = 1, #ids, 500 do
  local cur = redis.call('HMGET', KEYS[2], unpack(ids, i, math.min(i + 499, #ids)))
  for k = 1, #cur do
    if cur[k] == refs[i + k - 1] then drop[#drop + 1] = ids[i + k - 1] end
  end
end
if #drop > 0 then chunked('HDEL', KEYS[2], drop, 500) end
-- The slice's keys, for the key places of a forced trim (read before the entries go).
local keyOfSeq = {}
for _, en in ipairs(entries) do keyOfSeq[tonumber(string.sub(en[1], 3))] = entryField(en, 'k') end
local removed = redis.call('XTRIM', KEYS[4], 'MINID', '0-' .. (e + 1))
-- Forced: groups held below e are moved to it.
local woke = false
if force then
  for j = 1, ng do
    local g = groups[j]
    if g.hold < e then
      local cfg, dl, leased, avail = KEYS[6 * j], KEYS[1 + 6 * j], KEYS[2 + 6 * j], KEYS[3 + 6 * j]
      local places = placesOf(cfg)
      local book = places and keyBook(KEYS[4 + 6 * j], KEYS[5 + 6 * j], dl, avail, KEYS[4], p, places)
      local touched = {}
      local fields, seqs = {}, {}
      for s = g.f + 1, math.min(e, g.c - 1) do
        fields[#fields + 1] = p .. ':' .. s
        seqs[#seqs + 1] = s
      end
      local n = 0
      for i = 1, #fields, 500 do
        for x, rec in ipairs(redis.call('HMGET', dl, unpack(fields, i, math.min(i + 499, #fields)))) do
          if rec and not isTerminal(rec) then
            n = n + 1
            local seq = seqs[i + x - 1]
            local key = book and keyOfSeq[seq]
            if key then
              keyGiveUp(book, key, seq, rec)
              touched[key] = true
            end
          end
        end
      end
      if #fields > 0 then
        chunked('HDEL', dl, fields, 500)
        chunked('ZREM', leased, seqs, 500)
        chunked('ZREM', avail, seqs, 500)
      end
      -- Never offered: from the cursor up.
      if e >= g.c then n = n + (e - g.c + 1) end
      skipped[j] = n
      for key in pairs(touched) do keyPromote(book, key, 0) end
      local c = math.max(g.c, e + 1)
      redis.call('HSET', cfg, 'f:' .. p, math.max(g.f, e), 'c:' .. p, c)
      if g.rw and g.rw < e then
        if c - 1 <= e then redis.call('HDEL', cfg, 'rw:' .. p) else redis.call('HSET', cfg, 'rw:' .. p, e) end
      end
      woke = true
    end
  end
end
redis.call('HSET', KEYS[1], 'lw:' .. p, e)
if woke then wake(KEYS[5]) end
local point = bound
if not before or found then point = math.min(math.max(upTo, found or 0), hw) end
local status = 'more'
if e >= point then status = 'done' elseif e >= cap then status = 'capped' end
return answer(status, removed, e, found)
`,
);
