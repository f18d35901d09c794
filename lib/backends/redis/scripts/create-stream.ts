/**
 * createStream: create a stream's meta hash (the authority for its existence).
 * The registry behind listStreams is another slot's key: the backend adds the name
 * after this script (and again on already_exists, repairing a lost registration).
 *
 * KEYS[1]  meta    HASH  the stream's meta (written: partitions, createdAt, retention)
 *
 * ARGV[1]  partitions  the partition count
 * ARGV[2]  createdAt   ms since the epoch, from the backend's clock
 * ARGV[3]  ra          retention maxAgeMs, '' = none
 * ARGV[4]  re          retention maxEvents, '' = none
 * ARGV[5]  rd          retention deadLetterMaxAgeMs, '' = none
 * (the retention fields as ../retention.ts encodes them)
 *
 * Returns 1.
 * Errors:
 *   RHEO:already_exists  the meta hash exists -> RheoError already_exists ("stream ... already exists")
 */
import { script } from './includes';

export const CREATE_STREAM = script(
  { uses: ['error', 'retention'] },
  `
if redis.call('EXISTS', KEYS[1]) == 1 then return rheoError('already_exists') end
redis.call('HSET', KEYS[1], 'partitions', ARGV[1], 'createdAt', ARGV[2])
storeRetention(KEYS[1], ARGV[3], ARGV[4], ARGV[5])
return 1
`,
);
