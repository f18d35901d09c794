/**
 * deleteGroup: remove one group and everything of it in one step: its config and
 * positions, delivery records, dead letters (three keys), the leased and retry
 * sets of every partition, and its name in the stream's group set. The keys are
 * UNLINKed, not DELeted (as reset does): a group's records can hold millions of
 * entries, and UNLINK frees a large value in a background thread, so this
 * script's cost is per partition only. Every other group script checks the cfg
 * hash before it writes (includes/check-group.ts) and a trim checks the group
 * set, so nothing writes a key of the group after this: none is left behind.
 *
 * KEYS[1]     meta    HASH    the stream's meta (partitions; existence)
 * KEYS[2]     cfg     HASH    the group's config and positions (unlinked)
 * KEYS[3]     groups  SET     the stream's group names (the group removed)
 * KEYS[4]     dl      HASH    delivery records (unlinked)
 * KEYS[5]     dead    HASH    dead letters (unlinked)
 * KEYS[6]     deadz   ZSET    dead-letter order (unlinked)
 * KEYS[7]     deadt   ZSET    dead letters by time (unlinked)
 * KEYS[8]     wake    STREAM  bumped: a consumer waiting on the group looks again and learns it is gone
 * KEYS[9+2p]  leased  ZSET    the leased set of partition p (every partition; unlinked)
 * KEYS[10+2p] avail   ZSET    the retry set of partition p (unlinked)
 * KEYS[9+2P+3p]  ko   HASH    open deliveries per key of partition p (P partitions; unlinked)
 * KEYS[10+2P+3p] kw   ZSET    its deliveries waiting for their key (unlinked)
 * KEYS[11+2P+3p] log  STREAM  its log (not touched: passed with the key places, as every caller does)
 *
 * ARGV[1]  group  the group's name (its member in the group set)
 *
 * Returns 1.
 * Errors:
 *   RHEO:stream_not_found / RHEO:group_not_found  no meta / no cfg -> that RheoError
 */
import { script } from './includes';

export const DELETE_GROUP = script(
  { uses: ['error', 'check-group', 'wake'] },
  `
local gone = missing(KEYS[1], KEYS[2])
if gone then return rheoError(gone) end
local P = tonumber(redis.call('HGET', KEYS[1], 'partitions'))
redis.call('UNLINK', KEYS[2], KEYS[4], KEYS[5], KEYS[6], KEYS[7])
for p = 0, P - 1 do
  redis.call('UNLINK', KEYS[9 + 2 * p], KEYS[10 + 2 * p], KEYS[9 + 2 * P + 3 * p], KEYS[10 + 2 * P + 3 * p])
end
redis.call('SREM', KEYS[3], ARGV[1])
wake(KEYS[8])
return 1
`,
);
