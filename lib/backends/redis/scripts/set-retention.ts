/**
 * setRetention: replace a stream's retention (every limit not given is cleared).
 *
 * KEYS[1]  meta  HASH  the stream's meta (written: ra, re, rd)
 *
 * ARGV[1]  ra  retention maxAgeMs, '' = none
 * ARGV[2]  re  retention maxEvents, '' = none
 * ARGV[3]  rd  retention deadLetterMaxAgeMs, '' = none
 * (as ../retention.ts encodes them)
 *
 * Returns { partitions, createdAt } of the stream.
 * Errors:
 *   RHEO:stream_not_found  no meta hash -> RheoError stream_not_found (explained)
 */
import { script } from './includes';

export const SET_RETENTION = script(
  { uses: ['error', 'retention'] },
  `
local v = redis.call('HMGET', KEYS[1], 'partitions', 'createdAt')
if not v[1] then return rheoError('stream_not_found') end
storeRetention(KEYS[1], ARGV[1], ARGV[2], ARGV[3])
return v
`,
);
