/**
 * renew: extend leases of one group, each fenced (live, same lease id, matching
 * receipt) and renewed in the same step. The backend sends at most 100 leases per
 * call, every call of one bulk renew in one pipeline.
 *
 * KEYS[1]    meta    HASH  the stream's meta (existence)
 * KEYS[2]    cfg     HASH  the group's config (existence)
 * KEYS[3]    dl      HASH  delivery records (written: the new expiry)
 * KEYS[4+j]  leased  ZSET  the leased set of the partition in slot j (written: the new expiry)
 *
 * ARGV[1]  now      ms
 * ARGV[2]  leaseMs  the new lease duration from now
 * ARGV[3]  ops      ONE JSON text, a flat array, per lease: partition, sequence (strings),
 *                   receiptOk (the receipt is 0-<sequence>: compared by the backend), leaseId
 *                   (leaseOpValues in ../redis-backend.ts). The slot j of a partition is its
 *                   order of first appearance among the leases (from 0), as the backend
 *                   declared the KEYS.
 *
 * Returns per lease 'ok' or a code: 'stale_lease' | 'receipt_mismatch' | 'stream_not_found' |
 * 'group_not_found', each mapped to that RheoError code for that lease (RedisBackend.opError).
 * Errors: none raised.
 */
import { script } from './includes';

export const RENEW = script(
  { uses: ['check-group', 'record', 'fence'] },
  `
local now = tonumber(ARGV[1])
local exp = now + tonumber(ARGV[2])
local out = {}
local gone = missing(KEYS[1], KEYS[2])
local ops = cjson.decode(ARGV[3])
local slots, nslots = {}, 0
for b = 1, #ops, 4 do
  local p, seq, lid = ops[b], ops[b + 1], ops[b + 3]
  if not slots[p] then slots[p] = nslots; nslots = nslots + 1 end
  if gone then
    out[#out + 1] = gone
  else
    local att, why = fence(KEYS[3], p, seq, lid, ops[b + 2], now)
    if att then
      redis.call('HSET', KEYS[3], p .. ':' .. seq, leasedRecord(att, lid, exp))
      redis.call('ZADD', KEYS[4 + slots[p]], exp, seq)
      out[#out + 1] = 'ok'
    else
      out[#out + 1] = why
    end
  end
end
return out
`,
);
