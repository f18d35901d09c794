/**
 * releaseTurn: forget a named turn (claimTurn) if `holder` holds it, expired or
 * not, so no key of it is left.
 *
 * KEYS[1]  turn  HASH  `h` holder, `u` until (deleted when `h` is the holder)
 *
 * ARGV[1]  holder  who asks
 *
 * Returns 1 when the turn was forgotten, 0 when another holder has it or there is none.
 * Errors: none raised.
 */
export const RELEASE_TURN = `
if redis.call('HGET', KEYS[1], 'h') ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
return 1
`;
