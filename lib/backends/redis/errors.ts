import { RHEO_ERROR_CODES, RheoError, RheoErrorCode } from '../../core/errors';

/** Whether the failed call may have written: a timed-out write is `ambiguous`, a timed-out read is not. */
export type CallKind = 'read' | 'write';

/** Redis replies that mean "the server cannot serve right now", not "your command is wrong". */
const UNAVAILABLE_REPLIES = /^(LOADING|READONLY|MASTERDOWN|CLUSTERDOWN|TRYAGAIN|BUSY|NOREPLICAS|MISCONF)\b/;

/** Messages and codes ioredis and Node use for a connection that is down, refused or closed. */
const CONNECTION_DOWN =
  /Connection is closed|Stream isn't writeable|max retries per request|ECONNREFUSED|ECONNRESET|ETIMEDOUT|EHOSTUNREACH|ENOTFOUND|EPIPE|connect ETIMEDOUT|Socket closed|Redis is already connecting/i;

/**
 * Map anything ioredis (or a script) throws to a RheoError:
 * - `RHEO:<code>[:<field>]` raised by our scripts -> that code;
 * - connection refused / closed / not writeable / retries exhausted -> `backend_unavailable`;
 * - "Command timed out" -> `ambiguous` for a write (it may have happened), `backend_unavailable` for a read;
 * - a server that cannot serve (LOADING, READONLY, ...) -> `backend_unavailable`;
 * - anything else -> `failed`.
 */
export function mapRedisError(err: unknown, kind: CallKind): RheoError {
  if (err instanceof RheoError) return err;
  const e = err as { message?: unknown; code?: unknown; name?: unknown } | null;
  const message = typeof e?.message === 'string' ? e.message : String(err);
  const script = /RHEO:([a-z_]+)(?::([A-Za-z.]+))?/.exec(message);
  if (script && (RHEO_ERROR_CODES as readonly string[]).includes(script[1])) {
    const code = script[1] as RheoErrorCode;
    const field = script[2];
    const text = field ? `${field} is not known to the group` : `redis: ${code.replace(/_/g, ' ')}`;
    return new RheoError(code, text, { cause: err, ...(field ? { field } : {}) });
  }
  if (/Command timed out/i.test(message)) {
    return kind === 'write'
      ? new RheoError('ambiguous', `redis: the command timed out; it may or may not have been applied (${message})`, { cause: err })
      : new RheoError('backend_unavailable', `redis: the command timed out (${message})`, { cause: err });
  }
  const code = typeof e?.code === 'string' ? e.code : '';
  if (e?.name === 'MaxRetriesPerRequestError' || CONNECTION_DOWN.test(message) || CONNECTION_DOWN.test(code)) {
    return new RheoError('backend_unavailable', `redis is unavailable: ${message}`, { cause: err });
  }
  if (UNAVAILABLE_REPLIES.test(message)) return new RheoError('backend_unavailable', `redis cannot serve: ${message}`, { cause: err });
  return new RheoError('failed', `redis: ${message}`, { cause: err });
}
