// The pause section's statements (../pause.ts; docs/adr/046-pausing-a-group.md):
// a pause written to the group's row (its details) and its partition rows (the
// claim's gate, `paused_to`), lifted again, and the test a claim that came back
// empty makes. The caller holds the group's partition row locks (lockGroupPartitions)
// before pausing or resuming, as claims take them: in partition order, first.
import type { TableNames } from '../../sql/names';
import type { DbGroup } from '../../sql/rows';
import { returning } from '../../sql/statement';

export function pausePlans(t: TableNames) {
  return {
    /**
     * Pause: $3 paused_at, $4 paused_until (null: until resumed), $5 reason, $6 by,
     * $7 the gate's paused_to ($4, or the sentinel). One statement, both places.
     * No row: no such group, nothing changed.
     */
    pause: returning<{ name: string }>(`
      WITH grp AS (
        UPDATE ${t.groups} SET paused_at = $3::bigint, paused_until = $4::bigint, pause_reason = $5::text, paused_by = $6::text
        WHERE stream = $1 AND name = $2
        RETURNING name
      ), gate AS (
        UPDATE ${t.groupPartitions} SET paused_to = $7::bigint
        WHERE stream = $1 AND group_name = $2 AND EXISTS (SELECT 1 FROM grp)
      )
      SELECT name FROM grp`),

    /**
     * Resume: clear both places, and NOTIFY ($4 the channel) the stream's
     * waiting consumers, as an append does, when a pause was holding the group at
     * $3 (not past its until). The row is the group's pause as it was (this
     * statement's snapshot); no row: no such group.
     */
    resume: returning<Pick<DbGroup, 'paused_at' | 'paused_until'>>(`
      WITH before AS (
        SELECT paused_at, paused_until FROM ${t.groups} WHERE stream = $1 AND name = $2
      ), cleared AS (
        UPDATE ${t.groups} SET paused_at = NULL, paused_until = NULL, pause_reason = NULL, paused_by = NULL
        WHERE stream = $1 AND name = $2 AND paused_at IS NOT NULL
      ), opened AS (
        UPDATE ${t.groupPartitions} SET paused_to = NULL
        WHERE stream = $1 AND group_name = $2 AND paused_to IS NOT NULL
      ), wake AS (
        SELECT pg_notify($4, $1) FROM before
        WHERE paused_at IS NOT NULL AND (paused_until IS NULL OR paused_until > $3::bigint)
      )
      SELECT paused_at, paused_until, (SELECT count(*) FROM wake) AS woke FROM before`),

    /**
     * Whether a partition of $3 is held by the gate at $4: run only when a claim of
     * a group without partition ordering came back empty, so a claim that finds
     * events pays nothing for it.
     */
    paused: returning<{ paused: boolean; flow: boolean }>(`
      SELECT EXISTS (
        SELECT 1 FROM ${t.groupPartitions}
        WHERE stream = $1 AND group_name = $2 AND partition = ANY($3::int[]) AND paused_to > $4::bigint
      ) AS paused, EXISTS (
        SELECT 1 FROM ${t.groupPartitions}
        WHERE stream = $1 AND group_name = $2 AND partition = ANY($3::int[]) AND flow
      ) AS flow`),
  };
}
