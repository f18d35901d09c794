/**
 * deadLetters: one page of a group's dead letters in (partition, sequence) order,
 * with their events. Not sliced: the facade caps a page at 1000.
 *
 * KEYS[1]    meta   HASH    the stream's meta (existence)
 * KEYS[2]    cfg    HASH    the group's config (existence)
 * KEYS[3]    dead   HASH    dead letters by event id
 * KEYS[4]    deadz  ZSET    dead-letter order
 * KEYS[5+p]  log    STREAM  the log of partition p (every partition, in order)
 *
 * ARGV[1]  limit  dead letters in the page
 * ARGV[2]  after  the event id the previous page ended with, or '' for the first page
 *
 * Returns per dead letter: event id, dead record (`p|seq|attempt|at|reason`), entry fields
 * ({} when the entry is gone: trimmed).
 * Errors:
 *   RHEO:stream_not_found / RHEO:group_not_found  keys gone -> that RheoError (explained)
 *   RHEO:invalid_argument:after  `after` is not a dead letter of the group
 *                                -> RheoError invalid_argument on field `after`
 */
import { script } from './includes';

export const DEAD_LETTERS = script(
  { uses: ['error', 'check-group', 'dead-letter', 'log-entry'] },
  `
local gone = missing(KEYS[1], KEYS[2])
if gone then return rheoError(gone) end
local lo = '-'
if ARGV[2] ~= '' then
  local rec = redis.call('HGET', KEYS[3], ARGV[2])
  if not rec then return rheoError('invalid_argument:after') end
  local p, seq = deadRecordPosition(rec)
  lo = '(' .. deadMember(p, seq, ARGV[2])
end
local out = {}
for _, m in ipairs(redis.call('ZRANGEBYLEX', KEYS[4], lo, '+', 'LIMIT', 0, tonumber(ARGV[1]))) do
  local id = deadMemberId(m)
  local rec = redis.call('HGET', KEYS[3], id)
  local p, seq = nil, nil
  if rec then p, seq = deadRecordPosition(rec) end
  -- Listed only when the record is this member's (every write keeps the two keys in step).
  if p and tonumber(p) == deadMemberPartition(m) and tonumber(seq) == deadMemberSequence(m) then
    local e = logEntry(KEYS[5 + tonumber(p)], seq)
    out[#out + 1] = id
    out[#out + 1] = rec
    out[#out + 1] = e and e[2] or {}
  end
end
return out
`,
);
