/**
 * fetch: claim up to `limit` events for one group: due redeliveries and expired
 * leases first (the earliest-due `limit` of a partition, then taken in sequence
 * order), then never-delivered events from the cursor; partitions interleaved
 * round-robin from a rotating start (`rr`). With ordering 'partition' only
 * frontier + 1 of a partition with no live lease is claimable. A partition under a
 * rewind (`rw:<p>`, see replay) is left alone until the rewind is done. Nothing is
 * written before every claimed entry was read. Nothing at or below a partition's
 * trim point (`lw:<p>`) is ever claimed, whatever the group's keys say: its
 * cursor is taken as at least lw + 1 and its frontier as at least lw (every path
 * that starts or moves a group keeps them there; this is the guard behind them).
 * A never-delivered delayed event whose deliverAt (entry field `w`) is after now
 * is chosen like any other (it takes a place of the limit, and the cursor passes
 * it) but parked instead of leased: an available record of attempt 0 in `avail`,
 * scored by its deliverAt, like a nack's delay (docs/adr/028-delayed-events.md).
 * `w` is looked at only up to the partition's `dz:<p>` (its last delayed event).
 * A redelivery whose lease expired on the group's last attempt (`maxAttempts` of
 * cfg) is dead-lettered instead of leased, as settle dead-letters (docs/adr/035):
 * it takes its place of the limit like a parked event, and reports `pending` when
 * it is at frontier + 1 (the backend's tidy walks the frontier past it). A delayed
 * event cancelled in every group (`cx`, docs/adr/048-skip-reschedule-cancel.md) met
 * fresh, or due at attempt 0 (a re-open since the cancel), is made terminal instead
 * of leased or parked, taking its place of the limit the same way.
 * A paused group (docs/adr/046-pausing-a-group.md: cfg field `pu`, the pause's until
 * or '-', read in the HMGET of the positions) claims nothing while `pu` is '-' or
 * after now: the call answers `paused` and writes nothing (nor reads `cx`).
 * Flow limits (docs/adr/049-flow-control.md: cfg `kc`, `gc`, `rl`, read in the same
 * HMGET; a group without them does nothing more): `groupConcurrency` caps the call at
 * gc minus the live leases of every partition of the group, `rateLimit` at max minus
 * the starts in the sliding window of cfg `rlog` (`<at>:<count>,...`, rewritten when
 * something was leased). Under key places (ordering 'key', or `kc`) the fresh events
 * of a partition are scanned from its cursor: one whose key has no free place in
 * `ko:<p>` (counting what this call takes) or has deliveries waiting in `kw:<p>` is
 * set waiting for its key (record W, a member of `kw:<p>`, the cursor moved past it;
 * it takes no place of the limit, at most KEY_SCAN in a call), the
 * others take a place (`ko:<p>` incremented) when claimed or parked. A redelivery
 * dead-lettered or voided here ends its delivery: its key's place goes to the key's
 * earliest waiting delivery (includes/key-places.ts), and the wake stream is bumped.
 *
 * KEYS[1]     meta    HASH    the stream's meta (hw:<p>, lw:<p>, dz:<p>)
 * KEYS[2]     cfg     HASH    the group's config (ord, pu), positions (f:, c:, rw:), rr (incremented)
 * KEYS[3]     dl      HASH    delivery records (written: a leased record per claim)
 * KEYS[4]     wake    STREAM  read: its last entry id is returned
 * KEYS[5+3j]  log     STREAM  the log of the partition in slot j
 * KEYS[6+3j]  leased  ZSET    its leased sequences by expiry (written)
 * KEYS[7+3j]  avail   ZSET    its sequences waiting for redelivery by due time (claimed ones removed, parked ones added)
 * KEYS[5+3n]  dead    HASH    dead letters by event id (n: how many partitions; written only when a claim dead-letters)
 * KEYS[6+3n]  deadz   ZSET    dead letters in (partition, sequence) order
 * KEYS[7+3n]  deadt   ZSET    dead letters by the time they were dead-lettered
 * KEYS[8+3n]  cx      HASH    the stream's cancelled delayed events, <p>:<seq> (cancelDelayed): read only
 *                             for a delayed entry met fresh, or offered again at attempt 0
 * Only for a group with flow limits (the backend passes them when its copy of the config has any;
 * a call without them for such a group answers 'flow' and writes nothing):
 * KEYS[9+3n+2j]  ko      HASH  open deliveries per key of the partition in slot j
 * KEYS[10+3n+2j] kw      ZSET  its deliveries waiting for their key
 * KEYS[9+5n+i]   leased  ZSET  only under groupConcurrency: the leased set of EVERY partition i of the
 *                              stream (live leases counted), in partition order
 *
 * ARGV[1]    now          ms, from the backend's clock
 * ARGV[2]    limit        at most this many claims (the backend sends at most 100)
 * ARGV[3]    leaseMs      lease duration
 * ARGV[4]    leaseIdBase  lease n of this call gets the id `<leaseIdBase>.<n>`
 * ARGV[5+j]  partition    the partition of slot j
 *
 * Returns { wakeId, 'paused' } when the group is paused, { wakeId, 'flow' } when flow keys are
 * missing, else { wakeId ('0-0' when none),
 * pending (1 when a frontier walk or a rewind is left unfinished: the backend runs tidy, then fetches again if nothing was claimed),
 * parked (delayed events parked, expired leases dead-lettered, events set waiting for their key: the backend
 * claims again for their places; when a flow limit held the call, the text
 * `<parked>:<limit>:<retryInMs>:<waitingForKey>`, limit 'group_concurrency', 'rate_limit' or ''),
 * then, only when something was leased or dead-lettered: strings, then one row per lease,
 * then, only when something was dead-lettered: dead }, JSON texts the backend parses
 * twice per call (fetchedLeases in ../codec.ts: the rows joined into one array), instead
 * of decoding RESP arrays and parsing metadata and payload per entry:
 *   strings  one cjson.encode for the call, 4 per lease: event id, key ('' = none),
 *            type ('' = none), lease id ('[]' when nothing was leased);
 *   dead     one cjson.encode, 5 strings per expired lease dead-lettered (fetchedDeadLetters):
 *            event id, partition, sequence, attempt, reason (the texts the dead letter stores);
 *   row      7 values of one lease, comma-separated without brackets: partition, sequence,
 *            attempt, timestamp (ms), metadata, payload, deliverAt (ms, null when none).
 *            metadata and payload are the stored JSON texts (entry fields m, d) as they are;
 *            sequence, timestamp and deliverAt the stored texts (entry id 0-<seq>, fields
 *            t, w), never Lua numbers printed. A row per reply element, not one
 *            table.concat of all: joining ~13 KB in Lua cost the server more than the
 *            extra bulk strings cost either side.
 * Errors:
 *   RHEO:stream_not_found            no meta hash -> RheoError stream_not_found (explained)
 *   RHEO:group_not_found             no config -> RheoError group_not_found (explained)
 *   RHEO:failed:log:<p>:<seq>        an entry below the high watermark is missing from the log
 *                                    -> RheoError failed naming the event (explained)
 */
