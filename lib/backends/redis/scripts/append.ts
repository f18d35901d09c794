/**
 * append: append events, allocating each partition's sequences (HINCRBY of the
 * high watermark) and XADDing with entry id `0-<sequence>` in the same step, so
 * log order = sequence order. Idempotent by event id. Not sliced: a batch is
 * atomic by contract, and the facade caps it at 10,000 events.
 *
 * KEYS[1]    meta   HASH    the stream's meta (`hw:<p>` incremented)
 * KEYS[2]    ids    HASH    event id -> `<p>:<seq>` (read and written)
 * KEYS[3]    wake   STREAM  bumped when anything was written
 * KEYS[4+j]  log    STREAM  the log of the partition in slot j
 *
 * ARGV[1]  n  the number of events; then per event i (at b = 2 + 8i):
 * ARGV[b]    id         event id
 * ARGV[b+1]  slot       j, the KEYS slot of its partition's log
 * ARGV[b+2]  partition
 * ARGV[b+3]  timestamp  ms
 * ARGV[b+4]  key        '' = none
 * ARGV[b+5]  type       '' = none
 * ARGV[b+6]  metadata   JSON
 * ARGV[b+7]  payload    JSON
 * then per delayed event (none for a batch without one), at d = 2 + 8n + 2k:
 * ARGV[d]    i          its index in the batch (from 0)
 * ARGV[d+1]  deliverAt  ms: stored as the entry's `w`, and the partition's `dz:<p>`
 *                       in meta moves to its sequence (fetch reads `w` up to it)
 * (built by appendArgs and appendDelayArgs in ../codec.ts; entry fields as listed there)
 *
 * Returns per event its new sequence (integer), or, when the id was already stored,
 * `{ '<p>:<seq>', entry fields }` read in the same step (a trim cannot take the entry
 * between the lookup and the read), or just `'<p>:<seq>'` when that partition's log
 * is not among this call's keys (the backend then reads the entry itself).
 * Errors:
 *   RHEO:stream_not_found  no meta hash -> RheoError stream_not_found (explained)
 */
import { CHECK_GROUP } from './includes/check-group';
import { ERROR } from './includes/error';
import { WAKE } from './includes/wake';

export const APPEND =
  ERROR +
  CHECK_GROUP +
  WAKE +
  `
local gone = missing(KEYS[1])
if gone then return rheoError(gone) end
local out = {}
local wrote = false
local n = tonumber(ARGV[1])
-- The delayed events' deliverAt by index in the batch (kept as the caller's text).
local delayAt = {}
for d = 2 + 8 * n, #ARGV - 1, 2 do delayAt[tonumber(ARGV[d])] = ARGV[d + 1] end
-- The log key of each partition this call declared.
local logOf = {}
for i = 0, n - 1 do logOf[ARGV[4 + 8 * i]] = KEYS[4 + tonumber(ARGV[3 + 8 * i])] end
for i = 0, n - 1 do
  local b = 2 + 8 * i
  local id = ARGV[b]
  local known = redis.call('HGET', KEYS[2], id)
  if known then
    local kp, kseq = string.match(known, '^(%d+):(%d+)$')
    local e = logOf[kp] and redis.call('XRANGE', logOf[kp], '0-' .. kseq, '0-' .. kseq)[1]
    if e then out[#out + 1] = { known, e[2] } else out[#out + 1] = known end
  else
    local p = ARGV[b + 2]
    local seq = redis.call('HINCRBY', KEYS[1], 'hw:' .. p, 1)
    local f = { 'i', id, 't', ARGV[b + 3], 'm', ARGV[b + 6], 'd', ARGV[b + 7] }
    if ARGV[b + 4] ~= '' then f[#f + 1] = 'k'; f[#f + 1] = ARGV[b + 4] end
    if ARGV[b + 5] ~= '' then f[#f + 1] = 'y'; f[#f + 1] = ARGV[b + 5] end
    if delayAt[i] then
      f[#f + 1] = 'w'; f[#f + 1] = delayAt[i]
      redis.call('HSET', KEYS[1], 'dz:' .. p, seq)
    end
    redis.call('XADD', KEYS[4 + tonumber(ARGV[b + 1])], '0-' .. seq, unpack(f))
    redis.call('HSET', KEYS[2], id, p .. ':' .. seq)
    out[#out + 1] = seq
    wrote = true
  end
end
if wrote then wake(KEYS[3]) end
return out
`;
