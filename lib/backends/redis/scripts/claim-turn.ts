/**
 * claimTurn: take or extend a named, expiring turn for background work. Expiry is
 * kept as a time of the backend's clock inside the hash (the store's time by default,
 * ADR 041; not a Redis TTL), so every process and a ManualClock agree on it.
 *
 * KEYS[1]  turn  HASH  `h` holder, `u` until (ms) (written when granted)
 *
 * ARGV[1]  now     ms, from the backend's clock
 * ARGV[2]  holder  who asks
 * ARGV[3]  ttlMs   the turn lasts until now + ttlMs
 *
 * Returns 1 when `holder` has the turn now (nobody held it, it expired, or it was
 * `holder`'s already), else 0.
 * Errors: none raised.
 */
export const CLAIM_TURN = `
local now = tonumber(ARGV[1])
local v = redis.call('HMGET', KEYS[1], 'h', 'u')
if v[1] and v[1] ~= ARGV[2] and tonumber(v[2] or '0') > now then return 0 end
redis.call('HSET', KEYS[1], 'h', ARGV[2], 'u', now + tonumber(ARGV[3]))
return 1
`;
