/**
 * inspect: lag and health figures of one group in one consistent read (lag,
 * groupInfo). Work found unfinished is reported; the backend finishes it (tidy)
 * and reads again.
 *
 * KEYS[1]     meta    HASH    the stream's meta (partitions, hw:<p>, lw:<p>)
 * KEYS[2]     cfg     HASH    the group's positions (f:, c:, rw:), its pause (pu, pa, pr, pb)
 * KEYS[3]     dl      HASH    delivery records (the record at frontier + 1)
 * KEYS[4]     dead    HASH    dead letters (counted)
 * KEYS[5+3p]  leased  ZSET    the leased set of partition p (live leases counted; every partition)
 * KEYS[6+3p]  log     STREAM  the log of partition p (the timestamp of frontier + 1)
 * KEYS[7+3p]  kw      ZSET    its deliveries waiting for their key (counted; docs/adr/049-flow-control.md)
 *
 * ARGV[1]  now  ms (a lease expiring after it is live)
 *
 * Returns { dead-letter count, then per partition: high watermark, frontier, live leases,
 * timestamp of frontier + 1 or '' (a delayed event's deliverAt when that is later: it is
 * unsettled from then on), 1 when a frontier walk or rewind is left unfinished else 0,
 * then the group's pause fields pu, pa, pr, pb (nil each when not paused: ../group-config.ts),
 * then the deliveries waiting for their key }.
 * Errors:
 *   RHEO:stream_not_found / RHEO:group_not_found  keys gone -> that RheoError (explained)
 */
import { script } from './includes';

export const INSPECT = script(
  { uses: ['error', 'check-group', 'frontier', 'log-entry'] },
  `
local gone = missing(KEYS[1], KEYS[2])
if gone then return rheoError(gone) end
local P = tonumber(redis.call('HGET', KEYS[1], 'partitions'))
local out = { redis.call('HLEN', KEYS[4]) }
for p = 0, P - 1 do
  local m = redis.call('HMGET', KEYS[1], 'hw:' .. p, 'lw:' .. p)
  local hw, lw = tonumber(m[1] or '0'), tonumber(m[2] or '0')
  local v = redis.call('HMGET', KEYS[2], 'f:' .. p, 'c:' .. p, 'rw:' .. p)
  -- Never below the trim point: everything there is gone, so finished for every group.
  local f, c = math.max(tonumber(v[1]), lw), math.max(tonumber(v[2]), lw + 1)
  out[#out + 1] = hw
  out[#out + 1] = f
  out[#out + 1] = redis.call('ZCOUNT', KEYS[5 + 3 * p], '(' .. ARGV[1], '+inf')
  local ts = ''
  if f < hw then
    local e = logEntry(KEYS[6 + 3 * p], f + 1)
    ts = entryField(e, 't') or ''
    local w = entryField(e, 'w')
    if w and ts ~= '' and tonumber(w) > tonumber(ts) then ts = w end
  end
  out[#out + 1] = ts
  local pending = 0
  if v[3] then
    pending = 1
  elseif f + 1 < c and walkLeft(f, c, redis.call('HGET', KEYS[3], p .. ':' .. (f + 1))) then
    pending = 1
  end
  out[#out + 1] = pending
end
local pz = redis.call('HMGET', KEYS[2], 'pu', 'pa', 'pr', 'pb')
for i = 1, 4 do out[#out + 1] = pz[i] end
local waiting = 0
for p = 0, P - 1 do waiting = waiting + redis.call('ZCARD', KEYS[7 + 3 * p]) end
out[#out + 1] = waiting
return out
`,
);
