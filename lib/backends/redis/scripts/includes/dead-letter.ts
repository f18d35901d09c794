/**
 * The two dead-letter formats, written by settle and read by dead-letters, tidy,
 * reopen and redrive:
 *
 * - HASH `dead`: event id -> record `partition|sequence|attempt|at|reason` (the
 *   reason is last and may contain '|'; ../../codec.ts parses it on the TypeScript side);
 * - ZSET `deadz` (every score 0): member `ppppp:ssssssssssssssss:<event id>`, the
 *   5-digit partition and 16-digit sequence, so lexicographic order is
 *   (partition, sequence) order.
 *
 * - ZSET `deadt`: event id scored by `at`, the time it was dead-lettered (what a
 *   purge by time reads; layout 2, see ../purge.ts for data written before it).
 *
 * `deadRecord(p, seq, att, at, reason)`, `deadRecordPosition(rec)` -> p, seq (strings),
 * `deadRecordTime(rec)` -> at (number);
 * `deadMember(p, seq, id)`, `deadPosition(p, seq)` (a member's prefix: a range bound),
 * `deadMemberPartition(m)`, `deadMemberSequence(m)` (numbers), `deadMemberId(m)`.
 */
import { include } from '../loader';

export const DEAD_LETTER = include(
  'dead-letter',
  {},
  `
-- Dead letter record (HASH dead, by event id): partition|sequence|attempt|at|reason.
local function deadRecord(p, seq, att, at, reason)
  return p .. '|' .. seq .. '|' .. att .. '|' .. at .. '|' .. reason
end
local function deadRecordPosition(rec)
  return string.match(rec, '^(%d+)|(%d+)|')
end
local function deadRecordTime(rec)
  return tonumber(string.match(rec, '^%d+|%d+|%d+|(%d+)|'))
end
-- Dead letters are ordered by this member of deadz: 5-digit partition, 16-digit sequence, event id.
local function deadPosition(p, seq)
  return string.format('%05d:%016d:', tonumber(p), tonumber(seq))
end
local function deadMember(p, seq, id)
  return deadPosition(p, seq) .. id
end
local function deadMemberPartition(m) return tonumber(string.sub(m, 1, 5)) end
local function deadMemberSequence(m) return tonumber(string.sub(m, 7, 22)) end
local function deadMemberId(m) return string.sub(m, 24) end
`,
);
