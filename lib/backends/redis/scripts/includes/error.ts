/**
 * `rheoError(code)`: the error reply of a script, `RHEO:<code>[:<detail>]`. The
 * backend's `mapRedisError` (../../errors.ts) turns it into a RheoError of that code.
 */
import { include } from '../loader';

export const ERROR = include(
  'error',
  {},
  `
-- An error the caller sees as a RheoError of this code: RHEO:<code>[:<detail>].
local function rheoError(code)
  return redis.error_reply('RHEO:' .. code)
end
`,
);
