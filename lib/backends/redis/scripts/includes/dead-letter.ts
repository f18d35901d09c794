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
 * `deadRecord(p, seq, att, at, reason)`, `deadRecordPosition(rec)` -> p, seq (strings);
 * `deadMember(p, seq, id)`, `deadPosition(p, seq)` (a member's prefix: a range bound),
 * `deadMemberPartition(m)`, `deadMemberSequence(m)` (numbers), `deadMemberId(m)`.
 *
 * Needs: nothing.
 */
export const DEAD_LETTER = `
-- Dead letter record (HASH dead, by event id): partition|sequence|attempt|at|reason.
local function deadRecord(p, seq, att, at, reason)
  return p .. '|' .. seq .. '|' .. att .. '|' .. at .. '|' .. reason
end
local function deadRecordPosition(rec)
  return string.match(rec, '^(%d+)|(%d+)|')
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
`;
