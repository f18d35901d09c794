// The group-settings section's statements (group-settings.ts).
import type { TableNames } from '../sql/names';
import type { DbGroup } from '../sql/rows';
import { returning } from '../sql/statement';

export function sqliteGroupSettingsPlans(t: TableNames) {
  return {
    /** A group's settings replaced in place (the flow limits: flowColumns, sql/rows.ts); no row when there is no such group. */
    updateGroup: returning<DbGroup>(`
      UPDATE ${t.groups} SET max_attempts = ?, retry_initial_ms = ?, retry_factor = ?, retry_max_ms = ?,
                             key_concurrency = ?, group_concurrency = ?, rate_max = ?, rate_per_ms = ?
      WHERE stream = ? AND name = ? RETURNING *`),
    /** The settings a claim or a settle decides by, read in its own transaction (docs/adr/047-changing-a-group-in-place.md). */
    storedSettings: returning<Pick<DbGroup, 'max_attempts' | 'retry_initial_ms' | 'retry_factor' | 'retry_max_ms'>>(`
      SELECT max_attempts, retry_initial_ms, retry_factor, retry_max_ms FROM ${t.groups} WHERE stream = ? AND name = ?`),
  };
}
