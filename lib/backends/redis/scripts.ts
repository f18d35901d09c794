/**
 * Every Lua script of the Redis backend, in one place (as pg-boss keeps its SQL).
 * Each script is atomic: the fence check and the write it guards run in one step,
 * which closes the race Rheo's Elixir adapter has between its fence read and XACK.
 *
 * Conventions:
 * - every key a script touches arrives in KEYS (cluster-safe; all share the stream's hash tag);
 * - the caller passes `now` from the backend's clock (never Redis TIME), so a ManualClock can expire leases;
 * - an error the caller should see as a RheoError is raised as `RHEO:<code>[:<detail>]`;
 * - delivery record (HASH dl, field `<p>:<seq>`): `state|attempt|leaseId|expiresAt`,
 *   state L = leased, A = available (waiting in avail:<p>), T = terminal above the frontier;
 *   a sequence below the cursor with no record is terminal and already passed by the frontier;
 * - the log entry id of sequence s is `0-<s>`, and it is the lease's receipt.
 * Numbers are concatenated into strings only when below 10^14 (Lua 5.1 prints 14 digits).
 *
 * Bounded work. A script blocks the whole server while it runs, so no script may
 * do work that grows with the backlog. Work that can (walking the frontier over
 * acked records, rewinding a replayed partition, redriving every dead letter) is
 * done in slices of at most `budget` records per call; the caller passes the
 * budget and calls again (TIDY) until nothing is left. The state after every
 * slice is a consistent state of its own, so a process dying between slices
 * loses nothing: what is left is visible in the keys (a terminal record at
 * frontier + 1, a `rw:<p>` rewind target) and FETCH and INSPECT report it, so
 * the next fetch or lag of any process finishes it. Bulk calls are cut into
 * calls of a bounded number of ops by the caller. See docs/adr/014-redis-bounded-scripts.md.
 */

const COMMON = `
local function parse(rec)
  local st, att, lid, ex = string.match(rec, '^(%a)|(%d+)|([^|]*)|(%d+)$')
  return st, tonumber(att), lid, tonumber(ex)
end
-- Dead letters are ordered by this member of deadz: 5-digit partition, 16-digit sequence, event id.
local function deadmember(p, seq, id)
  return string.format('%05d:%016d:', tonumber(p), tonumber(seq)) .. id
end
local function deadpos(p, seq)
  return string.format('%05d:%016d:', tonumber(p), tonumber(seq))
end
local function deadseq(m) return tonumber(string.sub(m, 7, 22)) end
-- redis.call(cmd, key, ...list) in chunks: Lua cannot unpack more than a few thousand values at once.
-- step must be even so that pairs (field value, score member) stay together.
local function chunked(cmd, key, list, step)
  for i = 1, #list, step do
    redis.call(cmd, key, unpack(list, i, math.min(i + step - 1, #list)))
  end
end
local function wake(key)
  redis.call('XADD', key, 'MAXLEN', '1', '*', 'w', '1')
end
-- The stream's meta hash is the authority for its existence, the group's cfg hash for the group's.
-- Both are checked by every group script, so keys that vanished (FLUSHDB, eviction) are reported
-- as such instead of being half-recreated by the writes that follow.
local function absent(meta, cfg)
  if redis.call('EXISTS', meta) == 0 then return 'stream_not_found' end
  if redis.call('EXISTS', cfg) == 0 then return 'group_not_found' end
  return nil
end
-- Walk frontier f of partition p forward over terminal sequences (a T record, or no record at all)
-- below cursor c, dropping the records passed. Looks at no more than budget records: the records
-- are read in windows that start small (the usual case is an ack at frontier + 1 with a live lease
-- right behind it) and double while the run of terminal records goes on.
-- Returns the new frontier, the budget left, and whether the walk was cut short by the budget.
local function walk(dl, p, f, c, budget)
  local w = 4
  while f + 1 < c do
    if budget <= 0 then return f, 0, true end
    w = math.min(w, budget, c - 1 - f)
    local fields = {}
    for i = 1, w do fields[i] = p .. ':' .. (f + i) end
    local recs = redis.call('HMGET', dl, unpack(fields))
    budget = budget - w
    local drop = {}
    local stop = 0
    for i = 1, w do
      local rec = recs[i]
      if rec and string.sub(rec, 1, 1) ~= 'T' then
        stop = i
        break
      end
      if rec then drop[#drop + 1] = fields[i] end
    end
    if #drop > 0 then chunked('HDEL', dl, drop, 500) end
    if stop > 0 then return f + stop - 1, budget, false end
    f = f + w
    w = math.min(w * 2, 512)
  end
  return f, budget, false
end
`;

