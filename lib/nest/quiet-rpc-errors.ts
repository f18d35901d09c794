// Nest's fallback RPC exception filter logs every error no user filter caught at
// ERROR, stack included (BaseRpcExceptionFilter.handleUnknownError). For a Rheo
// delivery that error is an ordinary retry or dead letter, which RheoServer logs
// as one WARN line (its stack at DEBUG): the filter's log of exactly those errors
// is dropped here. Every other error, of every other transport, is logged as before.
import { Logger } from '@nestjs/common';
import { BaseRpcExceptionFilter } from '@nestjs/microservices';

/** Errors a Rheo delivery threw, recorded by RheoOutcomeInterceptor (weakly: nothing is kept alive). */
const reported = new WeakSet<object>();

/** The transport reports `err` itself: Nest's fallback filter need not log it. */
export function reportedByRheo(err: unknown): void {
  if (typeof err === 'object' && err !== null) reported.add(err);
}

/** The fallback filter's logger, minus the errors RheoServer reports. */
class RheoAwareLogger extends Logger {
  constructor(private readonly inner: Logger) {
    super('RpcExceptionsHandler');
  }

  override error(message: unknown, ...rest: unknown[]): void {
    if (typeof message === 'object' && message !== null && reported.has(message)) return;
    this.inner.error(message, ...(rest as []));
  }
}

/** Install once per loaded copy of @nestjs/microservices (idempotent). */
export function quietReportedRpcErrors(): void {
  const filter = BaseRpcExceptionFilter as unknown as { logger?: Logger };
  if (!filter.logger || filter.logger instanceof RheoAwareLogger) return;
  filter.logger = new RheoAwareLogger(filter.logger);
}
