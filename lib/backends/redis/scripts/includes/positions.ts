/**
 * Frontier and cursor of each partition a call touches, read once and written
 * once: `position(cfg, p)` -> `{ f, c, f0 }` (HMGET `f:<p>`, `c:<p>` on first use;
 * the caller moves `f`), `saveFrontiers(cfg)` writes every frontier that moved in
 * one HSET (chunked).
 */
import { include } from '../loader';

export const POSITIONS = include(
  'positions',
  { needs: ['chunked'] },
  `
-- Frontier and cursor per partition, read once, written once at the end.
local positions = {}
local function position(cfg, p)
  local s = positions[p]
  if not s then
    local v = redis.call('HMGET', cfg, 'f:' .. p, 'c:' .. p)
    s = { f = tonumber(v[1]), c = tonumber(v[2]) }
    s.f0 = s.f
    positions[p] = s
  end
  return s
end
local function saveFrontiers(cfg)
  local frontiers = {}
  for p, s in pairs(positions) do
    if s.f ~= s.f0 then
      frontiers[#frontiers + 1] = 'f:' .. p
      frontiers[#frontiers + 1] = s.f
    end
  end
  if #frontiers > 0 then chunked('HSET', cfg, frontiers, 1000) end
end
`,
);