/** KEYS: meta. ARGV: partitions, createdAt. */
export const CREATE_STREAM = `
if redis.call('EXISTS', KEYS[1]) == 1 then return redis.error_reply('RHEO:already_exists') end
redis.call('HSET', KEYS[1], 'partitions', ARGV[1], 'createdAt', ARGV[2])
return 1
`;

/**
 * KEYS: meta, cfg, groups. ARGV: group, maxAttempts, retry.initialMs, retry.factor,
 * retry.maxMs, ordering, createdAt, mode ('end' | 'after'), then per partition the last
 * sequence to skip (mode 'after').
 */
export const CREATE_GROUP = `
local P = tonumber(redis.call('HGET', KEYS[1], 'partitions'))
if not P then return redis.error_reply('RHEO:stream_not_found') end
if redis.call('EXISTS', KEYS[2]) == 1 then return redis.error_reply('RHEO:already_exists') end
redis.call('HSET', KEYS[2], 'maxAttempts', ARGV[2], 'ri', ARGV[3], 'rf', ARGV[4], 'rm', ARGV[5], 'ord', ARGV[6], 'createdAt', ARGV[7], 'rr', 0)
for p = 0, P - 1 do
  local after
  if ARGV[8] == 'end' then after = redis.call('HGET', KEYS[1], 'hw:' .. p) or '0' else after = ARGV[9 + p] or '0' end
  redis.call('HSET', KEYS[2], 'f:' .. p, after, 'c:' .. p, tonumber(after) + 1)
end
redis.call('SADD', KEYS[3], ARGV[1])
return 1
`;

/**
 * KEYS: meta, ids, wake, then the log of each partition slot j at 4 + j.
 * ARGV: n, then per event: id, slot, partition, timestamp, key ('' = none), type ('' = none), metadata JSON, payload JSON.
 * Returns per event the new sequence (integer), or `<p>:<seq>` (string) when the id was already stored.
 * Sequence allocation and XADD happen in the same step, so log order = sequence order.
 * Not sliced: a batch is atomic by contract, and the facade caps it at 10,000 events.
 */
export const APPEND = `
if redis.call('EXISTS', KEYS[1]) == 0 then return redis.error_reply('RHEO:stream_not_found') end
local out = {}
local wrote = false
for i = 0, tonumber(ARGV[1]) - 1 do
  local b = 2 + 8 * i
  local id = ARGV[b]
  local known = redis.call('HGET', KEYS[2], id)
  if known then
    out[#out + 1] = known
  else
    local p = ARGV[b + 2]
    local seq = redis.call('HINCRBY', KEYS[1], 'hw:' .. p, 1)
    local f = { 'i', id, 't', ARGV[b + 3], 'm', ARGV[b + 6], 'd', ARGV[b + 7] }
    if ARGV[b + 4] ~= '' then f[#f + 1] = 'k'; f[#f + 1] = ARGV[b + 4] end
    if ARGV[b + 5] ~= '' then f[#f + 1] = 'y'; f[#f + 1] = ARGV[b + 5] end
    redis.call('XADD', KEYS[4 + tonumber(ARGV[b + 1])], '0-' .. seq, unpack(f))
    redis.call('HSET', KEYS[2], id, p .. ':' .. seq)
    out[#out + 1] = seq
    wrote = true
  end
end
if wrote then redis.call('XADD', KEYS[3], 'MAXLEN', '1', '*', 'w', '1') end
return out
`;

/**
 * Claim up to `limit` events: due redeliveries and expired leases first (by
 * sequence), then never-delivered events from the cursor; partitions interleaved
 * round-robin from a rotating start. With ordering 'partition' only frontier + 1
 * of a partition with no live lease is claimable. A partition under a rewind
 * (`rw:<p>`, see REPLAY) is left alone until the rewind is done.
 * KEYS: meta, cfg, dl, wake, then per partition slot j: log (5+3j), leased (6+3j), avail (7+3j).
 * ARGV: now, limit, leaseMs, leaseIdBase, then the partition of each slot.
 * Returns { wakeId, pending (1 when a frontier walk or a rewind is left unfinished: the
 * caller runs TIDY), then per lease: partition, sequence, leaseId, attempt, entry fields }.
 */
