/**
 * replay: start a rewind of one group (replay by sequence or time). Per partition,
 * every delivery above `after` is to be forgotten (fresh again), the cursor moved
 * to after + 1 and the frontier back to at most `after`. When nothing was
 * delivered above `after` that happens here; otherwise the target is recorded as
 * `rw:<p>` and tidy brings the cursor down in slices, from the top. A target
 * already recorded by an unfinished rewind is merged by keeping the lower one
 * (both rewinds' events are re-opened).
 *
 * KEYS[1]  meta  HASH    the stream's meta (hw:<p>, lw:<p>)
 * KEYS[2]  cfg   HASH    the group's positions (written: c:, f:, rw:)
 * KEYS[3]  wake  STREAM  bumped
 *
 * ARGV[1]  mode  'sequence' (a value above the high watermark is capped at it) | 'after' (used as is)
 * then per partition (at b = 2 + 2i): ARGV[b] partition, ARGV[b+1] the sequence to rewind after,
 * raised to the partition's trim point (`lw:<p>`): trimmed events are gone, not re-opened.
 *
 * Returns { how many existing events were rewound over, then each partition left to tidy }.
 * Errors:
 *   RHEO:stream_not_found / RHEO:group_not_found  keys gone -> that RheoError (explained)
 */
import { script } from './includes';

export const REPLAY = script(
  { uses: ['error', 'check-group', 'wake'] },
  `
local gone = missing(KEYS[1], KEYS[2])
if gone then return rheoError(gone) end
local out = { 0 }
local total = 0
for b = 2, #ARGV, 2 do
  local p = ARGV[b]
  local m = redis.call('HMGET', KEYS[1], 'hw:' .. p, 'lw:' .. p)
  local hw = tonumber(m[1] or '0')
  local after = tonumber(ARGV[b + 1])
  if ARGV[1] == 'sequence' and after > hw then after = hw end
  after = math.max(after, tonumber(m[2] or '0'))
  total = total + math.max(0, hw - after)
  local v = redis.call('HMGET', KEYS[2], 'f:' .. p, 'c:' .. p, 'rw:' .. p)
  local f, c = tonumber(v[1]), tonumber(v[2])
  local t = after
  if v[3] then t = math.min(t, tonumber(v[3])) end
  if c - 1 <= t then
    redis.call('HSET', KEYS[2], 'c:' .. p, t + 1, 'f:' .. p, math.min(f, t))
    redis.call('HDEL', KEYS[2], 'rw:' .. p)
  else
    redis.call('HSET', KEYS[2], 'rw:' .. p, t)
    out[#out + 1] = tonumber(p)
  end
end
out[1] = total
wake(KEYS[3])
return out
`,
);
