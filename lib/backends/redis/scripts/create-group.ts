/**
 * createGroup: create a group's cfg hash and start each partition after a position.
 *
 * KEYS[1]  meta    HASH  the stream's meta (partitions, hw:<p>)
 * KEYS[2]  cfg     HASH  the group's config and positions (written)
 * KEYS[3]  groups  SET   the stream's group names (written)
 *
 * ARGV[1]        group  the group's name
 * ARGV[2]        mode   'end' (after each partition's high watermark, read here) | 'after'
 * ARGV[3]        n      how many config values follow (field/value pairs, so even)
 * ARGV[4..3+n]          the group's config as stored field/value pairs (encodeGroupConfig in
 *                       ../group-config.ts: maxAttempts, ri, rf, rm, ord, createdAt)
 * ARGV[4+n+p]           mode 'after': the last sequence of partition p to skip (missing = 0)
 *
 * Also written: `rr` = 0 (fetch rotation), `f:<p>` and `c:<p>` per partition.
 * Returns 1.
 * Errors:
 *   RHEO:stream_not_found  no meta hash -> RheoError stream_not_found (explained)
 *   RHEO:already_exists    the cfg hash exists -> RheoError already_exists ("group ... already exists on stream ...")
 */
import { script } from './includes';

export const CREATE_GROUP = script(
  { uses: ['error', 'start'] },
  `
local P = tonumber(redis.call('HGET', KEYS[1], 'partitions'))
if not P then return rheoError('stream_not_found') end
if redis.call('EXISTS', KEYS[2]) == 1 then return rheoError('already_exists') end
local n = tonumber(ARGV[3])
redis.call('HSET', KEYS[2], unpack(ARGV, 4, 3 + n))
redis.call('HSET', KEYS[2], 'rr', 0)
for p = 0, P - 1 do
  startAfter(KEYS[1], KEYS[2], p, ARGV[2], ARGV[4 + n + p])
end
redis.call('SADD', KEYS[3], ARGV[1])
return 1
`,
);
