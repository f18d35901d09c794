/**
 * append: append events, allocating each partition's sequences (HINCRBY of the
 * high watermark) and XADDing with entry id `0-<sequence>` in the same step, so
 * log order = sequence order. Idempotent by event id. Not sliced: a batch is
 * atomic by contract, and the facade caps it at 10,000 events.
 *
 * KEYS[1]    meta   HASH    the stream's meta (`hw:<p>` incremented)
 * KEYS[2]    ids    HASH    event id -> `<p>:<seq>` (read and written)
 * KEYS[3]    wake   STREAM  bumped when anything was written
 * KEYS[4+j]  log    STREAM  the log of partition slot j: the batch's partitions numbered
 *                           by first appearance in it, from 0 (the script numbers them alike)
 *
 * ARGV[1]  the small fields of the whole batch as ONE JSON array (one cjson.decode
 *          instead of 6 arguments per event), 5 values per event i (from 0) at 5i+1:
 *            id, partition (number), timestamp (ms, as a string), key ('' = none),
 *            type ('' = none)
 * then per event i, at b = 2 + 2i (raw texts, stored as they are):
 * ARGV[b]    metadata   JSON
 * ARGV[b+1]  payload    JSON
 * then per delayed event (none for a batch without one), at d = 2 + 2n + 2k:
 * ARGV[d]    i          its index in the batch (from 0)
 * ARGV[d+1]  deliverAt  ms: stored as the entry's `w`, and the partition's `dz:<p>`
 *                       in meta moves to its sequence (fetch reads `w` up to it)
 * (built by appendArgs in ../codec.ts; entry fields as listed there, written in the
 * order i, t, m, d, k, y, w, which fetch reads by position)
 *
 * Returns `{ firsts, i, stored, i, stored, ... }`: firsts[j+1] is the first new sequence
 * of partition slot j (0 when the batch stored nothing new there; its new events take
 * the following sequences in batch order); then, per event whose id was already
 * stored (or came earlier in the batch), its index i (from 0) and either
 * `{ '<p>:<seq>', entry fields }` read in the same step (a trim cannot take the entry
 * between the lookup and the read), or just `'<p>:<seq>'` when that partition's log
 * is not among this call's keys (the backend then reads the entry itself).
 * Errors:
 *   RHEO:stream_not_found  no meta hash -> RheoError stream_not_found (explained)
 */
import { script } from './includes';

export const APPEND = script(
  { uses: ['error', 'check-group', 'chunked', 'wake'] },
  `
local gone = missing(KEYS[1])
if gone then return rheoError(gone) end
local ev = cjson.decode(ARGV[1])
local n = #ev / 5
-- The delayed events' deliverAt by index in the batch (kept as the caller's text).
local delayAt = {}
for d = 2 + 2 * n, #ARGV - 1, 2 do delayAt[tonumber(ARGV[d])] = ARGV[d + 1] end
-- Reads and writes by batch, not by event: every id looked up in one HMGET; each partition's
-- sequences allocated with one HINCRBY by the number of new events, before any entry is
-- written; the new ids recorded in one HSET. An id twice in the batch: the second is the
-- first's duplicate, as if it were already stored.
local ids = {}
for i = 1, n do ids[i] = ev[5 * i - 4] end
local known = {}
for i = 1, n, 500 do
  local got = redis.call('HMGET', KEYS[2], unpack(ids, i, math.min(i + 499, n)))
  for j = 1, #got do known[i + j - 1] = got[j] end
end
-- Partition slots by first appearance (the backend declared the logs in KEYS in that order).
local logOf, order, count, seen = {}, {}, {}, {}
for i = 1, n do
  local p = ev[5 * i - 3]
  if not logOf[p] then
    order[#order + 1] = p
    logOf[p] = KEYS[3 + #order]
    count[p] = 0
  end
  local id = ids[i]
  if not known[i] and not seen[id] then
    seen[id] = true
    count[p] = count[p] + 1
  end
end
local firsts, nextSeq = {}, {}
for j, p in ipairs(order) do
  if count[p] > 0 then nextSeq[p] = redis.call('HINCRBY', KEYS[1], 'hw:' .. p, count[p]) - count[p] + 1 end
  firsts[j] = nextSeq[p] or 0
end
local out = { firsts }
local written, recorded = {}, {}
for i = 1, n do
  local e = 5 * i - 4
  local id = ids[i]
  local k = known[i] or written[id]
  if k then
    local kp, kseq = string.match(k, '^(%d+):(%d+)$')
    local log = logOf[tonumber(kp)]
    local entry = log and redis.call('XRANGE', log, '0-' .. kseq, '0-' .. kseq)[1]
    out[#out + 1] = i - 1
    if entry then out[#out + 1] = { k, entry[2] } else out[#out + 1] = k end
  else
    local p = ev[e + 1]
    local seq = nextSeq[p]
    nextSeq[p] = seq + 1
    local log, eid, ts, key, typ = logOf[p], '0-' .. seq, ev[e + 2], ev[e + 3], ev[e + 4]
    local m, d = ARGV[2 * i], ARGV[2 * i + 1]
    local w = delayAt[i - 1]
    -- One XADD per event with its fields spelled out (no table built and unpacked per event),
    -- always in the order i, t, m, d, k, y, w.
    if w then
      local f = { 'i', id, 't', ts, 'm', m, 'd', d }
      if key ~= '' then f[#f + 1] = 'k'; f[#f + 1] = key end
      if typ ~= '' then f[#f + 1] = 'y'; f[#f + 1] = typ end
      f[#f + 1] = 'w'; f[#f + 1] = w
      redis.call('HSET', KEYS[1], 'dz:' .. p, seq)
      redis.call('XADD', log, eid, unpack(f))
    elseif key ~= '' then
      if typ ~= '' then redis.call('XADD', log, eid, 'i', id, 't', ts, 'm', m, 'd', d, 'k', key, 'y', typ)
      else redis.call('XADD', log, eid, 'i', id, 't', ts, 'm', m, 'd', d, 'k', key) end
    elseif typ ~= '' then redis.call('XADD', log, eid, 'i', id, 't', ts, 'm', m, 'd', d, 'y', typ)
    else redis.call('XADD', log, eid, 'i', id, 't', ts, 'm', m, 'd', d) end
    local ref = p .. ':' .. seq
    written[id] = ref
    recorded[#recorded + 1] = id
    recorded[#recorded + 1] = ref
  end
end
if #recorded > 0 then
  chunked('HSET', KEYS[2], recorded, 1000)
  wake(KEYS[3])
end
return out
`,
);
