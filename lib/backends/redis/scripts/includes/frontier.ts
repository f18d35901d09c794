/**
 * The frontier walk. The frontier `f:<p>` is the highest sequence with every event
 * up to it terminal (acked or dead-lettered); the cursor `c:<p>` is the next
 * sequence never delivered.
 *
 * `walkFrontier(dl, p, f, c, budget, done)`: move frontier `f` of partition `p` forward
 * over terminal sequences (a T record, or no record at all) below cursor `c`,
 * dropping the records passed, looking at no more than `budget` records. `done`
 * (optional, sequence -> true) names sequences the caller made terminal in this
 * call without writing their T record yet (settle defers it): they count as
 * terminal whatever their record says, a run of them from frontier + 1 is passed
 * without reading (nor spending budget: the caller bounds them), and their records
 * are dropped when passed. Returns the new frontier, the budget left, and whether
 * the budget cut the walk short (the caller then reports work left, and tidy
 * finishes it).
 *
 * `walkLeft(f, c, head)`: whether a walk was left unfinished, from the record at
 * frontier + 1 (`head`): none, or a terminal one, below the cursor. A walk stops
 * early only when a budget runs out or a process dies between slices.
 */
import { include } from '../loader';

export const FRONTIER = include(
  'frontier',
  { needs: ['chunked', 'record'] },
  `
-- Walk frontier f of partition p forward over terminal sequences (a T record, or no record at all)
-- below cursor c, dropping the records passed. Looks at no more than budget records: the records
-- are read in windows that start small (the usual case is an ack at frontier + 1 with a live lease
-- right behind it) and double while the run of terminal records goes on.
-- Returns the new frontier, the budget left, and whether the walk was cut short by the budget.
local function walkFrontier(dl, p, f, c, budget, done)
  done = done or {}
  local w = 4
  while f + 1 < c do
    -- The caller's own terminal run: passed without a read (settle acks in order, mostly).
    local drop = {}
    while f + 1 < c and done[f + 1] do
      f = f + 1
      drop[#drop + 1] = p .. ':' .. f
    end
    if #drop > 0 then chunked('HDEL', dl, drop, 500) end
    if f + 1 >= c then break end
    if budget <= 0 then return f, 0, true end
    w = math.min(w, budget, c - 1 - f)
    local fields = {}
    for i = 1, w do fields[i] = p .. ':' .. (f + i) end
    local recs = redis.call('HMGET', dl, unpack(fields))
    budget = budget - w
    drop = {}
    local stop = 0
    for i = 1, w do
      local rec = recs[i]
      if done[f + i] then
        drop[#drop + 1] = fields[i]
      else
        if rec and not isTerminal(rec) then
          stop = i
          break
        end
        if rec then drop[#drop + 1] = fields[i] end
      end
    end
    if #drop > 0 then chunked('HDEL', dl, drop, 500) end
    if stop > 0 then return f + stop - 1, budget, false end
    f = f + w
    w = math.min(w * 2, 512)
  end
  return f, budget, false
end
-- The record at frontier + 1 (head): none, or a terminal one, below cursor c means a frontier walk
-- was cut short (by a budget, or by a process that died between slices).
local function walkLeft(f, c, head)
  return f + 1 < c and (not head or isTerminal(head))
end
`,
);
