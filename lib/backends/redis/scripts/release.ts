/**
 * release: give leases back unhandled: each event is available now, and the
 * attempt its fetch counted is taken back. Fenced by lease id alone, not by expiry:
 * an expired lease that nobody claimed since still holds the record (a claim
 * rewrites it with a new lease id). Waiting consumers are woken as by a nack with
 * no delay. Batched by the backend as settle is.
 *
 * KEYS[1]     meta    HASH    the stream's meta (existence)
 * KEYS[2]     cfg     HASH    the group's config (existence)
 * KEYS[3]     dl      HASH    delivery records (written: available, attempt - 1)
 * KEYS[4]     wake    STREAM  bumped when anything was released
 * KEYS[5+2j]  leased  ZSET    the leased set of the partition in slot j (released ones removed)
 * KEYS[6+2j]  avail   ZSET    its retry set (released ones added, due now)
 *
 * ARGV[1]  now  ms
 * ARGV[2]  ops  ONE JSON text, a flat array, per lease: partition, sequence (strings),
 *               receiptOk (the receipt is 0-<sequence>: compared by the backend), leaseId
 *               (leaseOpValues in ../redis-backend.ts). The slot j of a partition is its
 *               order of first appearance among the leases (from 0), as the backend
 *               declared the KEYS.
 *
 * Returns per lease 'ok' or a code: 'stale_lease' | 'receipt_mismatch' | 'stream_not_found' |
 * 'group_not_found', mapped to that RheoError code for that lease (RedisBackend.opError).
 * Errors: none raised.
 */
import { script } from './includes';

export const RELEASE = script(
  { uses: ['check-group', 'chunked', 'record', 'fence', 'wake'] },
  `
local now = ARGV[1]
local out = {}
local gone = missing(KEYS[1], KEYS[2])
local unleased, due = {}, {}
local ops = cjson.decode(ARGV[2])
local slots, nslots = {}, 0
for b = 1, #ops, 4 do
  local p, seq, lid = ops[b], ops[b + 1], ops[b + 3]
  if not slots[p] then slots[p] = nslots; nslots = nslots + 1 end
  if gone then
    out[#out + 1] = gone
  else
    local j = slots[p]
    -- No now: an expired lease is still ours to release while nobody claimed it since.
    local att, why = fence(KEYS[3], p, seq, lid, ops[b + 2])
    if not att then
      out[#out + 1] = why
    else
      redis.call('HSET', KEYS[3], p .. ':' .. seq, availableRecord(math.max(0, att - 1)))
      unleased[j] = unleased[j] or {}
      unleased[j][#unleased[j] + 1] = seq
      due[j] = due[j] or {}
      due[j][#due[j] + 1] = now
      due[j][#due[j] + 1] = seq
      out[#out + 1] = 'ok'
    end
  end
end
local woke = false
for j, seqs in pairs(unleased) do
  chunked('ZREM', KEYS[5 + 2 * j], seqs, 1000)
  chunked('ZADD', KEYS[6 + 2 * j], due[j], 1000)
  woke = true
end
-- Waiting consumers are woken as by a nack with no delay: the events are claimable now.
if woke then wake(KEYS[4]) end
return out
`,
);
