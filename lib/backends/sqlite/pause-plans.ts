// The pause section's statements (pause.ts; docs/adr/046-pausing-a-group.md).
import type { TableNames } from '../sql/names';
import type { DbGroup } from '../sql/rows';
import { returning } from '../sql/statement';

export function sqlitePausePlans(t: TableNames) {
  return {
    /** The pause's details on the group's row: paused_at, paused_until, pause_reason, paused_by. No change: no such group. */
    setPause: `
      UPDATE ${t.groups} SET paused_at = ?, paused_until = ?, pause_reason = ?, paused_by = ? WHERE stream = ? AND name = ?`,
    /** The claim's gate on every partition row of the group: claims skip a row while its paused_to is after now. */
    closeGate: `UPDATE ${t.groupPartitions} SET paused_to = ? WHERE stream = ? AND group_name = ?`,
    /** The pause as the group's row holds it (resumeGroup tells from it whether one was holding). */
    pauseOf: returning<Pick<DbGroup, 'paused_at' | 'paused_until'>>(`
      SELECT paused_at, paused_until FROM ${t.groups} WHERE stream = ? AND name = ?`),
    clearPause: `
      UPDATE ${t.groups} SET paused_at = NULL, paused_until = NULL, pause_reason = NULL, paused_by = NULL WHERE stream = ? AND name = ?`,
    openGate: `UPDATE ${t.groupPartitions} SET paused_to = NULL WHERE stream = ? AND group_name = ? AND paused_to IS NOT NULL`,
  };
}
