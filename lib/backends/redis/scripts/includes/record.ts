/**
 * The delivery record: HASH `dl`, field `<p>:<seq>`, value
 * `state|attempt|leaseId|expiresAt`, with state
 *   L  leased (leaseId and expiresAt set),
 *   A  available: waiting in `avail:<p>` for (re)delivery (leaseId '' and expiresAt 0),
 *   T  terminal (acked or dead-lettered) above the frontier (leaseId '' and expiresAt 0),
 *   W  waiting for a place of its key (docs/adr/049-flow-control.md, includes/key-places.ts):
 *      open (it holds the frontier) but in neither `leased` nor `avail`, attempt 0.
 * A sequence below the cursor with no record is terminal and already passed by the frontier.
 *
 * `parseRecord(rec)` -> state, attempt, leaseId, expiresAt; `leasedRecord`,
 * `availableRecord`, `terminalRecord`, `waitingRecord` build one; `isTerminal(rec)`.
 */
import { include } from '../loader';

export const RECORD = include(
  'record',
  {},
  `
-- Delivery record: state|attempt|leaseId|expiresAt (state L leased, A available, T terminal, W waiting for its key).
local function parseRecord(rec)
  local st, att, lid, ex = string.match(rec, '^(%a)|(%d+)|([^|]*)|(%d+)$')
  return st, tonumber(att), lid, tonumber(ex)
end
local function leasedRecord(att, lid, exp)
  return 'L|' .. att .. '|' .. lid .. '|' .. exp
end
local function availableRecord(att)
  return 'A|' .. att .. '||0'
end
local function terminalRecord(att)
  return 'T|' .. att .. '||0'
end
local function waitingRecord()
  return 'W|0||0'
end
local function isTerminal(rec)
  return string.sub(rec, 1, 1) == 'T'
end
`,
);
