// Coordination's statement: the turn of a background job (claimTurn). Its
// release is one of the statements shared with SQLite (sql/group-removal.ts).
import type { TableNames } from '../../sql/names';
import { returning } from '../../sql/statement';

/** A claimed turn (claimTurn): a row when `holder` holds the job now. */
export interface DbTurn {
  holder: string;
}

export function coordinationPlans(t: TableNames) {
  return {
    /**
     * A job's turn ($1 job, $2 holder, $3 now, $4 ttl): taken when nobody holds
     * it, its turn ended, or $2 holds it already (then extended). One statement,
     * so two processes can never both get it: the row lock of the upsert orders
     * them, and the second sees the first's turn.
     */
    claimTurn: returning<DbTurn>(`
      INSERT INTO ${t.jobs} AS j (name, holder, until_ms) VALUES ($1, $2, $3::bigint + $4::bigint)
      ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, until_ms = EXCLUDED.until_ms
      WHERE j.holder = EXCLUDED.holder OR j.until_ms <= $3::bigint
      RETURNING j.holder`),
  };
}
