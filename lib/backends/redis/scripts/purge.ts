/**
 * purge: delete dead letters of one group, one bounded step per call.
 *
 * Dead letters are found by time through `deadt` (event id scored by when it was
 * dead-lettered), so a purge costs what it deletes, not the group's whole dead-letter
 * history. `deadt` arrived with layout 2: a group whose `deadt` has fewer members
 * than `dead` has records written before it, and mode 'before' answers 'index' until
 * the backend has added them (mode 'index', HSCAN in steps). A `deadt` member whose
 * record is gone, or was written again later (redriven and dead-lettered again), is
 * dropped or re-scored when met: the record's own time decides.
 *
 * KEYS[1]  meta   HASH  the stream's meta (existence)
 * KEYS[2]  cfg    HASH  the group's config (existence)
 * KEYS[3]  dead   HASH  dead letters by event id
 * KEYS[4]  deadz  ZSET  dead-letter order
 * KEYS[5]  deadt  ZSET  dead letters by time
 *
 * ARGV[1]  mode  'all': every dead letter (the three keys UNLINKed: freed in a background
 *                thread, so the call costs the same for 10 or 10 million) -> { count }
 *                'before': ARGV[2] ms, ARGV[3] limit, ARGV[4] '1' when the caller has just
 *                indexed: the first `limit` dead-lettered before the time -> { purged, looked
 *                at } (the last step looked at fewer than limit), or { 'index' } while the
 *                time index is incomplete (and ARGV[4] is not '1')
 *                'index': ARGV[2] HSCAN cursor, ARGV[3] COUNT: index one step of `dead`
 *                -> { next cursor } ('0' when done)
 * Errors:
 *   RHEO:stream_not_found / RHEO:group_not_found  keys gone -> that RheoError (explained)
 */
import { script } from './includes';

export const PURGE = script(
  { uses: ['error', 'check-group', 'dead-letter'] },
  `
local gone = missing(KEYS[1], KEYS[2])
if gone then return rheoError(gone) end
local mode = ARGV[1]
if mode == 'all' then
  local n = redis.call('HLEN', KEYS[3])
  redis.call('UNLINK', KEYS[3], KEYS[4], KEYS[5])
  return { n }
end
if mode == 'index' then
  local step = redis.call('HSCAN', KEYS[3], ARGV[2], 'COUNT', tonumber(ARGV[3]))
  local kv = step[2]
  for i = 1, #kv, 2 do
    redis.call('ZADD', KEYS[5], deadRecordTime(kv[i + 1]), kv[i])
  end
  return { step[1] }
end
if ARGV[4] ~= '1' and redis.call('ZCARD', KEYS[5]) < redis.call('HLEN', KEYS[3]) then return { 'index' } end
local before = tonumber(ARGV[2])
local ids = redis.call('ZRANGEBYSCORE', KEYS[5], '-inf', '(' .. ARGV[2], 'LIMIT', 0, tonumber(ARGV[3]))
if #ids == 0 then return { 0, 0 } end
-- One command per kind of write for the whole step (a command per dead letter costs more than the work).
local recs = redis.call('HMGET', KEYS[3], unpack(ids))
local purged, members, stale, rescored = {}, {}, {}, {}
for i, id in ipairs(ids) do
  local rec = recs[i]
  if not rec then
    stale[#stale + 1] = id
  else
    local at = deadRecordTime(rec)
    if at >= before then
      rescored[#rescored + 1] = at
      rescored[#rescored + 1] = id
    else
      local p, seq = deadRecordPosition(rec)
      purged[#purged + 1] = id
      members[#members + 1] = deadMember(p, seq, id)
    end
  end
end
if #purged > 0 then
  redis.call('HDEL', KEYS[3], unpack(purged))
  redis.call('ZREM', KEYS[4], unpack(members))
  redis.call('ZREM', KEYS[5], unpack(purged))
end
if #stale > 0 then redis.call('ZREM', KEYS[5], unpack(stale)) end
if #rescored > 0 then redis.call('ZADD', KEYS[5], unpack(rescored)) end
return { #purged, #ids }
`,
);
