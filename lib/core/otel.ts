// OpenTelemetry on the producer side (docs/observability.md, ADR 021): every
// append runs inside a `send <stream>` span (kind PRODUCER), and each event that
// does not already carry a `traceparent` gets that span's, so the consumer's
// `process <stream>` span (runtime/process-span.ts) joins the same trace, in
// whatever process it runs.
import type { Attributes, Span, SpanContext } from '@opentelemetry/api';
import type { NewEvent } from '../backends/backend';
import {
  MESSAGING_BATCH_COUNT,
  MESSAGING_DESTINATION,
  MESSAGING_MESSAGE_ID,
  MESSAGING_OPERATION_NAME,
  MESSAGING_OPERATION_TYPE,
  MESSAGING_PARTITION,
  MESSAGING_SYSTEM,
  SYSTEM,
} from './otel-attributes';
import { recordFailure, type Tracing, tracing } from './otel-api';
import { formatTraceparent, TRACEPARENT, TRACESTATE } from './otel-w3c';
import { reasonOf } from './outcomes';
import type { EventMetadata } from './types';

/**
 * Runs `append` inside a `send <stream>` span (kind PRODUCER) and stamps each
 * event's metadata with its trace context. With `@opentelemetry/api` absent or no
 * tracer provider registered, it is `append()` and nothing else.
 */
export function sendSpan<T>(stream: string, events: NewEvent[], append: () => Promise<T>): Promise<T> {
  const t = tracing();
  return t === undefined ? append() : traceSend(t, stream, events, append);
}

function traceSend<T>(t: Tracing, stream: string, events: NewEvent[], append: () => Promise<T>): Promise<T> {
  const { api } = t;
  const span = t.tracer.startSpan(`send ${stream}`, { kind: api.SpanKind.PRODUCER, attributes: sendAttributes(stream, events) });
  const sc = span.spanContext();
  // A tracer of a second, unregistered API copy hands out invalid contexts: nothing to carry.
  if (api.isSpanContextValid(sc)) stamp(events, sc);
  // The backend's own instrumented calls (pg, ioredis) nest under the send span.
  const ctx = api.trace.setSpan(api.context.active(), span);
  let promise: Promise<T>;
  try {
    promise = api.context.with(ctx, append);
  } catch (err) {
    fail(t, span, err);
    throw err;
  }
  return promise.then(
    (result) => {
      span.end();
      return result;
    },
    (err: unknown) => {
      fail(t, span, err);
      throw err;
    },
  );
}

function fail(t: Tracing, span: Span, err: unknown): void {
  recordFailure(t, span, err, reasonOf(err));
  span.end();
}

/**
 * The messaging attributes of one send: the message id for a single event, the
 * count for a batch (the conventions want one or the other), the partition when
 * every event goes to the same one.
 */
function sendAttributes(stream: string, events: NewEvent[]): Attributes {
  const attributes: Attributes = {
    [MESSAGING_SYSTEM]: SYSTEM,
    [MESSAGING_DESTINATION]: stream,
    [MESSAGING_OPERATION_TYPE]: 'send',
    [MESSAGING_OPERATION_NAME]: 'send',
  };
  if (events.length === 1) attributes[MESSAGING_MESSAGE_ID] = events[0].id;
  else attributes[MESSAGING_BATCH_COUNT] = events.length;
  const partition = events[0]?.partition;
  if (partition !== undefined && events.every((e) => e.partition === partition)) attributes[MESSAGING_PARTITION] = String(partition);
  return attributes;
}

/**
 * Writes the span's `traceparent` (and `tracestate` when non-empty) into the
 * metadata of each event whose caller did not set a `traceparent`, and keeps
 * `metadataJson` (what backends store) in step. The two keys are one pair: a
 * caller's `tracestate` without a `traceparent` would describe some other span,
 * so it is replaced, or dropped when this span's is empty. Each event's metadata
 * is its own copy (requests.toNewEvent), so nothing of the caller's is touched.
 */
function stamp(events: NewEvent[], sc: SpanContext): void {
  const traceparent = formatTraceparent(sc);
  const tracestate = sc.traceState?.serialize() ?? '';
  for (const event of events) {
    if (event.metadata[TRACEPARENT] !== undefined) continue;
    const metadata: EventMetadata = { ...event.metadata, [TRACEPARENT]: traceparent };
    if (tracestate !== '') metadata[TRACESTATE] = tracestate;
    else delete metadata[TRACESTATE];
    event.metadata = metadata;
    event.metadataJson = JSON.stringify(metadata);
  }
}
