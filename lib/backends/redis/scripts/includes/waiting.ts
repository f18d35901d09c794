/**
 * `waitingOf(meta, ids, cfg, dl, id, now)`: where one group stands on event `id`
 * (skip and reschedule, docs/adr/048-skip-reschedule-cancel.md): its partition,
 * sequence, the attempt and the state of its waiting delivery (a record that no live
 * lease holds: available, waiting for its key, or leased and expired at `now`); or nil and the code of why
 * not: 'not_in_stream' (no such id in `ids`, or at or below the trim point),
 * 'not_offered' (at or above the group's cursor), 'settled' (no record below the
 * cursor, or a terminal one), 'lease_held:<expiresAt>' (a live lease). Reads the
 * group's positions through `position` (positions include), so a caller that
 * moves a frontier saves it with `saveFrontiers`.
 *
 * `eachWaiting(meta, ids, cfg, dl, now, list, first, take)`: the same for every id
 * of `list` from index `first` on (the ids a script got in ARGV), handing each
 * waiting delivery to `take(p, seq, att, j, st)` (`j` the partition as a number, for
 * the per-partition KEYS, `st` its record's state) to move it, or to refuse it by
 * returning a code; returns 'ok' or the code per id, in order, and how many were taken.
 */
import { include } from '../loader';

export const WAITING = include(
  'waiting',
  { needs: ['record', 'positions'] },
  `
-- Where the group stands on event id: p, seq, attempt of its waiting delivery, or nil and a code.
local function waitingOf(meta, ids, cfg, dl, id, now)
  local pos = redis.call('HGET', ids, id)
  if not pos then return nil, 'not_in_stream' end
  local p, seq = string.match(pos, '^(%d+):(%d+)$')
  seq = tonumber(seq)
  local lw = tonumber(redis.call('HGET', meta, 'lw:' .. p) or '0')
  if seq <= lw then return nil, 'not_in_stream' end
  local s = position(cfg, p)
  if seq >= math.max(s.c, lw + 1) then return nil, 'not_offered' end
  local rec = redis.call('HGET', dl, p .. ':' .. seq)
  if not rec or isTerminal(rec) then return nil, 'settled' end
  local st, att, _, ex = parseRecord(rec)
  if st == 'L' and ex > now then return nil, 'lease_held:' .. ex end
  return p, seq, att, st
end

-- Every id of list from first on: its waiting delivery handed to take, or its code; out per id, and how many were taken.
local function eachWaiting(meta, ids, cfg, dl, now, list, first, take)
  local out, n = {}, 0
  for i = first, #list do
    local p, seq, att, st = waitingOf(meta, ids, cfg, dl, list[i], now)
    if not p then
      out[#out + 1] = seq
    else
      local refused = take(p, seq, att, tonumber(p), st)
      if refused then
        out[#out + 1] = refused
      else
        n = n + 1
        out[#out + 1] = 'ok'
      end
    end
  end
  return out, n
end
`,
);