export const FETCH =
  COMMON +
  `
local now = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local exp = now + tonumber(ARGV[3])
local np = #ARGV - 4
if redis.call('EXISTS', KEYS[1]) == 0 then return redis.error_reply('RHEO:stream_not_found') end
local cfgFields, hwFields = { 'ord' }, {}
for j = 0, np - 1 do
  local p = ARGV[5 + j]
  cfgFields[#cfgFields + 1] = 'f:' .. p
  cfgFields[#cfgFields + 1] = 'c:' .. p
  cfgFields[#cfgFields + 1] = 'rw:' .. p
  hwFields[#hwFields + 1] = 'hw:' .. p
end
local cfg = redis.call('HMGET', KEYS[2], unpack(cfgFields))
if not cfg[1] then return redis.error_reply('RHEO:group_not_found') end
local hws = redis.call('HMGET', KEYS[1], unpack(hwFields))
-- The record at frontier + 1 of each partition: none, or a terminal one, below the cursor means a
-- frontier walk was cut short (by a budget, or by a process that died between slices).
local heads = {}
for j = 0, np - 1 do heads[j + 1] = ARGV[5 + j] .. ':' .. (tonumber(cfg[2 + 3 * j]) + 1) end
local headRecs = redis.call('HMGET', KEYS[3], unpack(heads))
local strict = cfg[1] == 'partition'
local pending = 0
local queues = {}
for j = 0, np - 1 do
  local p = ARGV[5 + j]
  local leased, avail = KEYS[6 + 3 * j], KEYS[7 + 3 * j]
  local hw = tonumber(hws[j + 1] or '0')
  local f = tonumber(cfg[2 + 3 * j])
  local c = tonumber(cfg[3 + 3 * j])
  local head = headRecs[j + 1]
  if f + 1 < c and (not head or string.sub(head, 1, 1) == 'T') then pending = 1 end
  local seqs = {}
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
    for _, s in ipairs(redis.call('ZRANGEBYSCORE', avail, '-inf', now, 'LIMIT', 0, limit)) do open[#open + 1] = tonumber(s) end
    for _, s in ipairs(redis.call('ZRANGEBYSCORE', leased, '-inf', now, 'LIMIT', 0, limit)) do open[#open + 1] = tonumber(s) end
    table.sort(open)
    for i = 1, math.min(#open, limit) do seqs[#seqs + 1] = open[i] end
    local s = c
    while s <= hw and #seqs < limit do
      seqs[#seqs + 1] = s
      s = s + 1
    end
  end
  if #seqs > 0 then queues[#queues + 1] = { j = j, p = p, seqs = seqs, c0 = c, c = c, picks = {} } end
end
local last = redis.call('XREVRANGE', KEYS[4], '+', '-', 'COUNT', 1)
local out = { last[1] and last[1][1] or '0-0', pending }
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
  if lo then
    for _, e in ipairs(redis.call('XRANGE', KEYS[5 + 3 * q.j], '0-' .. lo, '0-' .. hi)) do
      q.entries[tonumber(string.sub(e[1], 3))] = e[2]
    end
    q.c = hi + 1
  end
end
-- 3. Grant: one HSET for every delivery record, one ZADD (and ZREM) per partition. Nothing is
-- written before every entry was found: an entry missing below the high watermark means the log
-- lost keys (eviction, a manual DEL), which is reported instead of delivered as an empty event.
local records, cursors = {}, {}
for n, pick in ipairs(picks) do
  local q, seq = pick.q, pick.seq
  local k = q.p .. ':' .. seq
  local attempt = 1
  local fields = q.entries[seq]
  if seq < q.c0 then
    local rec = redis.call('HGET', KEYS[3], k)
    if rec then
      local _, att = parse(rec)
      attempt = att + 1
    end
    local e = redis.call('XRANGE', KEYS[5 + 3 * q.j], '0-' .. seq, '0-' .. seq)[1]
    fields = e and e[2]
    q.redelivered = q.redelivered or {}
    q.redelivered[#q.redelivered + 1] = seq
  end
  if not fields then return redis.error_reply('RHEO:failed:log:' .. q.p .. ':' .. seq) end
  local lid = ARGV[4] .. '.' .. n
  records[#records + 1] = k
  records[#records + 1] = 'L|' .. attempt .. '|' .. lid .. '|' .. exp
  out[#out + 1] = q.p
  out[#out + 1] = seq
  out[#out + 1] = lid
  out[#out + 1] = attempt
  out[#out + 1] = fields
end
chunked('HSET', KEYS[3], records, 1000)
for _, q in ipairs(queues) do
  if #q.picks > 0 then
    local z = {}
    for _, seq in ipairs(q.picks) do
      z[#z + 1] = exp
      z[#z + 1] = seq
    end
    chunked('ZADD', KEYS[6 + 3 * q.j], z, 1000)
    if q.redelivered then chunked('ZREM', KEYS[7 + 3 * q.j], q.redelivered, 1000) end
    if q.c ~= q.c0 then
      cursors[#cursors + 1] = 'c:' .. q.p
      cursors[#cursors + 1] = q.c
    end
  end
end
if #cursors > 0 then chunked('HSET', KEYS[2], cursors, 1000) end
return out
`;

