// The group-settings section's statement: a group's settings changed in place
// (docs/adr/047-changing-a-group-in-place.md). The claim and the settle read them
// from the group's row as they decide (plans/delivery.ts), so nothing else changes.
import type { TableNames } from '../../sql/names';
import type { DbGroup } from '../../sql/rows';
import { returning } from '../../sql/statement';

export function groupSettingsPlans(t: TableNames) {
  return {
    /** $3..$6: max_attempts and the three retry columns; no row when there is no such group. */
    updateGroup: returning<DbGroup>(`
      UPDATE ${t.groups} SET max_attempts = $3, retry_initial_ms = $4, retry_factor = $5, retry_max_ms = $6
      WHERE stream = $1 AND name = $2
      RETURNING *`),
  };
}
