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
 * then per lease (at b = 3 + 5i): ARGV[b] slot j, ARGV[b+1] partition, ARGV[b+2] sequence,
 * ARGV[b+3] leaseId, ARGV[b+4] receipt.
 *
 * Returns per lease 'ok' or a code: 'stale_lease' | 'receipt_mismatch' | 'stream_not_found' |
 * 'group_not_found', each mapped to that RheoError code for that lease (RedisBackend.opError).
 * Errors: none raised.
 */
import { CHECK_GROUP } from './includes/check-group';
import { FENCE } from './includes/fence';
import { RECORD } from './includes/record';

export const RENEW =
  CHECK_GROUP +
  RECORD +
  FENCE +
  `
local now = tonumber(ARGV[1])
local exp = now + tonumber(ARGV[2])
local out = {}
local gone = missing(KEYS[1], KEYS[2])
for b = 3, #ARGV, 5 do
  if gone then
    out[#out + 1] = gone
  else
    local p, seq, lid = ARGV[b + 1], ARGV[b + 2], ARGV[b + 3]
    local att, why = fence(KEYS[3], p, seq, lid, ARGV[b + 4], now)
    if att then
      redis.call('HSET', KEYS[3], p .. ':' .. seq, leasedRecord(att, lid, exp))
      redis.call('ZADD', KEYS[4 + tonumber(ARGV[b])], exp, seq)
      out[#out + 1] = 'ok'
    else
      out[#out + 1] = why
    end
  end
end
return out
`;