/** Fence check shared by renew and settle: the attempt of the live lease, or the portable reason it is not live. */
const FENCE = `
local function fence(dl, now, p, seq, lid, receipt)
  local rec = redis.call('HGET', dl, p .. ':' .. seq)
  if not rec then return nil, 'stale_lease' end
  local st, att, l, ex = parse(rec)
  if st ~= 'L' or l ~= lid or ex <= now then return nil, 'stale_lease' end
  if receipt ~= '0-' .. seq then return nil, 'receipt_mismatch' end
  return att
end
`;

/**
 * KEYS: meta, cfg, dl, then the leased set of each partition slot j at 4 + j.
 * ARGV: now, leaseMs, then per lease: slot, partition, sequence, leaseId, receipt.
 * Returns per lease 'ok' or an error code.
 */
export const RENEW =
  COMMON +
  FENCE +
  `
local now = tonumber(ARGV[1])
local exp = now + tonumber(ARGV[2])
local out = {}
local gone = absent(KEYS[1], KEYS[2])
for b = 3, #ARGV, 5 do
  if gone then
    out[#out + 1] = gone
  else
    local p, seq, lid = ARGV[b + 1], ARGV[b + 2], ARGV[b + 3]
    local att, why = fence(KEYS[3], now, p, seq, lid, ARGV[b + 4])
    if att then
      redis.call('HSET', KEYS[3], p .. ':' .. seq, 'L|' .. att .. '|' .. lid .. '|' .. exp)
      redis.call('ZADD', KEYS[4 + tonumber(ARGV[b])], exp, seq)
      out[#out + 1] = 'ok'
    else
      out[#out + 1] = why
    end
  end
end
return out
`;

/**
 * Bulk settle for one group: each op is fenced and applied in the same step.
 * Dead-lettering and the retry delay follow the STORED attempt, and a dead letter
 * is filed under the STORED event id: the lease object's copies are not trusted.
 * The frontier walk an ack at frontier + 1 starts is bounded by `budget` records
 * for the whole call; a walk cut short is finished by TIDY.
 * KEYS: meta, cfg, dl, dead, deadz, wake, then per partition slot j: leased (7+3j), avail (8+3j), log (9+3j).
 * ARGV: now, budget, n, then the group's backoff delay after attempts 1..n (from core's backoffDelay),
 * then per op: kind (a|n|r), slot, partition, sequence, leaseId, receipt, reason, delayMs ('' = backoff).
 * Returns per op 'ok' or an error code, then one more element: 1 when a walk was cut short, else 0.
 */
export const SETTLE =
  COMMON +
  FENCE +
  `
local now = tonumber(ARGV[1])
local budget = tonumber(ARGV[2])
local nd = tonumber(ARGV[3])
local out = {}
local gone = absent(KEYS[1], KEYS[2])
local maxAttempts = tonumber(redis.call('HGET', KEYS[2], 'maxAttempts') or '-1')
local woke = false
local cut = false
-- Frontier and cursor per partition, read once, written once at the end.
local fc = {}
local function part(p)
  local s = fc[p]
  if not s then
    local v = redis.call('HMGET', KEYS[2], 'f:' .. p, 'c:' .. p)
    s = { f = tonumber(v[1]), c = tonumber(v[2]) }
    s.f0 = s.f
    fc[p] = s
  end
  return s
end
-- Make sequence seq of p terminal and walk the frontier over terminal sequences.
local function terminal(p, seq, k, att)
  local s = part(p)
  if tonumber(seq) ~= s.f + 1 then
    redis.call('HSET', KEYS[3], k, 'T|' .. att .. '||0')
    return
  end
  redis.call('HDEL', KEYS[3], k)
  local more
  s.f, budget, more = walk(KEYS[3], p, s.f + 1, s.c, budget)
  if more then cut = true end
end
local unleased = {}
for b = 4 + nd, #ARGV, 8 do
  if gone then
    out[#out + 1] = gone
  else
    local kind, j, p, seq, lid = ARGV[b], tonumber(ARGV[b + 1]), ARGV[b + 2], ARGV[b + 3], ARGV[b + 4]
    local att, why = fence(KEYS[3], now, p, seq, lid, ARGV[b + 5])
    if not att then
      out[#out + 1] = why
    else
      local k = p .. ':' .. seq
      unleased[j] = unleased[j] or {}
      unleased[j][#unleased[j] + 1] = seq
      if kind == 'a' then
        terminal(p, seq, k, att)
      elseif kind == 'r' or att >= maxAttempts then
        local id = ''
        local e = redis.call('XRANGE', KEYS[9 + 3 * j], '0-' .. seq, '0-' .. seq)[1]
        if e then
          for i = 1, #e[2], 2 do if e[2][i] == 'i' then id = e[2][i + 1] end end
        end
        redis.call('HSET', KEYS[4], id, p .. '|' .. seq .. '|' .. att .. '|' .. now .. '|' .. ARGV[b + 6])
        redis.call('ZADD', KEYS[5], 0, deadmember(p, seq, id))
        terminal(p, seq, k, att)
      else
        local delay = ARGV[b + 7]
        if delay == '' then delay = ARGV[3 + math.min(att, nd)] or '0' end
        redis.call('HSET', KEYS[3], k, 'A|' .. att .. '||0')
        redis.call('ZADD', KEYS[8 + 3 * j], now + tonumber(delay), seq)
        woke = true
      end
      out[#out + 1] = 'ok'
    end
  end
end
for j, seqs in pairs(unleased) do chunked('ZREM', KEYS[7 + 3 * j], seqs, 1000) end
local frontiers = {}
for p, s in pairs(fc) do
  if s.f ~= s.f0 then
    frontiers[#frontiers + 1] = 'f:' .. p
    frontiers[#frontiers + 1] = s.f
  end
end
if #frontiers > 0 then chunked('HSET', KEYS[2], frontiers, 1000) end
if woke then wake(KEYS[6]) end
out[#out + 1] = cut and 1 or 0
return out
`;

