/**
 * Every Lua script of the Redis backend, in one place (as pg-boss keeps its SQL).
 * Each script is atomic: the fence check and the write it guards run in one step,
 * which closes the race Rheo's Elixir adapter has between its fence read and XACK.
 *
 * Conventions:
 * - every key a script touches arrives in KEYS (cluster-safe; all share the stream's hash tag);
 * - the caller passes `now` from the backend's clock (never Redis TIME), so a ManualClock can expire leases;
 * - an error the caller should see as a RheoError is raised as `RHEO:<code>`;
 * - delivery record (HASH dl, field `<p>:<seq>`): `state|attempt|leaseId|expiresAt`,
 *   state L = leased, A = available (waiting in avail:<p>), T = terminal above the frontier;
 *   a sequence below the cursor with no record is terminal and already passed by the frontier;
 * - the log entry id of sequence s is `0-<s>`, and it is the lease's receipt.
 * Numbers are concatenated into strings only when below 10^14 (Lua 5.1 prints 14 digits).
 */

const COMMON = `
local function parse(rec)
  local st, att, lid, ex = string.match(rec, '^(%a)|(%d+)|([^|]*)|(%d+)$')
  return st, tonumber(att), lid, tonumber(ex)
end
local function deadmember(p, seq, id)
  return string.format('%05d:%016d:', tonumber(p), tonumber(seq)) .. id
end
-- Walk the frontier of partition p forward over terminal sequences, dropping their records.
local function advance(cfg, dl, p)
  local f = tonumber(redis.call('HGET', cfg, 'f:' .. p))
  local c = tonumber(redis.call('HGET', cfg, 'c:' .. p))
  local f0 = f
  while f + 1 < c do
    local k = p .. ':' .. (f + 1)
    local rec = redis.call('HGET', dl, k)
    if rec then
      if string.sub(rec, 1, 1) ~= 'T' then break end
      redis.call('HDEL', dl, k)
    end
    f = f + 1
  end
  if f ~= f0 then redis.call('HSET', cfg, 'f:' .. p, f) end
end
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
 * of a partition with no live lease is claimable.
 * KEYS: meta, cfg, dl, wake, then per partition slot j: log (5+3j), leased (6+3j), avail (7+3j).
 * ARGV: now, limit, leaseMs, leaseIdBase, then the partition of each slot.
 * Returns { wakeId, then per lease: partition, sequence, leaseId, attempt, entry fields }.
 */
export const FETCH =
  COMMON +
  `
