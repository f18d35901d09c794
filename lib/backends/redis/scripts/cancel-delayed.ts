/**
 * cancelDelayed: cancel a delayed event in every group of its stream
 * (docs/adr/048-skip-reschedule-cancel.md). The cancellation is stored in `cx`
 * (field `<p>:<seq>`), which fetch reads for a delayed entry it meets fresh, or
 * offered again at attempt 0, and passes as done: so a group whose cursor has not
 * reached the event never runs it. Each group where it waits has its delivery
 * made terminal (the frontier walks past it at frontier + 1, bounded by `budget`
 * for the call); each group where it waits or has not been reached counts a skip
 * (cfg `sk`, `skr`, `ska`). Refused whole, nothing written, while a group holds a
 * live lease on it. The backend reads the event's position and the stream's
 * groups first, and passes their keys; the script checks both still hold.
 *
 * KEYS[1]       meta    HASH    the stream's meta (existence, lw:<p>)
 * KEYS[2]       ids     HASH    event id -> <partition>:<sequence>
 * KEYS[3]       groups  SET     the stream's group names
 * KEYS[4]       wake    STREAM  bumped when a group had it to run
 * KEYS[5]       cx      HASH    cancelled events, <p>:<seq> -> ms (written)
 * KEYS[6]       log     STREAM  the event's partition's log (read: is it delayed?)
 * KEYS[7+6g]    cfg     HASH    group g's config: f:<p> (written), c:<p>, sk, skr, ska (written)
 * KEYS[8+6g]    dl      HASH    group g's delivery records (written)
 * KEYS[9+6g]    leased  ZSET    group g's leased set of the partition
 * KEYS[10+6g]   avail   ZSET    group g's available set of the partition
 * KEYS[11+6g]   ko      HASH    group g's open deliveries per key of the partition (a group with key places:
 *                               the cancelled delivery ends, its key's place goes to its earliest waiting one)
 * KEYS[12+6g]   kw      ZSET    group g's deliveries of the partition waiting for their key
 *
 * ARGV[1]      now        ms, from the backend's clock
 * ARGV[2]      budget     records each frontier walk may look at
 * ARGV[3]      reason     the skips' reason
 * ARGV[4]      id         the event id
 * ARGV[5]      position   <partition>:<sequence> as the backend read it from ids
 * ARGV[6+g]    group      the name of group g (the backend's SMEMBERS of groups)
 *
 * Returns one of
 *   { 'ok', n, cut... }        cancelled: n groups had it to run; then the index g (from 0) of
 *                              each group whose frontier walk was cut short (the backend runs tidy)
 *   { 'cancelled' }            cancelled already: nothing written
 *   { 'retry' }                the position or the groups changed since the backend read them
 *   { 'not_in_stream' } | { 'not_delayed' } | { 'lease_held', g, expiresAt }
 * Errors:
 *   RHEO:stream_not_found  no meta hash -> RheoError stream_not_found (explained)
 */
import { script } from './includes';

export const CANCEL_DELAYED = script(
  { uses: ['error', 'check-group', 'record', 'frontier', 'key-places', 'wake'] },
  `
local now, budget = tonumber(ARGV[1]), tonumber(ARGV[2])
local gone = missing(KEYS[1])
if gone then return rheoError(gone) end
local pos = redis.call('HGET', KEYS[2], ARGV[4])
if not pos then return { 'not_in_stream' } end
if pos ~= ARGV[5] then return { 'retry' } end
local p, seq = string.match(pos, '^(%d+):(%d+)$')
seq = tonumber(seq)
local lw = tonumber(redis.call('HGET', KEYS[1], 'lw:' .. p) or '0')
if seq <= lw then return { 'not_in_stream' } end
local ng = #ARGV - 5
if redis.call('SCARD', KEYS[3]) ~= ng then return { 'retry' } end
for g = 0, ng - 1 do
  if redis.call('SISMEMBER', KEYS[3], ARGV[6 + g]) == 0 then return { 'retry' } end
end
local entry = redis.call('XRANGE', KEYS[6], '0-' .. seq, '0-' .. seq)[1]
if not entry then return { 'not_in_stream' } end
local delayed = false
for i = 1, #entry[2], 2 do
  if entry[2][i] == 'w' then delayed = true end
end
if not delayed then return { 'not_delayed' } end
local field = p .. ':' .. seq
if redis.call('HEXISTS', KEYS[5], field) == 1 then return { 'cancelled' } end
-- Where each group stands on it: every group is looked at before anything is written.
local ending = {}
for g = 0, ng - 1 do
  local cfg, dl = KEYS[7 + 6 * g], KEYS[8 + 6 * g]
  local v = redis.call('HMGET', cfg, 'f:' .. p, 'c:' .. p)
  local f, c = math.max(tonumber(v[1] or '0'), lw), math.max(tonumber(v[2] or '1'), lw + 1)
  if seq >= c then
    ending[#ending + 1] = { g = g, f = f, c = c }
  else
    local rec = redis.call('HGET', dl, field)
    if rec and not isTerminal(rec) then
      local st, att, _, ex = parseRecord(rec)
      if st == 'L' and ex > now then return { 'lease_held', g, ex } end
      ending[#ending + 1] = { g = g, f = f, c = c, att = att, st = st }
    end
  end
end
redis.call('HSET', KEYS[5], field, now)
local out = { 'ok', #ending }
for _, e in ipairs(ending) do
  local cfg, dl = KEYS[7 + 6 * e.g], KEYS[8 + 6 * e.g]
  if e.att then
    local places = placesOf(cfg)
    local key = places and entryField(entry, 'k')
    if key then
      local book = keyBook(KEYS[11 + 6 * e.g], KEYS[12 + 6 * e.g], dl, KEYS[10 + 6 * e.g], KEYS[6], p, places)
      if e.st == 'W' then keyUnwait(book, key, seq) else keyEnded(book, key, now) end
    end
    redis.call('ZREM', KEYS[9 + 6 * e.g], seq)
    redis.call('ZREM', KEYS[10 + 6 * e.g], seq)
    redis.call('HSET', dl, field, terminalRecord(e.att))
    if seq == e.f + 1 then
      local nf, _, more = walkFrontier(dl, p, e.f, e.c, budget)
      redis.call('HSET', cfg, 'f:' .. p, nf)
      if more then out[#out + 1] = e.g end
    end
  end
  redis.call('HINCRBY', cfg, 'sk', 1)
  redis.call('HSET', cfg, 'ska', now, 'skr', ARGV[3])
end
if #ending > 0 then wake(KEYS[4]) end
return out
`,
);