/**
 * Give leases back unhandled: each event is available now, and the attempt its fetch
 * counted is taken back. Fenced by lease id alone, not by expiry: an expired lease that
 * nobody claimed since still holds the record (a claim rewrites it with a new lease id).
 * KEYS: meta, cfg, dl, wake, then per partition slot j: leased (5+2j), avail (6+2j).
 * ARGV: now, then per lease: slot, partition, sequence, leaseId, receipt.
 * Returns per lease 'ok' or an error code.
 */
export const RELEASE =
  COMMON +
  `
local now = ARGV[1]
local out = {}
local gone = absent(KEYS[1], KEYS[2])
local unleased, due = {}, {}
for b = 2, #ARGV, 5 do
  if gone then
    out[#out + 1] = gone
  else
    local j, p, seq, lid = tonumber(ARGV[b]), ARGV[b + 1], ARGV[b + 2], ARGV[b + 3]
    local k = p .. ':' .. seq
    local rec = redis.call('HGET', KEYS[3], k)
    local st, att, l
    if rec then st, att, l = parse(rec) end
    if not rec or st ~= 'L' or l ~= lid then
      out[#out + 1] = 'stale_lease'
    elseif ARGV[b + 4] ~= '0-' .. seq then
      out[#out + 1] = 'receipt_mismatch'
    else
      redis.call('HSET', KEYS[3], k, 'A|' .. math.max(0, att - 1) .. '||0')
      unleased[j] = unleased[j] or {}
      unleased[j][#unleased[j] + 1] = seq
      due[j] = due[j] or {}
      due[j][#due[j] + 1] = now
      due[j][#due[j] + 1] = seq
      out[#out + 1] = 'ok'
    end
  end
end
local woke = false
for j, seqs in pairs(unleased) do
  chunked('ZREM', KEYS[5 + 2 * j], seqs, 1000)
  chunked('ZADD', KEYS[6 + 2 * j], due[j], 1000)
  woke = true
end
-- Waiting consumers are woken as by a nack with no delay: the events are claimable now.
if woke then wake(KEYS[4]) end
return out
`;

/**
 * Start a rewind: per partition, every delivery above `after` is to be forgotten
 * (fresh again), the cursor moved to after + 1 and the frontier back to at most
 * `after`. When nothing was delivered above `after` that happens here; otherwise
 * the target is recorded as `rw:<p>` and TIDY brings the cursor down in slices,
 * from the top. A target already recorded by an unfinished rewind is merged by
 * keeping the lower one (both rewinds' events are re-opened).
 * KEYS: meta, cfg, wake.
 * ARGV: mode ('sequence': value is afterSequence, capped at the high watermark | 'after': value is used as is),
 * then per partition: partition, value.
 * Returns { how many events were rewound over, then each partition left to TIDY }.
 */