local now = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local exp = now + tonumber(ARGV[3])
local np = #ARGV - 4
local cfgFields, hwFields = { 'ord' }, {}
for j = 0, np - 1 do
  local p = ARGV[5 + j]
  cfgFields[#cfgFields + 1] = 'f:' .. p
  cfgFields[#cfgFields + 1] = 'c:' .. p
  hwFields[#hwFields + 1] = 'hw:' .. p
end
local cfg = redis.call('HMGET', KEYS[2], unpack(cfgFields))
if not cfg[1] then return redis.error_reply('RHEO:group_not_found') end
local hws = redis.call('HMGET', KEYS[1], unpack(hwFields))
local strict = cfg[1] == 'partition'
local queues = {}
for j = 0, np - 1 do
  local p = ARGV[5 + j]
  local leased, avail = KEYS[6 + 3 * j], KEYS[7 + 3 * j]
  local hw = tonumber(hws[j + 1] or '0')
  local f = tonumber(cfg[2 + 2 * j])
  local c = tonumber(cfg[3 + 2 * j])
  local seqs = {}
  if strict then
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
local out = { last[1] and last[1][1] or '0-0' }
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
-- 3. Grant: one HSET for every delivery record, one ZADD (and ZREM) per partition.
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
  local lid = ARGV[4] .. '.' .. n
  records[#records + 1] = k
  records[#records + 1] = 'L|' .. attempt .. '|' .. lid .. '|' .. exp
  out[#out + 1] = q.p
  out[#out + 1] = seq
  out[#out + 1] = lid
  out[#out + 1] = attempt
  out[#out + 1] = fields or {}
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
 * KEYS: cfg, dl, then the leased set of each partition slot j at 3 + j.
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
local exists = redis.call('EXISTS', KEYS[1]) == 1
for b = 3, #ARGV, 5 do
  if not exists then
    out[#out + 1] = 'group_not_found'
  else
    local p, seq, lid = ARGV[b + 1], ARGV[b + 2], ARGV[b + 3]
    local att, why = fence(KEYS[2], now, p, seq, lid, ARGV[b + 4])
    if att then
      redis.call('HSET', KEYS[2], p .. ':' .. seq, 'L|' .. att .. '|' .. lid .. '|' .. exp)
      redis.call('ZADD', KEYS[3 + tonumber(ARGV[b])], exp, seq)
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
 * KEYS: cfg, dl, dead, deadz, wake, then per partition slot j: leased (6+3j), avail (7+3j), log (8+3j).
 * ARGV: now, n, then the group's backoff delay after attempts 1..n (from core's backoffDelay),
 * then per op: kind (a|n|r), slot, partition, sequence, leaseId, receipt, reason, delayMs ('' = backoff).
 * Returns per op 'ok' or an error code.
 */
export const SETTLE =
  COMMON +
  FENCE +
  `
local now = tonumber(ARGV[1])
local nd = tonumber(ARGV[2])
local out = {}
local maxAttempts = tonumber(redis.call('HGET', KEYS[1], 'maxAttempts') or '-1')
local woke = false
-- Frontier and cursor per partition, read once, written once at the end.
local fc = {}
local function part(p)
  local s = fc[p]
  if not s then
    local v = redis.call('HMGET', KEYS[1], 'f:' .. p, 'c:' .. p)
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
    redis.call('HSET', KEYS[2], k, 'T|' .. att .. '||0')
    return
  end
  redis.call('HDEL', KEYS[2], k)
  s.f = s.f + 1
  while s.f + 1 < s.c do
    local k2 = p .. ':' .. (s.f + 1)
    local rec = redis.call('HGET', KEYS[2], k2)
    if rec then
      if string.sub(rec, 1, 1) ~= 'T' then break end
      redis.call('HDEL', KEYS[2], k2)
    end
    s.f = s.f + 1
  end
end
local unleased = {}
for b = 3 + nd, #ARGV, 8 do
  if maxAttempts < 0 then
    out[#out + 1] = 'group_not_found'
  else
    local kind, j, p, seq, lid = ARGV[b], tonumber(ARGV[b + 1]), ARGV[b + 2], ARGV[b + 3], ARGV[b + 4]
    local att, why = fence(KEYS[2], now, p, seq, lid, ARGV[b + 5])
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
        local e = redis.call('XRANGE', KEYS[8 + 3 * j], '0-' .. seq, '0-' .. seq)[1]
        if e then
          for i = 1, #e[2], 2 do if e[2][i] == 'i' then id = e[2][i + 1] end end
        end
        redis.call('HSET', KEYS[3], id, p .. '|' .. seq .. '|' .. att .. '|' .. now .. '|' .. ARGV[b + 6])
        redis.call('ZADD', KEYS[4], 0, deadmember(p, seq, id))
        terminal(p, seq, k, att)
      else
        local delay = ARGV[b + 7]
        if delay == '' then delay = ARGV[2 + math.min(att, nd)] or '0' end
        redis.call('HSET', KEYS[2], k, 'A|' .. att .. '||0')
        redis.call('ZADD', KEYS[7 + 3 * j], now + tonumber(delay), seq)
        woke = true
      end
      out[#out + 1] = 'ok'
    end
  end
end
for j, seqs in pairs(unleased) do chunked('ZREM', KEYS[6 + 3 * j], seqs, 1000) end
local frontiers = {}
for p, s in pairs(fc) do
  if s.f ~= s.f0 then
    frontiers[#frontiers + 1] = 'f:' .. p
    frontiers[#frontiers + 1] = s.f
  end
end
if #frontiers > 0 then chunked('HSET', KEYS[1], frontiers, 1000) end
if woke then wake(KEYS[5]) end
return out
`;

/** Drop the dead letters of partition p with sequence > after. */
const DROP_DEAD_ABOVE = `
local function dropDeadAbove(dead, deadz, p, after)
  local lo = '[' .. string.format('%05d:%016d', tonumber(p), after + 1)
  local hi = '(' .. string.format('%05d;', tonumber(p))
  for _, m in ipairs(redis.call('ZRANGEBYLEX', deadz, lo, hi)) do
    redis.call('HDEL', dead, string.sub(m, 24))
    redis.call('ZREM', deadz, m)
  end
end
`;

/**
 * Rewind partitions: every delivery above `after` is forgotten (fresh again), the
 * cursor moves to after + 1 and the frontier back to at most `after`.
 * KEYS: meta, cfg, dl, dead, deadz, wake, then per slot j: leased (7+2j), avail (8+2j).
 * ARGV: mode ('sequence': value is afterSequence, capped at the high watermark | 'after': value is used as is),
 * then per slot: partition, value. Returns how many events were rewound over.
 */
export const REPLAY =
  COMMON +
  DROP_DEAD_ABOVE +
  `
if redis.call('EXISTS', KEYS[2]) == 0 then return redis.error_reply('RHEO:group_not_found') end
local total = 0
for b = 2, #ARGV, 2 do
  local j = (b - 2) / 2
  local p = ARGV[b]
  local hw = tonumber(redis.call('HGET', KEYS[1], 'hw:' .. p) or '0')
  local after = tonumber(ARGV[b + 1])
  if ARGV[1] == 'sequence' and after > hw then after = hw end
  local f = tonumber(redis.call('HGET', KEYS[2], 'f:' .. p))
  local c = tonumber(redis.call('HGET', KEYS[2], 'c:' .. p))
  for s = math.max(after, f) + 1, c - 1 do redis.call('HDEL', KEYS[3], p .. ':' .. s) end
  for _, z in ipairs({ KEYS[7 + 2 * j], KEYS[8 + 2 * j] }) do
    for _, m in ipairs(redis.call('ZRANGE', z, 0, -1)) do
      if tonumber(m) > after then redis.call('ZREM', z, m) end
    end
  end
  dropDeadAbove(KEYS[4], KEYS[5], p, after)
  redis.call('HSET', KEYS[2], 'c:' .. p, after + 1, 'f:' .. p, math.min(f, after))
  total = total + math.max(0, hw - after)
end
wake(KEYS[6])
return total
`;

/**
 * Re-open chosen events (replay by query, or redrive of dead letters): each becomes
 * available now and the frontier moves back before it.
 * KEYS: cfg, dl, dead, deadz, wake, then per slot j: leased (6+2j), avail (7+2j).
 * ARGV: mode ('events' | 'redrive'), now, then per event: slot, partition, sequence, event id.
 * 'events' counts re-opened deliveries; 'redrive' counts dead letters found (others are skipped).
 */
export const REOPEN =
  COMMON +
  `
if redis.call('EXISTS', KEYS[1]) == 0 then return redis.error_reply('RHEO:group_not_found') end
local redrive = ARGV[1] == 'redrive'
local now = ARGV[2]
local n = 0
for b = 3, #ARGV, 4 do
  local j, p, seq, id = tonumber(ARGV[b]), ARGV[b + 1], tonumber(ARGV[b + 2]), ARGV[b + 3]
  local wasDead = redis.call('HDEL', KEYS[3], id) == 1
  redis.call('ZREM', KEYS[4], deadmember(p, seq, id))
  if wasDead or not redrive then
    local c = tonumber(redis.call('HGET', KEYS[1], 'c:' .. p))
    if seq < c then
      redis.call('HSET', KEYS[2], p .. ':' .. seq, 'A|0||0')
      redis.call('ZREM', KEYS[6 + 2 * j], seq)
      redis.call('ZADD', KEYS[7 + 2 * j], now, seq)
      local f = tonumber(redis.call('HGET', KEYS[1], 'f:' .. p))
      if seq - 1 < f then redis.call('HSET', KEYS[1], 'f:' .. p, seq - 1) end
      if not redrive then n = n + 1 end
    end
    if redrive then n = n + 1 end
  end
end
wake(KEYS[5])
return n
`;

/**
 * Forget every delivery and dead letter of the group; restart each partition after a sequence.
 * KEYS: meta, cfg, dl, dead, deadz, wake, then per partition p: leased (7+2p), avail (8+2p).
 * ARGV: mode ('end' | 'after'), then per partition the last sequence to skip (mode 'after').
 */
export const RESET =
  COMMON +
  `
if redis.call('EXISTS', KEYS[2]) == 0 then return redis.error_reply('RHEO:group_not_found') end
local P = tonumber(redis.call('HGET', KEYS[1], 'partitions'))
redis.call('DEL', KEYS[3], KEYS[4], KEYS[5])
for p = 0, P - 1 do
  redis.call('DEL', KEYS[7 + 2 * p], KEYS[8 + 2 * p])
  local after
  if ARGV[1] == 'end' then after = redis.call('HGET', KEYS[1], 'hw:' .. p) or '0' else after = ARGV[2 + p] or '0' end
  redis.call('HSET', KEYS[2], 'f:' .. p, after, 'c:' .. p, tonumber(after) + 1)
end
wake(KEYS[6])
return 1
`;

/**
 * Lag and health figures in one consistent read.
 * KEYS: meta, cfg, dead, then per partition p: leased (4+2p), log (5+2p). ARGV: now.
 * Returns { dead count, then per partition: high watermark, frontier, live leases, timestamp of frontier + 1 or '' }.
 */
export const INSPECT = `
if redis.call('EXISTS', KEYS[2]) == 0 then return redis.error_reply('RHEO:group_not_found') end
local P = tonumber(redis.call('HGET', KEYS[1], 'partitions'))
local out = { redis.call('HLEN', KEYS[3]) }
for p = 0, P - 1 do
  local hw = tonumber(redis.call('HGET', KEYS[1], 'hw:' .. p) or '0')
  local f = tonumber(redis.call('HGET', KEYS[2], 'f:' .. p))
  out[#out + 1] = hw
  out[#out + 1] = f
  out[#out + 1] = redis.call('ZCOUNT', KEYS[4 + 2 * p], '(' .. ARGV[1], '+inf')
  local ts = ''
  if f < hw then
    local e = redis.call('XRANGE', KEYS[5 + 2 * p], '0-' .. (f + 1), '0-' .. (f + 1))[1]
    if e then
      for i = 1, #e[2], 2 do if e[2][i] == 't' then ts = e[2][i + 1] end end
    end
  end
  out[#out + 1] = ts
end
return out
`;

/**
 * One page of dead letters in (partition, sequence) order, with their events.
 * KEYS: cfg, dead, deadz, then the log of each partition p at 4 + p. ARGV: limit, after (event id or '').
 * Returns per dead letter: event id, record, entry fields.
 */
export const DEAD_LETTERS = `
if redis.call('EXISTS', KEYS[1]) == 0 then return redis.error_reply('RHEO:group_not_found') end
local lo = '-'
if ARGV[2] ~= '' then
  local rec = redis.call('HGET', KEYS[2], ARGV[2])
  if not rec then return redis.error_reply('RHEO:invalid_argument:after') end
  local p, seq = string.match(rec, '^(%d+)|(%d+)|')
  lo = '(' .. string.format('%05d:%016d:', tonumber(p), tonumber(seq)) .. ARGV[2]
end
local out = {}
for _, m in ipairs(redis.call('ZRANGEBYLEX', KEYS[3], lo, '+', 'LIMIT', 0, tonumber(ARGV[1]))) do
  local id = string.sub(m, 24)
  local rec = redis.call('HGET', KEYS[2], id)
  local p, seq = string.match(rec, '^(%d+)|(%d+)|')
  local e = redis.call('XRANGE', KEYS[4 + tonumber(p)], '0-' .. seq, '0-' .. seq)[1]
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
  replay: REPLAY,
  reopen: REOPEN,
  reset: RESET,
  inspect: INSPECT,
  deadLetters: DEAD_LETTERS,
} as const;

/** The name of one script. */
export type ScriptName = keyof typeof SCRIPTS;
