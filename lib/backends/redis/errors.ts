import { RHEO_ERROR_CODES, RheoError, RheoErrorCode } from '../../core/errors';

/** Whether the failed call may have written: a timed-out write is `ambiguous`, a timed-out read is not. */
export type CallKind = 'read' | 'write';

/**
 * Redis replies that mean "the server cannot serve right now", not "your command is wrong".
 * MOVED and ASK reach the backend only when ioredis gave up following them (too many
 * redirections, a pipeline whose commands were answered differently): the command did
 * not run on the node that answered, so it is safe to try again.
 */
const UNAVAILABLE_REPLIES = /^(LOADING|READONLY|MASTERDOWN|CLUSTERDOWN|TRYAGAIN|BUSY|NOREPLICAS|MISCONF|MOVED|ASK)\b/;

/** `RHEO:<code>[:<detail>]`, the error replies of our scripts (scripts/includes/error.ts). */
const SCRIPT_ERROR = /RHEO:([a-z_]+)(?::([A-Za-z0-9.:_]+))?/;

/**
 * The detail a script put after its error code (`RHEO:failed:log:0:17` -> `log:0:17`), read from
 * the cause of a mapped error; undefined for anything else.
 */
export function scriptDetail(err: RheoError): string | undefined {
  const cause = err.cause as { message?: unknown } | undefined;
  const m = typeof cause?.message === 'string' ? SCRIPT_ERROR.exec(cause.message) : null;
  return m?.[2];
}

/** Messages and codes ioredis and Node use for a connection that is down, refused or closed. */
const CONNECTION_DOWN =
  /Connection is closed|Stream isn't writeable|max retries per request|ECONNREFUSED|ECONNRESET|ETIMEDOUT|EHOSTUNREACH|ENOTFOUND|EPIPE|connect ETIMEDOUT|Socket closed|Redis is already connecting|None of startup nodes is available|Cluster isn't ready|Too many Cluster redirections|Failed to refresh slots cache|Cluster is ended/i;

/**
 * Where a backend's connection goes and why it last failed: ioredis answers a call on a
 * connection that never came up with `Connection is closed.`, the refusal itself
 * (`connect ECONNREFUSED 127.0.0.1:6399`) reaching only its `error` event.
 */
export interface RedisLink {
  /** `at host:port` or `cluster host:port, ...`: how an outage names the server. */
  where(): string;
  /** The connection's last error while it is down, else undefined. */
  lastError(): Error | undefined;
}

/** `redis at host:port is unavailable: <message> (<the connection's error>)`. */
function unavailable(message: string, err: unknown, link: RedisLink | undefined): RheoError {
  const last = link?.lastError()?.message;
  const cause = last && last !== message ? ` (${last})` : '';
  return new RheoError('backend_unavailable', `redis ${link ? `${link.where()} ` : ''}is unavailable: ${message}${cause}`, { cause: err });
}

/**
 * Map anything ioredis (or a script) throws to a RheoError:
 * - `RHEO:<code>[:<detail>]` raised by our scripts -> that code (for `invalid_argument`, the detail is the field);
 * - connection refused / closed / not writeable / retries exhausted -> `backend_unavailable`, naming the
 *   server and the connection's last error when `link` is given;
 * - "Command timed out" -> `ambiguous` for a write (it may have happened), `backend_unavailable` for a read;
 * - a cluster that cannot serve the key now (no node reachable, redirections exhausted, a
 *   MOVED/ASK/TRYAGAIN/CLUSTERDOWN ioredis stopped following) -> `backend_unavailable`;
 * - a server that cannot serve (LOADING, READONLY, ...) -> `backend_unavailable`;
 * - anything else -> `failed`.
 */
export function mapRedisError(err: unknown, kind: CallKind, link?: RedisLink): RheoError {
  if (err instanceof RheoError) return err;
  const e = err as { message?: unknown; code?: unknown; name?: unknown } | null;
  const message = typeof e?.message === 'string' ? e.message : String(err);
  const script = SCRIPT_ERROR.exec(message);
  if (script && (RHEO_ERROR_CODES as readonly string[]).includes(script[1])) {
    const code = script[1] as RheoErrorCode;
    const detail = script[2];
    if (code === 'invalid_argument' && detail)
      return new RheoError(code, `${detail} is not known to the group`, { cause: err, field: detail });
    return new RheoError(code, `redis: ${code.replace(/_/g, ' ')}${detail ? ` (${detail})` : ''}`, { cause: err });
  }
  if (/Command timed out/i.test(message)) {
    return kind === 'write'
      ? new RheoError('ambiguous', `redis: the command timed out; it may or may not have been applied (${message})`, { cause: err })
      : new RheoError('backend_unavailable', `redis: the command timed out (${message})`, { cause: err });
  }
  const code = typeof e?.code === 'string' ? e.code : '';
  if (e?.name === 'MaxRetriesPerRequestError' || CONNECTION_DOWN.test(message) || CONNECTION_DOWN.test(code)) {
    return unavailable(message, err, link);
  }
  if (UNAVAILABLE_REPLIES.test(message)) return new RheoError('backend_unavailable', `redis cannot serve: ${message}`, { cause: err });
  return new RheoError('failed', `redis: ${message}`, { cause: err });
}
