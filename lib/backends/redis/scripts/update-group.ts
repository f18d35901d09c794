/**
 * updateGroup: replace a group's settings in place (docs/adr/047-changing-a-group-in-place.md);
 * its positions, delivery records and dead letters are untouched. fetch and settle read
 * `maxAttempts`, `ri`, `rf`, `rm`, `kc`, `gc` and `rl` from the cfg hash when they decide,
 * so every process applies the change from this call on. A `keyConcurrency` raised gives
 * the new places to the waiting deliveries of each key at once, earliest first
 * (docs/adr/049-flow-control.md; work in proportion to the deliveries waiting).
 *
 * KEYS[1]     meta   HASH    the stream's meta (existence)
 * KEYS[2]     cfg    HASH    the group's config (written: maxAttempts, ri, rf, rm, kc, gc, rl)
 * KEYS[3]     dl     HASH    delivery records (written: waiting ones given a place)
 * KEYS[4]     wake   STREAM  bumped when a waiting delivery got a place
 * KEYS[5+4p]  ko     HASH    open deliveries per key of partition p (every partition, in order)
 * KEYS[6+4p]  kw     ZSET    its deliveries waiting for their key
 * KEYS[7+4p]  avail  ZSET    its available set (promoted ones added)
 * KEYS[8+4p]  log    STREAM  its log (the deliverAt of a promoted event)
 *
 * ARGV[1]  maxAttempts
 * ARGV[2]  ri  retry initialMs
 * ARGV[3]  rf  retry factor
 * ARGV[4]  rm  retry maxMs
 * ARGV[5]  kc  keyConcurrency ('' = none)
 * ARGV[6]  gc  groupConcurrency ('' = none)
 * ARGV[7]  rl  rateLimit, `<max>:<perMs>` ('' = none)
 * ARGV[8]  now ms
 * (the stored names of ../group-config.ts)
 *
 * Returns the group's stored config fields, in the order of STORED_GROUP_FIELD_NAMES
 * (../group-config.ts).
 * Errors:
 *   RHEO:stream_not_found  no meta hash -> RheoError stream_not_found (explained)
 *   RHEO:group_not_found   no cfg hash -> RheoError group_not_found
 */
import { STORED_GROUP_FIELD_NAMES } from '../group-config';
import { script } from './includes';

export const UPDATE_GROUP = script(
  { uses: ['error', 'check-group', 'key-places', 'wake'] },
  `
local gone = missing(KEYS[1], KEYS[2])
if gone then return rheoError(gone) end
local before = placesOf(KEYS[2])
redis.call('HSET', KEYS[2], 'maxAttempts', ARGV[1], 'ri', ARGV[2], 'rf', ARGV[3], 'rm', ARGV[4], 'kc', ARGV[5], 'gc', ARGV[6], 'rl', ARGV[7])
if ARGV[7] == '' then redis.call('HDEL', KEYS[2], 'rlog') end
local places = placesOf(KEYS[2])
if before and places and places > before then
  local now = tonumber(ARGV[8])
  local promoted = 0
  for i = 5, #KEYS, 4 do
    local book = keyBook(KEYS[i], KEYS[i + 1], KEYS[3], KEYS[i + 2], KEYS[i + 3], tostring((i - 5) / 4), places)
    local seen = {}
    for _, m in ipairs(redis.call('ZRANGE', KEYS[i + 1], 0, -1)) do
      local key = string.gsub(string.sub(m, 1, -18), '%%(%x%x)', function(h) return string.char(tonumber(h, 16)) end)
      if not seen[key] then
        seen[key] = true
        promoted = promoted + keyPromote(book, key, now)
      end
    end
  end
  if promoted > 0 then wake(KEYS[4]) end
end
return redis.call('HMGET', KEYS[2], ${STORED_GROUP_FIELD_NAMES.map((f) => `'${f}'`).join(', ')})
`,
);
