/**
 * `fence(dl, p, seq, leaseId, receiptOk, now)`: the attempt of the lease `leaseId`
 * on sequence `seq` of partition `p`, or nil and why it is not held:
 *   'stale_lease'      no record, not leased, leased under another lease id, or
 *                      (when `now` is given) expired at `now`;
 *   'receipt_mismatch' the lease is held but its receipt is not the entry id `0-<seq>`
 *                      (`receiptOk` false: the backend compares it, see leaseOpValues
 *                      in ../../redis-backend.ts).
 * renew and settle pass `now`; release passes none, fencing by lease id alone (an
 * expired lease nobody claimed since still holds the record: a claim rewrites it
 * with a new lease id). `fenceRecord(rec, leaseId, receiptOk, now)`: the same on
 * a record the caller read (false or nil: none).
 */
import { include } from '../loader';

export const FENCE = include(
  'fence',
  { needs: ['record'] },
  `
-- The same check on a record already read (settle reads all of its records in one HMGET).
local function fenceRecord(rec, lid, receiptOk, now)
  if not rec then return nil, 'stale_lease' end
  local st, att, l, ex = parseRecord(rec)
  if st ~= 'L' or l ~= lid or (now and ex <= now) then return nil, 'stale_lease' end
  if not receiptOk then return nil, 'receipt_mismatch' end
  return att
end
-- The attempt of the live lease, or nil and the portable reason it is not live.
local function fence(dl, p, seq, lid, receiptOk, now)
  return fenceRecord(redis.call('HGET', dl, p .. ':' .. seq), lid, receiptOk, now)
end
`,
);
