// A real OpenTelemetry SDK for the tests of this folder: a NodeTracerProvider
// registered globally (with its AsyncLocalStorage context manager and the W3C
// propagator) that exports every ended span to an in-memory exporter.
import { context, propagation, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';

export interface TestTracing {
  exporter: InMemorySpanExporter;
  provider: NodeTracerProvider;
  /** Unregister the provider and its context manager and propagator, then shut it down. */
  stop(): Promise<void>;
}

/** Register a fresh provider as the global one. */
export function startTracing(): TestTracing {
  const exporter = new InMemorySpanExporter();
  const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  provider.register();
  return {
    exporter,
    provider,
    async stop() {
      trace.disable();
      context.disable();
      propagation.disable();
      await provider.shutdown();
    },
  };
}

/** Spans as plain data, to compare across processes and print on failure. */
export interface SpanRecord {
  name: string;
  kind: number;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  status: { code: number; message?: string };
  attributes: Record<string, unknown>;
  links: Array<{ traceId: string; spanId: string }>;
  events: string[];
}

export function spanRecord(s: ReadableSpan): SpanRecord {
  const sc = s.spanContext();
  const record: SpanRecord = {
    name: s.name,
    kind: s.kind,
    traceId: sc.traceId,
    spanId: sc.spanId,
    status: { ...s.status },
    attributes: { ...s.attributes },
    links: s.links.map((l) => ({ traceId: l.context.traceId, spanId: l.context.spanId })),
    events: s.events.map((e) => e.name),
  };
  if (s.parentSpanContext) record.parentSpanId = s.parentSpanContext.spanId;
  return record;
}

/** The finished spans named `name`, as records. */
export function spansNamed(exporter: InMemorySpanExporter, name: string): SpanRecord[] {
  return exporter
    .getFinishedSpans()
    .filter((s) => s.name === name)
    .map(spanRecord);
}
