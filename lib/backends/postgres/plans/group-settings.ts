// The group-settings section's statement: a group's settings changed in place
// (docs/adr/047-changing-a-group-in-place.md). The claim and the settle read them
// from the group's row as they decide (plans/delivery.ts), so nothing else changes.
import type { TableNames } from '../../sql/names';
import type { DbGroup } from '../../sql/rows';
import { returning } from '../../sql/statement';
import { HAS_LIMITS } from './registry';

export function groupSettingsPlans(t: TableNames) {
  return {
    /**
     * $3..$6: max_attempts and the three retry columns, $7..$10 the flow limits (rows.ts flowColumns); no row
     * when there is no such group. `old_key_concurrency`: the number it replaced (more places are handed on).
     */
    updateGroup: returning<DbGroup & { old_key_concurrency: number | null }>(`
      WITH updated AS (
        UPDATE ${t.groups} g SET max_attempts = $3, retry_initial_ms = $4, retry_factor = $5, retry_max_ms = $6,
               key_concurrency = $7, group_concurrency = $8, rate_max = $9, rate_per_ms = $10
        FROM (SELECT key_concurrency FROM ${t.groups} WHERE stream = $1 AND name = $2 FOR UPDATE) old
        WHERE g.stream = $1 AND g.name = $2
        RETURNING g.*, old.key_concurrency AS old_key_concurrency
      ), gate AS (
        -- The claim's gate (plans/claim.ts): written only when it changes, so a change of maxAttempts locks no partition.
        UPDATE ${t.groupPartitions} gp SET flow = ${HAS_LIMITS('u')}
        FROM updated u WHERE gp.stream = $1 AND gp.group_name = $2 AND gp.flow <> ${HAS_LIMITS('u')}
      )
      SELECT * FROM updated`),
  };
}
