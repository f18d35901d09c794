/**
 * `chunked(cmd, key, list, step)`: `redis.call(cmd, key, ...list)` in calls of at
 * most `step` values, since Lua cannot unpack more than a few thousand at once.
 */
import { include } from '../loader';

export const CHUNKED = include(
  'chunked',
  {},
  `
-- redis.call(cmd, key, ...list) in chunks: Lua cannot unpack more than a few thousand values at once.
-- step must be even so that pairs (field value, score member) stay together.
local function chunked(cmd, key, list, step)
  for i = 1, #list, step do
    redis.call(cmd, key, unpack(list, i, math.min(i + step - 1, #list)))
  end
end
`,
);
