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
import { CHUNKED } from './includes/chunked';
import { ERROR } from './includes/error';
import { WAKE } from './includes/wake';

export const APPEND =
  ERROR +
  CHECK_GROUP +
  CHUNKED +
  WAKE +
  `
local gone = missing(KEYS[1])
if gone then return rheoError(gone) end
local out = {}
local n = tonumber(ARGV[1])
-- The delayed events' deliverAt by index in the batch (kept as the caller's text).
local delayAt = {}
for d = 2 + 8 * n, #ARGV - 1, 2 do delayAt[tonumber(ARGV[d])] = ARGV[d + 1] end
-- The log key of each partition this call declared.
local logOf = {}
for i = 0, n - 1 do logOf[ARGV[4 + 8 * i]] = KEYS[4 + tonumber(ARGV[3 + 8 * i])] end
-- Reads and writes by batch, not by event (a batch of 500 made 2,000 calls, now about 500: the
-- XADDs): every id looked up in one HMGET; each partition's sequences allocated with one HINCRBY
-- by the number of new events, before any entry is written; the new ids recorded in one HSET.
-- An id twice in the batch: the second is the first's duplicate, as if it were already stored.
local ids = {}
for i = 0, n - 1 do ids[i + 1] = ARGV[2 + 8 * i] end
local known = {}
for i = 1, n, 500 do
  local got = redis.call('HMGET', KEYS[2], unpack(ids, i, math.min(i + 499, n)))
  for j = 1, #got do known[i + j - 1] = got[j] end
end
local seen, count, order = {}, {}, {}
for i = 1, n do
  if not known[i] and not seen[ids[i]] then
    seen[ids[i]] = true
    local p = ARGV[2 + 8 * (i - 1) + 2]
    if not count[p] then order[#order + 1] = p end
    count[p] = (count[p] or 0) + 1
  end
end
local nextSeq = {}
for _, p in ipairs(order) do nextSeq[p] = redis.call('HINCRBY', KEYS[1], 'hw:' .. p, count[p]) - count[p] + 1 end
local written, recorded = {}, {}
for i = 0, n - 1 do
  local b = 2 + 8 * i
  local id = ARGV[b]
  local k = known[i + 1] or written[id]
  if k then
    local kp, kseq = string.match(k, '^(%d+):(%d+)$')
    local e = logOf[kp] and redis.call('XRANGE', logOf[kp], '0-' .. kseq, '0-' .. kseq)[1]
    if e then out[#out + 1] = { k, e[2] } else out[#out + 1] = k end
  else
    local p = ARGV[b + 2]
    local seq = nextSeq[p]
    nextSeq[p] = seq + 1
    local f = { 'i', id, 't', ARGV[b + 3], 'm', ARGV[b + 6], 'd', ARGV[b + 7] }
    if ARGV[b + 4] ~= '' then f[#f + 1] = 'k'; f[#f + 1] = ARGV[b + 4] end
    if ARGV[b + 5] ~= '' then f[#f + 1] = 'y'; f[#f + 1] = ARGV[b + 5] end
    if delayAt[i] then
      f[#f + 1] = 'w'; f[#f + 1] = delayAt[i]
      redis.call('HSET', KEYS[1], 'dz:' .. p, seq)
    end
    redis.call('XADD', KEYS[4 + tonumber(ARGV[b + 1])], '0-' .. seq, unpack(f))
    written[id] = p .. ':' .. seq
    recorded[#recorded + 1] = id
    recorded[#recorded + 1] = written[id]
    out[#out + 1] = seq
  end
end
if #recorded > 0 then
  chunked('HSET', KEYS[2], recorded, 1000)
  wake(KEYS[3])
end
return out
`;
