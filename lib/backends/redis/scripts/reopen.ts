/**
 * reopen: re-open chosen events of one group (replay by query, or redrive of named
 * dead letters): each becomes available now with its attempt count reset, and the
 * frontier moves back before it. The backend sends at most 100 events per call.
 *
 * KEYS[1]     meta    HASH    the stream's meta (existence)
 * KEYS[2]     cfg     HASH    the group's positions (frontiers written)
 * KEYS[3]     dl      HASH    delivery records (written: available)
 * KEYS[4]     dead    HASH    dead letters (the event's removed)
 * KEYS[5]     deadz   ZSET    dead-letter order (the event's removed)
 * KEYS[6]     wake    STREAM  bumped
 * KEYS[7+2j]  leased  ZSET    the leased set of the partition in slot j (re-opened ones removed)
 * KEYS[8+2j]  avail   ZSET    its retry set (re-opened ones added, due now)
 *
 * ARGV[1]  mode  'events': re-open each event (a never-delivered one is pending already) |
 *                'redrive': re-open only the events that were dead letters
 * ARGV[2]  now   ms
 * then per event (at b = 3 + 4i): ARGV[b] slot j, ARGV[b+1] partition, ARGV[b+2] sequence,
 * ARGV[b+3] event id.
 *
 * Returns a count: 'events' counts re-opened deliveries, 'redrive' counts dead letters found.
 * Errors:
 *   RHEO:stream_not_found / RHEO:group_not_found  keys gone -> that RheoError (explained)
 */
import { CHECK_GROUP } from './includes/check-group';
import { CHUNKED } from './includes/chunked';
import { DEAD_LETTER } from './includes/dead-letter';
import { ERROR } from './includes/error';
import { POSITIONS } from './includes/positions';
import { RECORD } from './includes/record';
import { REOPEN_ONE } from './includes/reopen-one';
import { WAKE } from './includes/wake';

export const REOPEN =
  ERROR +
  CHECK_GROUP +
  CHUNKED +
  RECORD +
  POSITIONS +
  REOPEN_ONE +
  DEAD_LETTER +
  WAKE +
  `
local gone = missing(KEYS[1], KEYS[2])
if gone then return rheoError(gone) end
local redrive = ARGV[1] == 'redrive'
local now = ARGV[2]
local n = 0
for b = 3, #ARGV, 4 do
  local j, p, seq, id = tonumber(ARGV[b]), ARGV[b + 1], tonumber(ARGV[b + 2]), ARGV[b + 3]
  local wasDead = redis.call('HDEL', KEYS[4], id) == 1
  redis.call('ZREM', KEYS[5], deadMember(p, seq, id))
  if wasDead or not redrive then
    local reopened = reopen(KEYS[2], KEYS[3], KEYS[7 + 2 * j], KEYS[8 + 2 * j], now, p, seq)
    if redrive or reopened then n = n + 1 end
  end
end
saveFrontiers(KEYS[2])
wake(KEYS[6])
return n
`;
