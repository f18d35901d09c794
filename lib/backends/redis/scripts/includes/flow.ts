/**
 * The fetch script's flow limits (docs/adr/049-flow-control.md), apart so the claim
 * itself stays readable:
 *
 * `flowRoom(cfg, now, limit, gc, rl, firstLeased)`: core/flow.ts groupRoom over the
 * store: the live leases of KEYS[firstLeased..] (every partition's leased set) against
 * `gc`, and the rate log `rlog` of cfg (`<at>:<count>,...`, oldest first) against `rl`
 * (`<max>:<perMs>`), as a sliding window by `now`. Returns the limit left, the held limit
 * ('group_concurrency', 'rate_limit' or nil), its retryInMs (0 when none) and the rate
 * log's pairs still in the window (nil without a rate limit).
 *
 * `saveRateLog(cfg, log, now, started)`: core/flow.ts rateLogAfter, written back.
 *
 * `scanFresh(log, ko, kw, cx, p, c, hw, dz, want, places, seqs, budget)`: the fresh
 * events of a partition with key places, from cursor `c`: each whose key has a free
 * place in `ko` (counting the ones this scan takes, in order) and no delivery waiting in
 * `kw` is added to `seqs`, up to `want`; the others are listed to be set waiting, at
 * most `budget` (what is left of KEY_SCAN for the call: one call sets at most KEY_SCAN
 * events waiting, over all its partitions). A delayed event cancelled in every group
 * (`cx`) takes no place. Returns the scan `{ list = { {seq, wait}... }, keys = seq ->
 * key, entries = seq -> entry, waits = how many listed to wait }`, or nil and the code of
 * an entry missing below the high watermark.
 */
import { include } from '../loader';

export const FLOW = include(
  'flow',
  { needs: ['log-entry', 'key-places'] },
  `
-- Most fresh events one call sets waiting for their key, over all its partitions (memory's KEY_SCAN is per round).
local KEY_SCAN = 1000
local function flowRoom(cfg, now, limit, gc, rl, firstLeased)
  local room, held, retry, log = limit, nil, 0, nil
  if gc then
    local live = 0
    for i = firstLeased, #KEYS do live = live + redis.call('ZCOUNT', KEYS[i], '(' .. now, '+inf') end
    if tonumber(gc) - live < room then
      room = math.max(0, tonumber(gc) - live)
      held = 'group_concurrency'
    end
  end
  if rl then
    local mx, per = string.match(rl, '^(%d+):(%d+)$')
    per = tonumber(per)
    log = {}
    local used, oldest = 0, nil
    for at, n in string.gmatch(redis.call('HGET', cfg, 'rlog') or '', '(%d+):(%d+)') do
      at, n = tonumber(at), tonumber(n)
      if now - at < per then
        log[#log + 1] = { at, n }
        used = used + n
        if not oldest then oldest = at end
      end
    end
    local rroom = math.max(0, tonumber(mx) - used)
    if rroom < room then
      room = rroom
      held = 'rate_limit'
      retry = 0
      if room == 0 and oldest then retry = math.max(1, oldest + per - now) end
    end
  end
  return room, held, retry, log
end
local function saveRateLog(cfg, log, now, started)
  local n = #log
  if n > 0 and log[n][1] == now then log[n][2] = log[n][2] + started else log[n + 1] = { now, started } end
  local texts = {}
  for i, pair in ipairs(log) do texts[i] = pair[1] .. ':' .. pair[2] end
  redis.call('HSET', cfg, 'rlog', table.concat(texts, ','))
end
local function scanFresh(log, ko, kw, cx, p, c, hw, dz, want, places, seqs, budget)
  local scan = { list = {}, keys = {}, entries = {}, waits = 0 }
  local book = keyBook(ko, kw, nil, nil, log, p, places)
  local opens, waits = {}, {}
  local admitted, nwait = 0, 0
  local s = c
  local full = false
  while s <= hw and admitted < want and not full do
    local es = redis.call('XRANGE', log, '0-' .. s, '0-' .. hw, 'COUNT', math.min(hw - s + 1, want - admitted + budget - nwait))
    if #es == 0 then return nil, 'failed:log:' .. p .. ':' .. s end
    for _, e in ipairs(es) do
      if admitted >= want then break end
      local seq = tonumber(string.sub(e[1], 3))
      if seq ~= s then return nil, 'failed:log:' .. p .. ':' .. s end
      local key = entryField(e, 'k')
      if key and seq <= dz and entryField(e, 'w') and redis.call('HEXISTS', cx, p .. ':' .. seq) == 1 then key = nil end
      local wait = false
      local n = nil
      if key then
        n = opens[key]
        if n == nil then
          n = tonumber(redis.call('HGET', ko, key) or '0')
          waits[key] = keyHasWaiting(book, key)
        end
        wait = waits[key] or n >= places
      end
      -- The call's budget of waiting events spent: the scan stops before this one.
      if wait and nwait >= budget then
        full = true
        break
      end
      s = seq + 1
      if key then
        if wait then waits[key] = true else n = n + 1 end
        opens[key] = n
      end
      scan.entries[seq] = e
      scan.keys[seq] = key
      scan.list[#scan.list + 1] = { seq, wait }
      if wait then
        nwait = nwait + 1
      else
        admitted = admitted + 1
        seqs[#seqs + 1] = seq
      end
    end
  end
  scan.waits = nwait
  return scan
end
`,
);
