import { type ArgumentsHost, Catch, type ExceptionFilter, Inject, Logger, Optional } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { type Observable, throwError } from 'rxjs';
import { RheoError, type RheoErrorCode } from '../core/errors';

/**
 * The HTTP status {@link RheoHttpExceptionFilter} answers for each error code
 * (docs/adr/016): bad input 4xx, a store that did not answer 503, a write whose
 * outcome is unknown (`ambiguous`) or an unexpected failure 500.
 */
export const RHEO_ERROR_HTTP_STATUS: Readonly<Record<RheoErrorCode, number>> = Object.freeze({
  invalid_argument: 400,
  stream_not_found: 404,
  group_not_found: 404,
  already_exists: 409,
  stale_lease: 409,
  receipt_mismatch: 409,
  lease_held: 409,
  payload_too_large: 413,
  confirm_required: 428,
  backend_unavailable: 503,
  ambiguous: 500,
  failed: 500,
});

/**
 * What a 5xx answer says instead of the error's own message, which may carry
 * driver details (hosts, SQL); the full error is logged.
 */
const SERVER_ERROR_MESSAGES: Partial<Record<RheoErrorCode, string>> = {
  backend_unavailable: 'The event store is unavailable',
  ambiguous: 'The event store did not confirm the write; it may or may not have been applied',
  failed: 'Internal server error',
};

/** The body {@link RheoHttpExceptionFilter} answers with. */
export interface RheoHttpErrorBody {
  /** The HTTP status, as in the status line. */
  statusCode: number;
  /** The `RheoError` code: stable, for clients to branch on. */
  error: RheoErrorCode;
  /** The error's message for a 4xx; a generic sentence for a 5xx (the details are logged). */
  message: string;
  /** The input field a 4xx is about, when the error names one. */
  field?: string;
}

/** Just enough of an Express response or a Fastify reply to answer without the adapter. */
interface DuckResponse {
  headersSent?: boolean;
  sent?: boolean;
  status?: (code: number) => { send: (body: unknown) => unknown };
  end?: () => unknown;
  raw?: { end?: () => unknown };
}

/**
 * Opt-in exception filter that answers a `RheoError` escaping an HTTP route with
 * the status its code means ({@link RHEO_ERROR_HTTP_STATUS}) and the body
 * `{ statusCode, error: code, message, field? }` instead of Nest's plain 500.
 *
 * Register it globally, either way:
 * ```ts
 * app.useGlobalFilters(new RheoHttpExceptionFilter());
 * // or, in a module: providers: [{ provide: APP_FILTER, useClass: RheoHttpExceptionFilter }]
 * ```
 * It answers through Nest's HTTP adapter when it has one (registered as
 * `APP_FILTER`, or constructed with `app.get(HttpAdapterHost)`), else through the
 * response's own `status().send()` (Express and Fastify both have it).
 *
 * Outside HTTP it changes nothing: in a consumer (RPC context, with
 * `inheritAppConfig: true`) the error is passed on unchanged, so the transport
 * settles the delivery exactly as without the filter. 5xx answers do not echo the
 * error's message (it may carry driver details); the error is logged instead.
 */
@Catch(RheoError)
export class RheoHttpExceptionFilter implements ExceptionFilter<RheoError> {
  private static readonly logger = new Logger('RheoHttpExceptionFilter');

  /** @param adapterHost Nest's HTTP adapter host; injected when registered as `APP_FILTER`. */
  constructor(@Optional() @Inject(HttpAdapterHost) private readonly adapterHost?: HttpAdapterHost) {}

  /** Answer the HTTP request; in any other context, pass the error on unchanged. */
  catch(exception: RheoError, host: ArgumentsHost): void | Observable<never> {
    const type = host.getType<string>();
    if (type === 'rpc') return throwError(() => exception);
    if (type !== 'http') throw exception;
    const body = RheoHttpExceptionFilter.bodyOf(exception);
    if (body.statusCode >= 500) RheoHttpExceptionFilter.logger.error(exception.message, exception.stack);
    this.reply(host.switchToHttp().getResponse(), body);
  }

  /** The status and body for `error`. */
  static bodyOf(error: RheoError): RheoHttpErrorBody {
    const statusCode = RHEO_ERROR_HTTP_STATUS[error.code] ?? 500;
    if (statusCode >= 500) return { statusCode, error: error.code, message: SERVER_ERROR_MESSAGES[error.code] ?? 'Internal server error' };
    const body: RheoHttpErrorBody = { statusCode, error: error.code, message: error.message };
    if (error.field !== undefined) body.field = error.field;
    return body;
  }

  private reply(response: unknown, body: RheoHttpErrorBody): void {
    const adapter = this.adapterHost?.httpAdapter;
    if (adapter) {
      if (adapter.isHeadersSent(response)) adapter.end(response);
      else adapter.reply(response, body, body.statusCode);
      return;
    }
    const res = response as DuckResponse;
    if (res.headersSent === true || res.sent === true) {
      if (typeof res.raw?.end === 'function') res.raw.end();
      else if (typeof res.end === 'function') res.end();
      return;
    }
    if (typeof res.status !== 'function') {
      throw new RheoError(
        'failed',
        'RheoHttpExceptionFilter: this HTTP adapter has no response.status(); construct the filter with app.get(HttpAdapterHost)',
        {
          cause: body,
        },
      );
    }
    res.status(body.statusCode).send(body);
  }
}