import { script } from './includes';

export const FETCH = script(
  { uses: ['error', 'check-group', 'chunked', 'record', 'frontier', 'log-entry', 'dead-letter', 'key-places', 'flow', 'wake'] },
  `
-- A lease for the reply (see Returns): its strings (event id, key, type: '' when none, lease id)
-- go to strs, encoded by one cjson.encode for the call (one call for all: a call per string cost
-- more than the encoding); its other values, JSON texts already, make its row in rows: t and w are
-- integer texts the append wrote from valid Dates, m and d its JSON.stringify output; attempt is a
-- small integer, exact as Lua prints it.
local function leaseJson(strs, rows, p, entryId, lid, attempt, fields)
  local id, ts, key, typ, m, d, w = '', '0', '', '', '{}', 'null', 'null'
  local from = 1
  -- The append writes i, t, m, d first, then k, y, w when present: taken by place when so.
  if fields[1] == 'i' and fields[3] == 't' and fields[5] == 'm' and fields[7] == 'd' then
    id, ts, m, d, from = fields[2], fields[4], fields[6], fields[8], 9
  end
  for i = from, #fields, 2 do
    local f, v = fields[i], fields[i + 1]
    if f == 'i' then id = v
    elseif f == 't' then ts = v
    elseif f == 'm' then m = v
    elseif f == 'd' then d = v
    elseif f == 'k' then key = v
    elseif f == 'y' then typ = v
    elseif f == 'w' then w = v
    end
  end
  local n = #strs
  strs[n + 1] = id
  strs[n + 2] = key
  strs[n + 3] = typ
  strs[n + 4] = lid
  rows[#rows + 1] = p .. ',' .. string.sub(entryId, 3) .. ',' .. attempt .. ',' .. ts .. ',' .. m .. ',' .. d .. ',' .. w
end
local now = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local exp = now + tonumber(ARGV[3])
local np = #ARGV - 4
local gone = missing(KEYS[1])
if gone then return rheoError(gone) end
local cfgFields, hwFields = { 'ord' }, {}
for j = 0, np - 1 do
  local p = ARGV[5 + j]
  cfgFields[#cfgFields + 1] = 'f:' .. p
  cfgFields[#cfgFields + 1] = 'c:' .. p
  cfgFields[#cfgFields + 1] = 'rw:' .. p
  hwFields[#hwFields + 1] = 'hw:' .. p
  hwFields[#hwFields + 1] = 'lw:' .. p
  hwFields[#hwFields + 1] = 'dz:' .. p
end
-- The pause's gate last, so the positions keep their places.
cfgFields[#cfgFields + 1] = 'pu'
cfgFields[#cfgFields + 1] = 'kc'
cfgFields[#cfgFields + 1] = 'gc'
cfgFields[#cfgFields + 1] = 'rl'
local cfg = redis.call('HMGET', KEYS[2], unpack(cfgFields))
if not cfg[1] then return rheoError('group_not_found') end
local pu = cfg[2 + 3 * np]
if pu and (pu == '-' or tonumber(pu) > now) then
  local last = redis.call('XREVRANGE', KEYS[4], '+', '-', 'COUNT', 1)
  return { last[1] and last[1][1] or '0-0', 'paused' }
end
local kc, gcap, rl = cfg[3 + 3 * np], cfg[4 + 3 * np], cfg[5 + 3 * np]
local places = nil
if cfg[1] == 'key' then places = 1 elseif kc and kc ~= '' then places = tonumber(kc) end
if gcap == '' then gcap = nil end
if rl == '' then rl = nil end
-- A rate-limited claim is judged at, and stamps its leases with, no time before the log's newest start
-- (core/flow.ts rateNow): its now was read before its turn, and a claim before it may have read a later one.
local raised = false
if rl then
  local newest = tonumber(string.match(redis.call('HGET', KEYS[2], 'rlog') or '', '(%d+):%d+$') or '0')
  if newest > now then
    now, exp, raised = newest, newest + tonumber(ARGV[3]), true
  end
end
local fk = 8 + 3 * np
local function wakeId()
  local last = redis.call('XREVRANGE', KEYS[4], '+', '-', 'COUNT', 1)
  return last[1] and last[1][1] or '0-0'
end
if (places or gcap or rl) and (#KEYS < fk + 2 * np or (gcap and #KEYS == fk + 2 * np)) then return { wakeId(), 'flow' } end
-- The group-wide limits (core/flow.ts groupRoom): held names the one that took the call below limit.
local held, heldRetry, rateLog = nil, 0, nil
if gcap or rl then
  limit, held, heldRetry, rateLog = flowRoom(KEYS[2], now, limit, gcap, rl, fk + 2 * np + 1)
end
-- The reply's parked slot: a number, or a text when a flow limit held the call.
local function parkedSlot(parked, waited)
  if not held and waited == 0 and not raised then return parked end
  return parked .. ':' .. (held or '') .. ':' .. heldRetry .. ':' .. waited .. ':' .. (raised and now or 0)
end
if limit == 0 then return { wakeId(), 0, parkedSlot(0, 0) } end
local hws = redis.call('HMGET', KEYS[1], unpack(hwFields))
-- Frontier and cursor of each partition, never below its trim point.
local fs, cs, lws, dzs = {}, {}, {}, {}
for j = 0, np - 1 do
  lws[j] = tonumber(hws[2 + 3 * j] or '0')
  dzs[j] = tonumber(hws[3 + 3 * j] or '0')
  fs[j] = math.max(tonumber(cfg[2 + 3 * j]), lws[j])
  cs[j] = math.max(tonumber(cfg[3 + 3 * j]), lws[j] + 1)
end
-- The record at frontier + 1 of each partition tells whether a frontier walk was left unfinished.
local heads = {}
for j = 0, np - 1 do heads[j + 1] = ARGV[5 + j] .. ':' .. (fs[j] + 1) end
local headRecs = redis.call('HMGET', KEYS[3], unpack(heads))
local strict = cfg[1] == 'partition'
-- Fresh events this call may still set waiting for their key (KEY_SCAN for the whole call).
local waitBudget = KEY_SCAN
local pending = 0
local queues = {}
for j = 0, np - 1 do
  local p = ARGV[5 + j]
  local leased, avail = KEYS[6 + 3 * j], KEYS[7 + 3 * j]
  local hw = tonumber(hws[1 + 3 * j] or '0')
  local lw = lws[j]
  local f, c = fs[j], cs[j]
  if walkLeft(f, c, headRecs[j + 1]) then pending = 1 end
  local seqs = {}
  local scan = nil
  if cfg[4 + 3 * j] then
    -- Mid-rewind: claiming here would move the cursor the rewind is bringing down.
    pending = 1
  elseif strict then
    local nxt = f + 1
    if nxt <= hw and #redis.call('ZRANGEBYSCORE', leased, '(' .. now, '+inf', 'LIMIT', 0, 1) == 0 then
      if nxt >= c then
        seqs[1] = nxt
      else
        local sa = redis.call('ZSCORE', avail, nxt)
        local sl = redis.call('ZSCORE', leased, nxt)
        if (sa and tonumber(sa) <= now) or (sl and tonumber(sl) <= now) then seqs[1] = nxt end
      end
    end
  else
    local open = {}
    for _, set in ipairs({ avail, leased }) do
      local trimmed = {}
      for _, s in ipairs(redis.call('ZRANGEBYSCORE', set, '-inf', now, 'LIMIT', 0, limit)) do
        if tonumber(s) > lw then open[#open + 1] = tonumber(s) else trimmed[#trimmed + 1] = s end
      end
      -- A delivery of a trimmed event is never claimable: dropped, so it cannot crowd the due ones out.
      if #trimmed > 0 then redis.call('ZREM', set, unpack(trimmed)) end
    end
    table.sort(open)
    for i = 1, math.min(#open, limit) do seqs[#seqs + 1] = open[i] end
    if places then
      local err
      scan, err = scanFresh(KEYS[5 + 3 * j], KEYS[fk + 1 + 2 * j], KEYS[fk + 2 + 2 * j], KEYS[8 + 3 * np], p, c, hw, dzs[j], limit - #seqs, places, seqs, waitBudget)
      if err then return rheoError(err) end
      waitBudget = waitBudget - scan.waits
    else
      local s = c
      while s <= hw and #seqs < limit do
        seqs[#seqs + 1] = s
        s = s + 1
      end
    end
  end
  if #seqs > 0 or (scan and #scan.list > 0) then
    queues[#queues + 1] = { j = j, p = p, seqs = seqs, c0 = c, c = c, picks = {}, scan = scan }
  end
end
local out = { wakeId(), pending, parkedSlot(0, 0) }
if #queues == 0 then return out end
-- 1. Choose: round-robin over partitions from a rotating start.
local picks = {}
local start = 0
if #queues > 1 then start = (redis.call('HINCRBY', KEYS[2], 'rr', 1) - 1) % #queues end
local round = 1
while #picks < limit do
  local took = false
  for i = 0, #queues - 1 do
    if #picks >= limit then break end
    local q = queues[((start + i) % #queues) + 1]
    local seq = q.seqs[round]
    if seq then
      picks[#picks + 1] = { q = q, seq = seq }
      q.picks[#q.picks + 1] = seq
      took = true
    end
  end
  if not took then break end
  round = round + 1
end
-- 2. Read the entries: one XRANGE per partition for its never-delivered run, one per redelivery.
local entries = {}
for _, q in ipairs(queues) do
  local lo, hi = nil, nil
  for _, seq in ipairs(q.picks) do
    if seq >= q.c0 then
      if not lo or seq < lo then lo = seq end
      if not hi or seq > hi then hi = seq end
    end
  end
  q.entries = {}
  if q.scan then
    -- Read by the scan. The events it set waiting go up to the last fresh one taken, or all when every
    -- candidate of the partition was taken (the rest of a run is passed on to the next call otherwise).
    q.entries = q.scan.entries
    local upto = math.huge
    if #q.picks < #q.seqs then upto = hi or -1 end
    local top = hi or (q.c0 - 1)
    q.waits = {}
    for _, it in ipairs(q.scan.list) do
      if it[2] and it[1] < upto then
        q.waits[#q.waits + 1] = it[1]
        if it[1] > top then top = it[1] end
      end
    end
    q.c = top + 1
  elseif lo then
    for _, e in ipairs(redis.call('XRANGE', KEYS[5 + 3 * q.j], '0-' .. lo, '0-' .. hi)) do
      q.entries[tonumber(string.sub(e[1], 3))] = e
    end
    q.c = hi + 1
  end
end
-- 3. Grant: one HSET for every delivery record, one ZADD (and ZREM) per partition. Nothing is
-- written before every entry was found: an entry missing below the high watermark means the log
-- lost keys (eviction, a manual DEL), which is reported instead of delivered as an empty event.
local records, cursors = {}, {}
local parked = 0
-- Expired on the last attempt: { p, seq, attempt, event id, sequence text } each, written after every entry was read.
local buried = {}
local maxAttempts = nil
local strs, rows = {}, {}
for n, pick in ipairs(picks) do
  local q, seq = pick.q, pick.seq
  local k = q.p .. ':' .. seq
  local attempt = 1
  local e = q.entries[seq]
  local fields = e and e[2]
  local parkAt = nil
  local void = false
  if seq >= q.c0 and seq <= dzs[q.j] and fields then
    -- A delayed event (entry field w) not due yet is parked, not leased; one cancelled in every group is passed.
    for i = 1, #fields, 2 do
      if fields[i] == 'w' then
        if redis.call('HEXISTS', KEYS[8 + 3 * np], k) == 1 then void = true
        elseif tonumber(fields[i + 1]) > now then parkAt = fields[i + 1] end
      end
    end
  end
  local expiredOn = nil
  if seq < q.c0 then
    local rec = redis.call('HGET', KEYS[3], k)
    if rec then
      local st, att = parseRecord(rec)
      attempt = att + 1
      if st == 'A' and att == 0 and seq <= dzs[q.j] and redis.call('HEXISTS', KEYS[8 + 3 * np], k) == 1 then
        void = true
      elseif st == 'L' then
        -- Read only for an expired lease: a claim of fresh events and retries never needs it.
        maxAttempts = maxAttempts or tonumber(redis.call('HGET', KEYS[2], 'maxAttempts') or '0')
        if maxAttempts > 0 and att >= maxAttempts then expiredOn = att end
      end
    end
    e = logEntry(KEYS[5 + 3 * q.j], seq)
    fields = e and e[2]
    if expiredOn then
      q.unleased = q.unleased or {}
      q.unleased[#q.unleased + 1] = seq
    else
      q.redelivered = q.redelivered or {}
      q.redelivered[#q.redelivered + 1] = seq
    end
  end
  if not fields then return rheoError('failed:log:' .. q.p .. ':' .. seq) end
  records[#records + 1] = k
  if places and (void or expiredOn) and seq < q.c0 then
    -- A redelivery ended here: its key's place goes on (written after the records).
    local key = entryField(e, 'k')
    if key then
      q.ended = q.ended or {}
      q.ended[#q.ended + 1] = key
    end
  elseif q.scan and not void and seq >= q.c0 and q.scan.keys[seq] then
    q.taken = q.taken or {}
    local key = q.scan.keys[seq]
    q.taken[key] = (q.taken[key] or 0) + 1
  end
  if void then
    records[#records + 1] = terminalRecord(0)
    if seq == fs[q.j] + 1 then pending = 1 end
    parked = parked + 1
  elseif expiredOn then
    records[#records + 1] = terminalRecord(expiredOn)
    buried[#buried + 1] = { q.p, seq, expiredOn, entryField(e, 'i') or '', string.sub(e[1], 3) }
    if seq == fs[q.j] + 1 then pending = 1 end
    parked = parked + 1
  elseif parkAt then
    records[#records + 1] = availableRecord(0)
    q.parked = q.parked or {}
    q.parked[#q.parked + 1] = parkAt
    q.parked[#q.parked + 1] = seq
    parked = parked + 1
  else
    local lid = ARGV[4] .. '.' .. n
    records[#records + 1] = leasedRecord(attempt, lid, exp)
    q.leased = q.leased or {}
    q.leased[#q.leased + 1] = exp
    q.leased[#q.leased + 1] = seq
    leaseJson(strs, rows, q.p, e[1], lid, attempt, fields)
  end
end
-- Events set waiting for their key: a W record each, a member of the partition's kw.
local waited = 0
for _, q in ipairs(queues) do
  if q.waits and #q.waits > 0 then
    local members = {}
    for _, seq in ipairs(q.waits) do
      records[#records + 1] = q.p .. ':' .. seq
      records[#records + 1] = waitingRecord()
      members[#members + 1] = 0
      members[#members + 1] = keyWaitMember(q.scan.keys[seq], seq)
    end
    chunked('ZADD', KEYS[fk + 2 + 2 * q.j], members, 1000)
    waited = waited + #q.waits
  end
end
out[3] = parkedSlot(parked + waited, waited)
out[2] = pending
if #rows > 0 or #buried > 0 then
  out[4] = #rows > 0 and cjson.encode(strs) or '[]'
  for i = 1, #rows do out[4 + i] = rows[i] end
end
chunked('HSET', KEYS[3], records, 1000)
-- Dead letters as settle files them: a trimmed event's dead letter under the same id is replaced.
local dk = 5 + 3 * np
-- What the reply tells of them (see Returns): made only when a lease expired on its last attempt.
local dead = #buried > 0 and {} or nil
for _, b in ipairs(buried) do
  local p, seq, att, id = b[1], b[2], b[3], b[4]
  local old = redis.call('HGET', KEYS[dk], id)
  if old then
    local oldP, oldSeq = deadRecordPosition(old)
    if tonumber(oldP) ~= tonumber(p) or tonumber(oldSeq) ~= tonumber(seq) then redis.call('ZREM', KEYS[dk + 1], deadMember(oldP, oldSeq, id)) end
  end
  local reason = 'lease expired on attempt ' .. att .. ' of ' .. maxAttempts
  redis.call('HSET', KEYS[dk], id, deadRecord(p, seq, att, now, reason))
  redis.call('ZADD', KEYS[dk + 1], 0, deadMember(p, seq, id))
  redis.call('ZADD', KEYS[dk + 2], now, id)
  -- Reported as texts: the sequence as the entry id spells it, never a Lua number printed.
  local n = #dead
  dead[n + 1] = id
  dead[n + 2] = p
  dead[n + 3] = b[5]
  dead[n + 4] = tostring(att)
  dead[n + 5] = reason
end
if dead then out[5 + #rows] = cjson.encode(dead) end
for _, q in ipairs(queues) do
  if q.unleased then chunked('ZREM', KEYS[6 + 3 * q.j], q.unleased, 1000) end
  if #q.picks > 0 or (q.waits and #q.waits > 0) then
    if q.leased then chunked('ZADD', KEYS[6 + 3 * q.j], q.leased, 1000) end
    if q.parked then chunked('ZADD', KEYS[7 + 3 * q.j], q.parked, 1000) end
    if q.redelivered then chunked('ZREM', KEYS[7 + 3 * q.j], q.redelivered, 1000) end
    if q.c ~= q.c0 then
      cursors[#cursors + 1] = 'c:' .. q.p
      cursors[#cursors + 1] = q.c
    end
  end
end
if #cursors > 0 then chunked('HSET', KEYS[2], cursors, 1000) end
local promoted = 0
for _, q in ipairs(queues) do
  local ko = KEYS[fk + 1 + 2 * q.j]
  if q.taken then
    for key, n in pairs(q.taken) do redis.call('HINCRBY', ko, key, n) end
  end
  if q.ended then
    local book = keyBook(ko, KEYS[fk + 2 + 2 * q.j], KEYS[3], KEYS[7 + 3 * q.j], KEYS[5 + 3 * q.j], q.p, places)
    for _, key in ipairs(q.ended) do promoted = promoted + keyEnded(book, key, now) end
  end
end
if promoted > 0 then wake(KEYS[4]) end
if rateLog and #rows > 0 then saveRateLog(KEYS[2], rateLog, now, #rows) end
return out
`,
);
