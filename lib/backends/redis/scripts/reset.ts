/**
 * reset: forget every delivery and dead letter of one group and restart each
 * partition after a sequence. The group's record keys are UNLINKed, not DELeted:
 * they can hold millions of entries, and UNLINK frees a large value in a background
 * thread, so this script's cost is per partition only. A rewind left unfinished by a
 * replay is superseded.
 *
 * KEYS[1]     meta    HASH    the stream's meta (partitions, hw:<p>)
 * KEYS[2]     cfg     HASH    the group's positions (written: f:, c:; rw: removed)
 * KEYS[3]     dl      HASH    delivery records (unlinked)
 * KEYS[4]     dead    HASH    dead letters (unlinked)
 * KEYS[5]     deadz   ZSET    dead-letter order (unlinked)
 * KEYS[6]     wake    STREAM  bumped
 * KEYS[7]     deadt   ZSET    dead letters by time (unlinked)
 * KEYS[8+2p]  leased  ZSET    the leased set of partition p (every partition; unlinked)
 * KEYS[9+2p]  avail   ZSET    the retry set of partition p (unlinked)
 * KEYS[8+2P+3p]  ko   HASH    open deliveries per key of partition p (P partitions; unlinked: every
 *                             event is fresh again, and the claim counts its key's places anew)
 * KEYS[9+2P+3p]  kw   ZSET    its deliveries waiting for their key (unlinked)
 * KEYS[10+2P+3p] log  STREAM  its log (not touched)
 *
 * ARGV[1]    mode   'end' (after each partition's high watermark, read here) | 'after'
 * ARGV[2+p]         mode 'after': the last sequence of partition p to skip (missing = 0);
 *                   never below the partition's trim point (includes/start.ts)
 *
 * Returns 1.
 * Errors:
 *   RHEO:stream_not_found / RHEO:group_not_found  keys gone -> that RheoError (explained)
 */
import { script } from './includes';

export const RESET = script(
  { uses: ['error', 'check-group', 'start', 'wake'] },
  `
local gone = missing(KEYS[1], KEYS[2])
if gone then return rheoError(gone) end
local P = tonumber(redis.call('HGET', KEYS[1], 'partitions'))
redis.call('UNLINK', KEYS[3], KEYS[4], KEYS[5], KEYS[7])
for p = 0, P - 1 do
  redis.call('UNLINK', KEYS[8 + 2 * p], KEYS[9 + 2 * p], KEYS[8 + 2 * P + 3 * p], KEYS[9 + 2 * P + 3 * p])
  startAfter(KEYS[1], KEYS[2], p, ARGV[1], ARGV[2 + p])
  -- A rewind left unfinished by a replay is superseded.
  redis.call('HDEL', KEYS[2], 'rw:' .. p)
end
wake(KEYS[6])
return 1
`,
);