export const REPLAY =
  COMMON +
  `
local gone = absent(KEYS[1], KEYS[2])
if gone then return redis.error_reply('RHEO:' .. gone) end
local out = { 0 }
local total = 0
for b = 2, #ARGV, 2 do
  local p = ARGV[b]
  local hw = tonumber(redis.call('HGET', KEYS[1], 'hw:' .. p) or '0')
  local after = tonumber(ARGV[b + 1])
  if ARGV[1] == 'sequence' and after > hw then after = hw end
  total = total + math.max(0, hw - after)
  local v = redis.call('HMGET', KEYS[2], 'f:' .. p, 'c:' .. p, 'rw:' .. p)
  local f, c = tonumber(v[1]), tonumber(v[2])
  local t = after
  if v[3] then t = math.min(t, tonumber(v[3])) end
  if c - 1 <= t then
    redis.call('HSET', KEYS[2], 'c:' .. p, t + 1, 'f:' .. p, math.min(f, t))
    redis.call('HDEL', KEYS[2], 'rw:' .. p)
  else
    redis.call('HSET', KEYS[2], 'rw:' .. p, t)
    out[#out + 1] = tonumber(p)
  end
end
out[1] = total
wake(KEYS[3])
return out
`;

/**
 * Finish, in one bounded slice, the work other calls left: per given partition, a
 * rewind (`rw:<p>`, from REPLAY), then the frontier walk.
 *
 * A rewind slice lowers the cursor from the top: it forgets the deliveries and dead
 * letters of the highest sequences (at most `budget` of each), then sets the cursor
 * to the lowest sequence it cleared and the frontier to at most one below it.
 * Everything from the cursor up is then fresh and everything below is as it was,
 * which is exactly the state a replay to (cursor - 1) would leave: a consistent
 * state after every slice, and any lease on a cleared sequence is stale at once.
 * KEYS: meta, cfg, dl, dead, deadz, wake, then per partition slot j: leased (7+2j), avail (8+2j).
 * ARGV: budget, then the partition of each slot.
 * Returns the partitions (of those given) with work left.
 */
export const TIDY =
  COMMON +
  `
local gone = absent(KEYS[1], KEYS[2])
if gone then return redis.error_reply('RHEO:' .. gone) end
local budget = tonumber(ARGV[1])
local function rewind(p, f, c, t, leased, avail)
  local lo = t + 1
  local top = c - 1
  local newc = lo
  if top - math.max(f + 1, lo) + 1 > budget then newc = top - budget + 1 end
  local dead = {}
  if top >= newc then
    dead = redis.call('ZREVRANGEBYLEX', KEYS[5], '(' .. deadpos(p, top + 1), '[' .. deadpos(p, newc), 'LIMIT', 0, budget)
    -- As many dead letters as the budget: there may be more below, so stop at the lowest one taken.
    if #dead >= budget then newc = math.max(newc, deadseq(dead[#dead])) end
  end
  local fields, seqs = {}, {}
  for s = math.max(newc, f + 1), top do
    fields[#fields + 1] = p .. ':' .. s
    seqs[#seqs + 1] = s
  end
  if #fields > 0 then
    chunked('HDEL', KEYS[3], fields, 500)
    chunked('ZREM', leased, seqs, 500)
    chunked('ZREM', avail, seqs, 500)
  end
  local ids, members = {}, {}
  for _, m in ipairs(dead) do
    if deadseq(m) >= newc then
      ids[#ids + 1] = string.sub(m, 24)
      members[#members + 1] = m
    end
  end
  if #ids > 0 then
    chunked('HDEL', KEYS[4], ids, 500)
    chunked('ZREM', KEYS[5], members, 500)
  end
  f = math.min(f, newc - 1)
  redis.call('HSET', KEYS[2], 'c:' .. p, newc, 'f:' .. p, f)
  local done = newc <= lo
  if done then redis.call('HDEL', KEYS[2], 'rw:' .. p) end
  budget = budget - #fields - #ids
  return f, newc, not done
end
local left = {}
local woke = false
for j = 0, #ARGV - 2 do
  local p = ARGV[2 + j]
  if budget <= 0 then
    left[#left + 1] = tonumber(p)
  else
    local v = redis.call('HMGET', KEYS[2], 'f:' .. p, 'c:' .. p, 'rw:' .. p)
    local f, c = tonumber(v[1]), tonumber(v[2])
    local more = false
    if v[3] then
      f, c, more = rewind(p, f, c, tonumber(v[3]), KEYS[7 + 2 * j], KEYS[8 + 2 * j])
      woke = woke or not more
    end
    if not more then
      local f2
      f2, budget, more = walk(KEYS[3], p, f, c, budget)
      if f2 ~= f then
        redis.call('HSET', KEYS[2], 'f:' .. p, f2)
        woke = true
      end
    end
    if more then left[#left + 1] = tonumber(p) end
  end
end
-- A finished rewind makes its partition claimable again; a moved frontier frees a partition-ordered head.
if woke then wake(KEYS[6]) end
return left
`;

