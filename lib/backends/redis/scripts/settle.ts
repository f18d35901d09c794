/**
 * settle: ack / nack / reject leases of one group, each fenced and applied in the
 * same step. Dead-lettering and the retry delay follow the STORED attempt and the
 * group's STORED settings (maxAttempts and the backoff, read from cfg: a change by
 * updateGroup decides at once, docs/adr/047-changing-a-group-in-place.md), and a
 * dead letter is filed under the STORED event id: the lease object's copies are not
 * trusted. An id is unique among a stream's live events, but a trimmed id can be
 * appended again as a new event: its dead letter then replaces the old event's. An ack (or dead letter) at frontier + 1 walks the frontier, bounded by
 * `budget` records for the whole call; a walk cut short is finished by tidy. The
 * backend sends at most 100 ops per call, every call of one bulk settle in one pipeline.
 *
 * KEYS[1]     meta    HASH    the stream's meta (existence)
 * KEYS[2]     cfg     HASH    the group's config (maxAttempts, ri, rf, rm, ord), frontiers f:<p> (written)
 * KEYS[3]     dl      HASH    delivery records (written)
 * KEYS[4]     dead    HASH    dead letters by event id (written)
 * KEYS[5]     deadz   ZSET    dead letters in (partition, sequence) order (written)
 * KEYS[6]     wake    STREAM  bumped when a nack makes an event available again, and on any
 *                             settle in a partition-ordered group (the next event became claimable),
 *                             under groupConcurrency (a place freed), or when a waiting delivery got its key's place
 * KEYS[7]     deadt   ZSET    dead letters by the time they were dead-lettered (written)
 * KEYS[8+3j]  leased  ZSET    the leased set of the partition in slot j (settled ones removed)
 * KEYS[9+3j]  avail   ZSET    its retry set (a nacked sequence added, due at now + delay)
 * KEYS[10+3j] log     STREAM  its log (read: the stored event id of a dead letter, the key of an ended
 *                             delivery in a group with key places)
 * KEYS[8+3n+2j] ko    HASH    open deliveries per key of the partition in slot j (n: how many partitions):
 *                             an ack or dead letter gives its key's place to the key's earliest waiting
 *                             delivery (includes/key-places.ts); touched only in a group with key places
 * KEYS[9+3n+2j] kw    ZSET    its deliveries waiting for their key
 *
 * ARGV[1]     now     ms
 * ARGV[2]     budget  records the frontier walk may look at in this call
 * ARGV[3]     ops     ONE JSON text, a flat array (one argument, not eight per op: the
 *                     client encodes, and the server converts, one), per op by kind:
 *                       ack     'a', partition, sequence, receiptOk, leaseId
 *                       reject  'r', partition, sequence, receiptOk, leaseId, reason
 *                       nack    'n', partition, sequence, receiptOk, leaseId, reason (used when it
 *                               dead-letters), delayMs (null = the group's stored backoff at the stored attempt)
 *                     partition and sequence as strings; receiptOk true when the lease's receipt is
 *                     the entry id 0-<sequence> (compared by the backend, answered after the fence).
 *                     The slot j of a partition is its order of first appearance among the ops
 *                     (from 0), as the backend declared the KEYS. Built by settleOpValues and
 *                     leaseOpValues in ../redis-backend.ts.
 *
 * Returns per op what it wrote, by the stored settings: 'ok' (an ack), 'ok:reject',
 * 'ok:dead_letter', 'ok:retry:<delay ms>'; or a code: 'stale_lease' | 'receipt_mismatch' |
 * 'stream_not_found' | 'group_not_found' (mapped to that RheoError code for that op by
 * RedisBackend.opError); then two more elements: 1 when the frontier walk was cut short (the
 * backend runs tidy), else 0; and the group's stored maxAttempts that decided the nacks (-1
 * when the group is gone).
 * Errors: none raised.
 */
import { script } from './includes';

