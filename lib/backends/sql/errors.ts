import { RheoError } from '../../core/errors';

/** What the failed statement was doing: it decides whether a lost connection is `ambiguous`. */
export type StatementKind = 'read' | 'write';

const PG_UNAVAILABLE_STATES = new Set(['57P01', '57P02', '57P03', '53300', '3D000', '28000', '28P01']);
const NODE_UNAVAILABLE = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'ETIMEDOUT']);
const SQLITE_UNAVAILABLE = new Set(['SQLITE_BUSY', 'SQLITE_LOCKED', 'SQLITE_CANTOPEN', 'SQLITE_IOERR', 'SQLITE_FULL', 'SQLITE_READONLY']);

function driverError(err: unknown): Record<string, unknown> {
  const e = (err ?? {}) as Record<string, unknown>;
  // TypeORM wraps driver errors in QueryFailedError.driverError.
  return (e.driverError as Record<string, unknown>) ?? e;
}

/**
 * Map a driver's (or TypeORM's) exception to the portable vocabulary, so that no
 * driver exception leaves the backend:
 * - cannot reach the server, server shutting down, connection refused -> `backend_unavailable`;
 * - statement timeout, or the connection lost while a write was in flight -> `ambiguous`
 *   (the write may have committed);
 * - a unique violation -> `already_exists`;
 * - anything else -> `failed` (definitely not applied: the transaction rolled back).
 */
export function mapDriverError(err: unknown, kind: StatementKind, what: string): RheoError {
  if (err instanceof RheoError) return err;
  const d = driverError(err);
  const code = typeof d.code === 'string' ? d.code : '';
  const message = err instanceof Error ? err.message : String(err);
  const text = `${what}: ${message}`;
  const lost =
    /Connection terminated|connection .*(lost|closed|ended)|Client has encountered a connection error|socket hang up|ECONNRESET|EPIPE/i.test(
      message,
    ) ||
    code === 'ECONNRESET' ||
    code === 'EPIPE';
  if (code === '57014') return new RheoError('ambiguous', `${text} (statement timeout: the write may have happened)`, { cause: err });
  if (lost) return new RheoError(kind === 'write' ? 'ambiguous' : 'backend_unavailable', text, { cause: err });
  if (code.startsWith('08') || PG_UNAVAILABLE_STATES.has(code) || NODE_UNAVAILABLE.has(code))
    return new RheoError('backend_unavailable', text, { cause: err });
  // SQLite's extended codes name their primary one first: SQLITE_BUSY_RECOVERY, SQLITE_IOERR_WRITE...
  if (SQLITE_UNAVAILABLE.has(/^SQLITE_[A-Z]+/.exec(code)?.[0] ?? '')) return new RheoError('backend_unavailable', text, { cause: err });
  if (
    /not (yet )?(established|connected|open)|pool .*(ended|destroyed)|Cannot use a pool after calling end|database connection is not open|DataSource is not initialized/i.test(
      message,
    )
  ) {
    return new RheoError('backend_unavailable', text, { cause: err });
  }
  if (code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY')
    return new RheoError('already_exists', text, { cause: err });
  return new RheoError('failed', text, { cause: err });
}

/** True for a unique violation (PostgreSQL 23505, SQLite UNIQUE/PRIMARY KEY constraint). */
export function isUniqueViolation(err: unknown): boolean {
  const code = driverError(err).code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}
