// The one door to `@opentelemetry/api`, an optional peer (ADR 021): required on
// first use with a guard, never imported. Absent, or present with no tracer
// provider registered, `tracing()` answers undefined and the span hooks run the
// operation bare: no span object, no metadata rewrite.
import type * as OtelApi from '@opentelemetry/api';
import type { Tracer, TracerProvider } from '@opentelemetry/api';
import { loadOptionalPeer } from './optional-peer';

/** The instrumentation scope of every span nestjs-rheo starts. */
export const TRACER_NAME = 'nestjs-rheo';

/** The loaded API and the tracer of the provider registered now. */
export interface Tracing {
  api: typeof OtelApi;
  tracer: Tracer;
}

/** undefined: not tried yet; null: not installed (a package does not appear mid-process). */
let api: typeof OtelApi | null | undefined;
/** The API's no-op provider: what the global proxy delegates to until a provider is registered. */
let noop: TracerProvider | undefined;
/** The provider `current` was made for, compared by identity on every call. */
let seen: TracerProvider | undefined;
let current: Tracing | undefined;

/**
 * Where every copy of API 1.x keeps what was registered globally (its
 * `Symbol.for('opentelemetry.js.api.' + major)`). Only `trace.setGlobalTracerProvider`
 * sets `trace` there, and `trace.disable()` deletes it.
 */
const OTEL_GLOBALS = Symbol.for('opentelemetry.js.api.1');

function load(): typeof OtelApi | null {
  try {
    const loaded = loadOptionalPeer<typeof OtelApi>('@opentelemetry/api', 'OpenTelemetry tracing');
    // A fresh proxy's delegate is the API's shared no-op provider: the one
    // getDelegate() answers for until someone registers a real provider.
    noop = new loaded.ProxyTracerProvider().getDelegate();
    return loaded;
  } catch {
    return null;
  }
}

/**
 * The tracer to use now, or undefined when tracing is off. Cheap enough to call
 * on every append and handler run: a few property reads. Nothing is cached past
 * the provider's identity, because a provider may be registered after the first
 * append, and `trace.disable()` swaps the global proxy for a new one.
 */
export function tracing(): Tracing | undefined {
  if (api === undefined) api = load();
  if (api === null) return undefined;
  // No provider registered by any copy of the API: the no-op, without the API's version checks (once per handler run).
  if ((globalThis as { [OTEL_GLOBALS]?: { trace?: unknown } })[OTEL_GLOBALS]?.trace === undefined) return undefined;
  const provider = api.trace.getTracerProvider() as TracerProvider & { getDelegate?: () => TracerProvider };
  // The registered provider sits behind the global ProxyTracerProvider; duck-typed,
  // since an app may carry a second copy of the API whose classes are not ours.
  const real = typeof provider.getDelegate === 'function' ? provider.getDelegate() : provider;
  if (real === noop) return undefined;
  if (real !== seen || current === undefined) {
    seen = real;
    current = { api, tracer: real.getTracer(TRACER_NAME) };
  }
  return current;
}

/** What a failed operation records on its span: the exception, status ERROR, and `error.type` (a RheoError's code, else the error's name). */
export function recordFailure(t: Tracing, span: OtelApi.Span, err: unknown, message: string): void {
  if (err instanceof Error) span.recordException(err);
  else span.recordException(String(err));
  const code = (err as { code?: unknown } | null)?.code;
  const type = typeof code === 'string' ? code : err instanceof Error ? err.name : '_OTHER';
  span.setAttribute('error.type', type);
  span.setStatus({ code: t.api.SpanStatusCode.ERROR, message });
}
