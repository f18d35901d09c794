/**
 * countDeadLetters: how many dead letters a group holds, all of them or those
 * dead-lettered at or after a time. Constant work: HLEN for all, ZCOUNT on the time
 * index `deadt` (O(log n)) for a time, so a health check can ask on every probe.
 *
 * `deadt` arrived with layout 2 (see ./purge.ts): while it has fewer members than
 * `dead`, records written before it are missing from it and a count by time would
 * be short, so the script answers 'index' instead; the caller indexes them with the
 * purge script's 'index' mode (once: every write since keeps the index whole) and
 * asks again with ARGV[2] = '1'.
 *
 * KEYS[1]  meta   HASH  the stream's meta (existence)
 * KEYS[2]  cfg    HASH  the group's config (existence)
 * KEYS[3]  dead   HASH  dead letters by event id
 * KEYS[4]  deadt  ZSET  dead letters by time
 *
 * ARGV[1]  since  ms, or '' for every dead letter
 * ARGV[2]  '1' when the caller has just indexed (count whatever the index holds)
 *
 * Returns { count }, or { 'index' } while the time index is incomplete (and ARGV[2] is not '1').
 * Errors:
 *   RHEO:stream_not_found / RHEO:group_not_found  keys gone -> that RheoError (explained)
 */
import { script } from './includes';

export const COUNT_DEAD_LETTERS = script(
  { uses: ['error', 'check-group'] },
  `
local gone = missing(KEYS[1], KEYS[2])
if gone then return rheoError(gone) end
local all = redis.call('HLEN', KEYS[3])
if ARGV[1] == '' then return { all } end
if ARGV[2] ~= '1' and redis.call('ZCARD', KEYS[4]) < all then return { 'index' } end
return { redis.call('ZCOUNT', KEYS[4], ARGV[1], '+inf') }
`,
);