/** Shared by REOPEN and REDRIVE: f/c per partition read once, and the re-opening of one sequence. */
const REOPEN_ONE = `
local fc = {}
local function part(p)
  local s = fc[p]
  if not s then
    local v = redis.call('HMGET', KEYS[2], 'f:' .. p, 'c:' .. p)
    s = { f = tonumber(v[1]), c = tonumber(v[2]) }
    s.f0 = s.f
    fc[p] = s
  end
  return s
end
-- Make delivered sequence seq of p available now with its attempt count reset, and pull the
-- frontier back before it. A sequence at or above the cursor was never delivered: it is pending already.
local function reopen(leased, avail, now, p, seq)
  local s = part(p)
  if seq >= s.c then return false end
  redis.call('HSET', KEYS[3], p .. ':' .. seq, 'A|0||0')
  redis.call('ZREM', leased, seq)
  redis.call('ZADD', avail, now, seq)
  if seq - 1 < s.f then s.f = seq - 1 end
  return true
end
local function saveFrontiers()
  for p, s in pairs(fc) do
    if s.f ~= s.f0 then redis.call('HSET', KEYS[2], 'f:' .. p, s.f) end
  end
end
`;

/**
 * Re-open chosen events (replay by query, or redrive of named dead letters): each becomes
 * available now and the frontier moves back before it. The caller sends a bounded number per call.
 * KEYS: meta, cfg, dl, dead, deadz, wake, then per slot j: leased (7+2j), avail (8+2j).
 * ARGV: mode ('events' | 'redrive'), now, then per event: slot, partition, sequence, event id.
 * 'events' counts re-opened deliveries; 'redrive' counts dead letters found (others are skipped).
 */
export const REOPEN =
  COMMON +
  REOPEN_ONE +
  `
local gone = absent(KEYS[1], KEYS[2])
if gone then return redis.error_reply('RHEO:' .. gone) end
local redrive = ARGV[1] == 'redrive'
local now = ARGV[2]
local n = 0
for b = 3, #ARGV, 4 do
  local j, p, seq, id = tonumber(ARGV[b]), ARGV[b + 1], tonumber(ARGV[b + 2]), ARGV[b + 3]
  local wasDead = redis.call('HDEL', KEYS[4], id) == 1
  redis.call('ZREM', KEYS[5], deadmember(p, seq, id))
  if wasDead or not redrive then
    local reopened = reopen(KEYS[7 + 2 * j], KEYS[8 + 2 * j], now, p, seq)
    if redrive or reopened then n = n + 1 end
  end
end
saveFrontiers()
wake(KEYS[6])
return n
`;

/**
 * Redrive every dead letter, one page per call: the first `limit` dead letters after a
 * position in (partition, sequence) order. The caller walks the positions forward, so an
 * event dead-lettered again while the redrive runs is not redriven twice by it.
 * KEYS: meta, cfg, dl, dead, deadz, wake, then per partition p: leased (7+2p), avail (8+2p).
 * ARGV: now, start ('-', or '(' followed by the last member of the previous page), limit.
 * Returns { dead letters redriven, the last member of this page or '' }.
 */
export const REDRIVE =
  COMMON +
  REOPEN_ONE +
  `
local gone = absent(KEYS[1], KEYS[2])
if gone then return redis.error_reply('RHEO:' .. gone) end
local now = ARGV[1]
local members = redis.call('ZRANGEBYLEX', KEYS[5], ARGV[2], '+', 'LIMIT', 0, tonumber(ARGV[3]))
if #members == 0 then return { 0, '' } end
local ids = {}
for i, m in ipairs(members) do
  local p = tonumber(string.sub(m, 1, 5))
  ids[i] = string.sub(m, 24)
  reopen(KEYS[7 + 2 * p], KEYS[8 + 2 * p], now, p, deadseq(m))
end
chunked('HDEL', KEYS[4], ids, 500)
chunked('ZREM', KEYS[5], members, 500)
saveFrontiers()
wake(KEYS[6])
return { #members, members[#members] }
`;

/**
 * Forget every delivery and dead letter of the group; restart each partition after a sequence.
 * The group's record keys are UNLINKed, not DELeted: they can hold millions of entries, and
 * UNLINK frees a large value in a background thread, so this script's cost is per partition only.
 * KEYS: meta, cfg, dl, dead, deadz, wake, then per partition p: leased (7+2p), avail (8+2p).
 * ARGV: mode ('end' | 'after'), then per partition the last sequence to skip (mode 'after').
 */