export const SETTLE = script(
  { uses: ['check-group', 'chunked', 'record', 'fence', 'frontier', 'positions', 'dead-letter', 'log-entry', 'key-places', 'wake'] },
  `
-- How many values an op of each kind takes in the ops JSON (see ARGV).
local OP_WIDTH = { a = 5, r = 6, n = 7 }
local now = tonumber(ARGV[1])
local budget = tonumber(ARGV[2])
local out = {}
local gone = missing(KEYS[1], KEYS[2])
local cfg = redis.call('HMGET', KEYS[2], 'maxAttempts', 'ri', 'rf', 'rm', 'ord', 'kc', 'gc')
local maxAttempts = tonumber(cfg[1] or '-1')
-- A settle frees the next event of an ordered partition, or a place of a groupConcurrency: waiters are woken.
local ordered = cfg[5] == 'partition' or (cfg[7] and cfg[7] ~= '')
local places = nil
if cfg[5] == 'key' then places = 1 elseif cfg[6] and cfg[6] ~= '' then places = tonumber(cfg[6]) end
-- Keys of the deliveries ended here, per slot (a group with key places only).
local ended = {}
-- Core's backoff (core/backoff.ts backoffDelay: initialMs * factor^(attempt - 1), rounded half up, capped at
-- maxMs) over the stored retry; the exponent capped where factor^attempt would leave double precision.
local function backoff(att)
  local ri, rf, rm = tonumber(cfg[2] or '0'), tonumber(cfg[3] or '1'), tonumber(cfg[4] or '0')
  local e = math.min(math.max(att, 1) - 1, math.floor(290 / math.log10(math.max(rf, 1.000001))))
  return math.min(rm, math.floor(ri * rf ^ e + 0.5))
end
local woke = false
local cut = false
-- Every op's delivery record, read in one HMGET (not one HGET per op). recs[k] then follows what
-- this call decided (a settled lease reads as terminal or available), so an op settling the same
-- lease again in the same call is fenced as it would be by the stored record.
local recs = {}
-- The ops, decoded once: where each starts in ops, its record's field, its partition's slot j
-- (numbered by first appearance, as the backend numbered the KEYS).
local ops = cjson.decode(ARGV[3])
local starts, fields, slots = {}, {}, {}
local nslots = 0
do
  local b = 1
  while b <= #ops do
    local p = ops[b + 1]
    starts[#starts + 1] = b
    fields[#fields + 1] = p .. ':' .. ops[b + 2]
    if not slots[p] then slots[p] = nslots; nslots = nslots + 1 end
    b = b + OP_WIDTH[ops[b]]
  end
end
if not gone then
  for i = 1, #fields, 500 do
    local got = redis.call('HMGET', KEYS[3], unpack(fields, i, math.min(i + 499, #fields)))
    for n = 1, #got do recs[fields[i + n - 1]] = got[n] end
  end
end
-- Made terminal here, by partition: done[p][seq] = attempt. Their records are written once at the
-- end (dropped if the frontier walk passes them, a T record if not), so acks in sequence order cost
-- one walk per partition instead of a delete and a read each.
local done = {}
-- Nacked: the available records (one HSET) and each partition's retry entries (one ZADD).
local avail, retries = {}, {}
local unleased = {}
for o, b in ipairs(starts) do
  if gone then
    out[#out + 1] = gone
  else
    local kind, p, seq, lid = ops[b], ops[b + 1], ops[b + 2], ops[b + 4]
    local j, k = slots[p], fields[o]
    local att, why = fenceRecord(recs[k], lid, ops[b + 3], now)
    if not att then
      out[#out + 1] = why
    else
      unleased[j] = unleased[j] or {}
      unleased[j][#unleased[j] + 1] = seq
      -- A partition-ordered group's next event becomes claimable when its head
      -- settles: no append announces it, so the settle wakes the waiters.
      if ordered then woke = true end
      if kind == 'a' or kind == 'r' or att >= maxAttempts then
        local entry = nil
        if places then
          entry = logEntry(KEYS[10 + 3 * j], seq)
          local key = entryField(entry, 'k')
          if key then
            ended[j] = ended[j] or {}
            ended[j][#ended[j] + 1] = key
          end
        end
        if kind ~= 'a' then
          local id = entryField(entry or logEntry(KEYS[10 + 3 * j], seq), 'i') or ''
          -- The same id dead-lettered at another position: a trimmed event's, replaced.
          local old = redis.call('HGET', KEYS[4], id)
          if old then
            local oldP, oldSeq = deadRecordPosition(old)
            if tonumber(oldP) ~= tonumber(p) or tonumber(oldSeq) ~= tonumber(seq) then
              redis.call('ZREM', KEYS[5], deadMember(oldP, oldSeq, id))
            end
          end
          redis.call('HSET', KEYS[4], id, deadRecord(p, seq, att, now, ops[b + 5]))
          redis.call('ZADD', KEYS[5], 0, deadMember(p, seq, id))
          redis.call('ZADD', KEYS[7], now, id)
        end
        done[p] = done[p] or {}
        done[p][tonumber(seq)] = att
        recs[k] = terminalRecord(att)
        out[#out + 1] = (kind == 'a' and 'ok') or (kind == 'r' and 'ok:reject') or 'ok:dead_letter'
      else
        local delay = ops[b + 6]
        if delay == cjson.null then delay = backoff(att) end
        recs[k] = availableRecord(att)
        avail[#avail + 1] = k
        avail[#avail + 1] = recs[k]
        retries[j] = retries[j] or {}
        retries[j][#retries[j] + 1] = now + tonumber(delay)
        retries[j][#retries[j] + 1] = seq
        woke = true
        out[#out + 1] = 'ok:retry:' .. string.format('%d', tonumber(delay))
      end
    end
  end
end
if #avail > 0 then chunked('HSET', KEYS[3], avail, 1000) end
for j, list in pairs(retries) do chunked('ZADD', KEYS[9 + 3 * j], list, 1000) end
-- The frontier of each partition with an event made terminal at frontier + 1 walks (one budget for
-- the call); the terminal events it did not pass keep a T record.
local terminals = {}
for p, seqs in pairs(done) do
  local s = position(KEYS[2], p)
  if seqs[s.f + 1] then
    -- Frontier + 1 is passed whatever the cursor says, as an ack there always was; the walk goes on below it.
    redis.call('HDEL', KEYS[3], p .. ':' .. (s.f + 1))
    local more
    s.f, budget, more = walkFrontier(KEYS[3], p, s.f + 1, s.c, budget, seqs)
    if more then cut = true end
  end
  for seq, att in pairs(seqs) do
    if seq > s.f then
      terminals[#terminals + 1] = p .. ':' .. seq
      terminals[#terminals + 1] = terminalRecord(att)
    end
  end
end
if #terminals > 0 then chunked('HSET', KEYS[3], terminals, 1000) end
for j, seqs in pairs(unleased) do chunked('ZREM', KEYS[8 + 3 * j], seqs, 1000) end
saveFrontiers(KEYS[2])
for p, j in pairs(slots) do
  if ended[j] then
    local book = keyBook(KEYS[8 + 3 * nslots + 2 * j], KEYS[9 + 3 * nslots + 2 * j], KEYS[3], KEYS[9 + 3 * j], KEYS[10 + 3 * j], p, places)
    for _, key in ipairs(ended[j]) do
      if keyEnded(book, key, now) > 0 then woke = true end
    end
  end
end
if woke then wake(KEYS[6]) end
out[#out + 1] = cut and 1 or 0
out[#out + 1] = maxAttempts
return out
`,
);
