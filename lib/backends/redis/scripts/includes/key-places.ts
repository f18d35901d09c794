/**
 * Key places (docs/adr/049-flow-control.md): in a group with `ordering: 'key'` or
 * `keyConcurrency`, per partition p,
 *   - HASH `ko:<p>`: event key -> how many of its deliveries are open (leased, or
 *     available: a retry, a parked delayed event, an expired lease); waiting ones not;
 *   - ZSET `kw:<p>` (every score 0): member `<escaped key>\0<16-digit sequence>` per
 *     delivery waiting for its key (record state W, includes/record.ts), so a key's
 *     earliest waiting one is the first of a ZRANGEBYLEX over its prefix. The key is
 *     escaped (`%` -> `%25`, NUL -> `%00`) so one key's prefix never starts another's.
 *
 * `placesOf(cfg)`: the key places of the group (1 under ordering 'key', else its
 * `kc`), or nil when keys are not limited. `keyBook(ko, kw, dl, avail, log, p,
 * places)`: the handle the functions below take. `keyWaitMember(key, seq)`;
 * `keyHasWaiting(b, key)`; `keyWait(b, key, seq)` sets a delivery waiting (record
 * and member); `keyUnwait(b, key, seq)` drops its member; `keyEnded(b, key, now)`:
 * an open delivery of `key` ended, its place goes to the key's earliest waiting one;
 * `keyGiveUp(b, key, seq, rec)`: open record `rec` of `key` is cleared (a rewind, a
 * trim, a re-open): a waiting one drops its member, another gives its place back,
 * handing nothing on (the caller counts the touched keys again);
 * `keyPromote(b, key, now)` gives every free place of `key` to its earliest waiting
 * deliveries, each an available record of attempt 0 due at max(now, its deliverAt);
 * both return how many got a place (the caller wakes the stream when any did).
 */
import { include } from '../loader';

export const KEY_PLACES = include(
  'key-places',
  { needs: ['record', 'log-entry'] },
  `
local KEY_SEP = string.char(0)
local function placesOf(cfg)
  local v = redis.call('HMGET', cfg, 'ord', 'kc')
  if v[1] == 'key' then return 1 end
  if v[2] and v[2] ~= '' then return tonumber(v[2]) end
  return nil
end
local function keyBook(ko, kw, dl, avail, log, p, places)
  return { ko = ko, kw = kw, dl = dl, avail = avail, log = log, p = p, places = places }
end
local function escapeKey(key)
  return (string.gsub(string.gsub(key, '%%', '%%25'), '%z', '%%00'))
end
local function keyWaitMember(key, seq)
  return escapeKey(key) .. KEY_SEP .. string.format('%016d', tonumber(seq))
end
local function keyWaiting(b, key, n)
  local ek = escapeKey(key)
  return redis.call('ZRANGEBYLEX', b.kw, '[' .. ek .. KEY_SEP, '(' .. ek .. string.char(1), 'LIMIT', 0, n)
end
local function keyHasWaiting(b, key)
  return #keyWaiting(b, key, 1) > 0
end
local function keyWait(b, key, seq)
  redis.call('HSET', b.dl, b.p .. ':' .. seq, waitingRecord())
  redis.call('ZADD', b.kw, 0, keyWaitMember(key, seq))
end
local function keyUnwait(b, key, seq)
  redis.call('ZREM', b.kw, keyWaitMember(key, seq))
end
local function keyPromote(b, key, now)
  local open = tonumber(redis.call('HGET', b.ko, key) or '0')
  if open >= b.places then return 0 end
  local members = keyWaiting(b, key, b.places - open)
  for _, m in ipairs(members) do
    local seq = tonumber(string.sub(m, -16))
    local due = now
    local w = entryField(logEntry(b.log, seq), 'w')
    if w and tonumber(w) > due then due = tonumber(w) end
    redis.call('HSET', b.dl, b.p .. ':' .. seq, availableRecord(0))
    redis.call('ZADD', b.avail, due, seq)
  end
  if #members > 0 then
    redis.call('ZREM', b.kw, unpack(members))
    redis.call('HINCRBY', b.ko, key, #members)
  end
  return #members
end
local function keyGiveUp(b, key, seq, rec)
  if string.sub(rec, 1, 1) == 'W' then
    keyUnwait(b, key, seq)
  elseif redis.call('HINCRBY', b.ko, key, -1) <= 0 then
    redis.call('HDEL', b.ko, key)
  end
end
local function keyEnded(b, key, now)
  if redis.call('HINCRBY', b.ko, key, -1) <= 0 then redis.call('HDEL', b.ko, key) end
  return keyPromote(b, key, now)
end
`,
);
