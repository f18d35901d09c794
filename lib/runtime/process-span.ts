// OpenTelemetry on the consumer side (docs/observability.md, ADR 021): each
// handler run is a `process <stream>` span (kind CONSUMER) whose parent is the
// trace context the event carries in its metadata (written by the producer's
// `send <stream>` span, core/otel.ts), with a link to it as the messaging
// conventions ask. The handler runs with the span active, so the spans it starts
// (an HTTP call, a query) nest under it.
import type { Attributes, Context, Link, Span, SpanContext } from '@opentelemetry/api';
import { RheoError } from '../core/errors';
import {
  MESSAGING_CLIENT_ID,
  MESSAGING_CONSUMER_GROUP,
  MESSAGING_DESTINATION,
  MESSAGING_MESSAGE_ID,
  MESSAGING_OPERATION_NAME,
  MESSAGING_OPERATION_TYPE,
  MESSAGING_PARTITION,
  MESSAGING_SYSTEM,
  RHEO_ATTEMPT,
  RHEO_OUTCOME,
  SYSTEM,
} from '../core/otel-attributes';
import { recordFailure, type Tracing, tracing } from '../core/otel-api';
import { parseTraceparent, TRACEPARENT, TRACESTATE } from '../core/otel-w3c';
import { type Outcome, outcomeOfError, RheoReject, RheoRetry } from '../core/outcomes';
import type { EventMetadata, Lease } from '../core/types';
import { outcomeOfRun } from './transactional';

/** `rheo.outcome`: the handler's decision (a nack is a retry, whether or not the store then dead-letters it). */
type SpanOutcome = 'ack' | 'retry' | 'reject';

/**
 * Runs one handler inside a `process <stream>` span (kind CONSUMER) whose parent
 * is the context the event carries. With `@opentelemetry/api` absent or no
 * tracer provider registered, it is `run()` and nothing else.
 */
export function processSpan(lease: Lease, group: string, run: () => Promise<Outcome | void>): Promise<Outcome | void> {
  const t = tracing();
  return t === undefined ? run() : traceProcess(t, lease, group, run);
}

function traceProcess(t: Tracing, lease: Lease, group: string, run: () => Promise<Outcome | void>): Promise<Outcome | void> {
  const { api } = t;
  const carried = carriedContext(t, lease.event.metadata);
  // The base is ROOT, not the active context: what is active in the fetch loop is
  // whatever happened to be when the Consumer started, not this event's history.
  const parent: Context = carried ? api.trace.setSpanContext(api.ROOT_CONTEXT, carried) : api.ROOT_CONTEXT;
  const links: Link[] = carried ? [{ context: carried }] : [];
  const span = t.tracer.startSpan(
    `process ${lease.stream}`,
    { kind: api.SpanKind.CONSUMER, attributes: processAttributes(lease, group), links },
    parent,
  );
  let promise: Promise<Outcome | void>;
  try {
    promise = api.context.with(api.trace.setSpan(parent, span), run);
  } catch (err) {
    promise = Promise.reject(err);
  }
  return promise.then(
    (value) => {
      // An ack the run wrote itself (transactional) is an ack; one that failed, a retry.
      const outcome = outcomeOfRun(value);
      if (outcome instanceof RheoError) finish(t, span, 'retry', outcome.message, outcome);
      else finish(t, span, spanOutcome(outcome), outcome.kind === 'ack' ? undefined : outcome.reason);
      return value;
    },
    (err: unknown) => {
      const outcome = outcomeOfError(err);
      // RheoReject and RheoRetry are the handler's decisions, not exceptions to record.
      const decided = err instanceof RheoReject || err instanceof RheoRetry;
      finish(t, span, spanOutcome(outcome), outcome.kind === 'ack' ? undefined : outcome.reason, decided ? undefined : err);
      throw err;
    },
  );
}

function spanOutcome(outcome: Outcome): SpanOutcome {
  return outcome.kind === 'nack' ? 'retry' : outcome.kind;
}

/** Sets `rheo.outcome`; anything but an ack is status ERROR with the reason (and the exception, for a failure). */
function finish(t: Tracing, span: Span, outcome: SpanOutcome, reason: string | undefined, error?: unknown): void {
  span.setAttribute(RHEO_OUTCOME, outcome);
  if (error !== undefined) recordFailure(t, span, error, reason ?? outcome);
  else if (outcome !== 'ack') span.setStatus({ code: t.api.SpanStatusCode.ERROR, message: reason ?? outcome });
  span.end();
}

function processAttributes(lease: Lease, group: string): Attributes {
  return {
    [MESSAGING_SYSTEM]: SYSTEM,
    [MESSAGING_DESTINATION]: lease.stream,
    [MESSAGING_OPERATION_TYPE]: 'process',
    [MESSAGING_OPERATION_NAME]: 'process',
    [MESSAGING_CONSUMER_GROUP]: group,
    [MESSAGING_CLIENT_ID]: lease.consumerId,
    [MESSAGING_MESSAGE_ID]: lease.event.id,
    [MESSAGING_PARTITION]: String(lease.event.partition),
    [RHEO_ATTEMPT]: lease.attempt,
  };
}

/** The remote span context in the event's `traceparent` / `tracestate`, or undefined when absent or malformed. */
function carriedContext(t: Tracing, metadata: EventMetadata): SpanContext | undefined {
  const parent = parseTraceparent(metadata[TRACEPARENT]);
  if (parent === undefined) return undefined;
  const state = metadata[TRACESTATE];
  const sc: SpanContext = { ...parent, isRemote: true };
  if (typeof state === 'string' && state !== '') sc.traceState = t.api.createTraceState(state);
  return sc;
}
