/**
 * reschedule: make waiting deliveries of one group (includes/waiting.ts) due at
 * another time, their attempt kept (docs/adr/048-skip-reschedule-cancel.md): an
 * available record, out of the leased set, into the available set at `due`. The
 * backend sends at most SKIP_PER_CALL ids per call.
 *
 * KEYS[1]     meta    HASH    the stream's meta (existence, lw:<p>)
 * KEYS[2]     cfg     HASH    the group's config (c:<p>)
 * KEYS[3]     dl      HASH    delivery records (written)
 * KEYS[4]     ids     HASH    event id -> <partition>:<sequence>
 * KEYS[5]     wake    STREAM  bumped when something was made due at once
 * KEYS[6+2p]  leased  ZSET    partition p's leased set (rescheduled ones removed), for every partition p
 * KEYS[7+2p]  avail   ZSET    partition p's available set (rescheduled ones added at due)
 * KEYS[6+2P+3p] ko, KEYS[7+2P+3p] kw, KEYS[8+2P+3p] log: partition p's key places (P partitions; not
 *                             touched here: passed as skip takes them)
 *
 * ARGV[1]    now  ms, from the backend's clock
 * ARGV[2]    due  ms, when the deliveries may be claimed again
 * ARGV[3..]  ids  event ids
 *
 * Returns per id 'ok' or a code of waitingOf, or 'waits_for_key' for a delivery waiting for a place
 * of its key (docs/adr/049-flow-control.md: its turn is its key's), left as it is.
 * Errors:
 *   RHEO:stream_not_found  no meta hash -> RheoError stream_not_found (explained)
 *   RHEO:group_not_found   no cfg hash -> RheoError group_not_found (explained)
 */
import { script } from './includes';

export const RESCHEDULE = script(
  { uses: ['error', 'check-group', 'record', 'waiting', 'wake'] },
  `
local now, due = tonumber(ARGV[1]), tonumber(ARGV[2])
local gone = missing(KEYS[1], KEYS[2])
if gone then return rheoError(gone) end
local out, n = eachWaiting(KEYS[1], KEYS[4], KEYS[2], KEYS[3], now, ARGV, 3, function(p, b, att, j, st)
  if st == 'W' then return 'waits_for_key' end
  redis.call('ZREM', KEYS[6 + 2 * j], b)
  redis.call('ZADD', KEYS[7 + 2 * j], due, b)
  redis.call('HSET', KEYS[3], p .. ':' .. b, availableRecord(att))
end)
if n > 0 and due <= now then wake(KEYS[5]) end
return out
`,
);