export const RESET =
  COMMON +
  `
local gone = absent(KEYS[1], KEYS[2])
if gone then return redis.error_reply('RHEO:' .. gone) end
local P = tonumber(redis.call('HGET', KEYS[1], 'partitions'))
redis.call('UNLINK', KEYS[3], KEYS[4], KEYS[5])
for p = 0, P - 1 do
  redis.call('UNLINK', KEYS[7 + 2 * p], KEYS[8 + 2 * p])
  local after
  if ARGV[1] == 'end' then after = redis.call('HGET', KEYS[1], 'hw:' .. p) or '0' else after = ARGV[2 + p] or '0' end
  redis.call('HSET', KEYS[2], 'f:' .. p, after, 'c:' .. p, tonumber(after) + 1)
  -- A rewind left unfinished by a replay is superseded.
  redis.call('HDEL', KEYS[2], 'rw:' .. p)
end
wake(KEYS[6])
return 1
`;

/**
 * Lag and health figures in one consistent read.
 * KEYS: meta, cfg, dl, dead, then per partition p: leased (5+2p), log (6+2p). ARGV: now.
 * Returns { dead count, then per partition: high watermark, frontier, live leases,
 * timestamp of frontier + 1 or '', 1 when a frontier walk or rewind is left unfinished else 0 }.
 */
export const INSPECT =
  COMMON +
  `
local gone = absent(KEYS[1], KEYS[2])
if gone then return redis.error_reply('RHEO:' .. gone) end
local P = tonumber(redis.call('HGET', KEYS[1], 'partitions'))
local out = { redis.call('HLEN', KEYS[4]) }
for p = 0, P - 1 do
  local hw = tonumber(redis.call('HGET', KEYS[1], 'hw:' .. p) or '0')
  local v = redis.call('HMGET', KEYS[2], 'f:' .. p, 'c:' .. p, 'rw:' .. p)
  local f, c = tonumber(v[1]), tonumber(v[2])
  out[#out + 1] = hw
  out[#out + 1] = f
  out[#out + 1] = redis.call('ZCOUNT', KEYS[5 + 2 * p], '(' .. ARGV[1], '+inf')
  local ts = ''
  if f < hw then
    local e = redis.call('XRANGE', KEYS[6 + 2 * p], '0-' .. (f + 1), '0-' .. (f + 1))[1]
    if e then
      for i = 1, #e[2], 2 do if e[2][i] == 't' then ts = e[2][i + 1] end end
    end
  end
  out[#out + 1] = ts
  local pending = 0
  if v[3] then
    pending = 1
  elseif f + 1 < c then
    local head = redis.call('HGET', KEYS[3], p .. ':' .. (f + 1))
    if not head or string.sub(head, 1, 1) == 'T' then pending = 1 end
  end
  out[#out + 1] = pending
end
return out
`;

/**
 * One page of dead letters in (partition, sequence) order, with their events.
 * KEYS: meta, cfg, dead, deadz, then the log of each partition p at 5 + p. ARGV: limit, after (event id or '').
 * Returns per dead letter: event id, record, entry fields.
 */
export const DEAD_LETTERS =
  COMMON +
  `
local gone = absent(KEYS[1], KEYS[2])
if gone then return redis.error_reply('RHEO:' .. gone) end
local lo = '-'
if ARGV[2] ~= '' then
  local rec = redis.call('HGET', KEYS[3], ARGV[2])
  if not rec then return redis.error_reply('RHEO:invalid_argument:after') end
  local p, seq = string.match(rec, '^(%d+)|(%d+)|')
  lo = '(' .. deadmember(p, seq, ARGV[2])
end
local out = {}
for _, m in ipairs(redis.call('ZRANGEBYLEX', KEYS[4], lo, '+', 'LIMIT', 0, tonumber(ARGV[1]))) do
  local id = string.sub(m, 24)
  local rec = redis.call('HGET', KEYS[3], id)
  local p, seq = string.match(rec, '^(%d+)|(%d+)|')
  local e = redis.call('XRANGE', KEYS[5 + tonumber(p)], '0-' .. seq, '0-' .. seq)[1]
  out[#out + 1] = id
  out[#out + 1] = rec
  out[#out + 1] = e and e[2] or {}
end
return out
`;

/** The scripts by name, as loaded with SCRIPT LOAD. */
export const SCRIPTS = {
  createStream: CREATE_STREAM,
  createGroup: CREATE_GROUP,
  append: APPEND,
  fetch: FETCH,
  renew: RENEW,
  settle: SETTLE,
  release: RELEASE,
  replay: REPLAY,
  tidy: TIDY,
  reopen: REOPEN,
  redrive: REDRIVE,
  reset: RESET,
  inspect: INSPECT,
  deadLetters: DEAD_LETTERS,
} as const;

/** The name of one script. */
export type ScriptName = keyof typeof SCRIPTS;
