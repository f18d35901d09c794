/**
 * `wake(key)`: bump the stream's wake key (a stream capped at one entry). Every
 * write that may create work for a group calls it; `wait()` blocks on the key
 * with XREAD (../../wake-listener.ts).
 */
import { include } from '../loader';

export const WAKE = include(
  'wake',
  {},
  `
-- Bump the stream's wake key: consumers blocked in wait() read the new entry and fetch.
local function wake(key)
  redis.call('XADD', key, 'MAXLEN', '1', '*', 'w', '1')
end
`,
);
