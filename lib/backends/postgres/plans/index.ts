// Every SQL statement of the PostgreSQL backend, in plan modules by contract
// section (pg-boss's plans.js style): registry.ts, log.ts, delivery.ts, recovery.ts,
// retention.ts, coordination.ts, group-settings.ts, pause.ts, waiting.ts and flow.ts; the query compiler is in ../query-plan.ts,
// the DDL in ../schema.ts. Values are always bound parameters; the only spliced
// text is the table identifiers, built from a validated, quoted schema name
// (sql/names.ts).
//
// Storage model (schema version 2, shared with SQLite, see docs/sql.md):
// - rheo_partitions.hwm is the last sequence allocated in a partition (its high
//   watermark); trimmed_to the trim point (every event at or below it is gone, or
//   going: see trim); ts_max the highest timestamp appended so far;
// - rheo_group_partitions.cursor is the first sequence not yet offered to the group:
//   events from the cursor up need no per-group row (lazy materialisation), so an
//   append costs the same whatever the number of groups. The cursor in effect is
//   GREATEST(cursor, trimmed_to + 1): a group never reaches below the trim point;
// - rheo_deliveries holds one row per offered event of a group that is still in
//   flight: state 'available' (due_at = when it may be claimed) or 'leased'
//   (due_at = lease expiry), or, in a group with key places, 'waiting' for its
//   key (schema version 6, docs/adr/049-flow-control.md). An ack deletes the row; a dead letter moves it to
//   rheo_dead_letters. So the table stays as small as the work in flight, and the
//   hot path never reads a dead letter;
// - the frontier is therefore derived, never stored: the sequence before the first
//   delivery above the trim point, or the cursor in effect - 1 when there is none.
//   No settle ever has to walk it, and concurrent settles from many processes
//   cannot leave it behind.
import { groupRemovalPlans } from '../../sql/group-removal';
import type { TableNames } from '../../sql/names';
import { coordinationPlans } from './coordination';
import { deliveryPlans } from './delivery';
import { flowPlans } from './flow';
import { groupSettingsPlans } from './group-settings';
import { logPlans } from './log';
import { pausePlans } from './pause';
import { recoveryPlans } from './recovery';
import { registryPlans } from './registry';
import { retentionPlans } from './retention';
import { waitingPlans } from './waiting';

/** The statements of every section, on the tables of one schema. */
export function pgPlans(t: TableNames) {
  return {
    ping: `SELECT 1`,
    registry: registryPlans(t),
    log: logPlans(t),
    delivery: deliveryPlans(t),
    flow: flowPlans(t),
    recovery: recoveryPlans(t),
    retention: retentionPlans(t),
    coordination: coordinationPlans(t),
    groupSettings: groupSettingsPlans(t),
    pause: pausePlans(t),
    waiting: waitingPlans(t),
    /** deleteGroup's statements and releaseTurn's, shared with SQLite. */
    removal: groupRemovalPlans(t, 'postgres'),
  };
}

/** What {@link pgPlans} builds: the context's `plans`. */
export type PgPlans = ReturnType<typeof pgPlans>;
