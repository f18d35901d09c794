import { createTraceState, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, context as otelContext } from '@opentelemetry/api';
import { type Lease, type Outcome, Rheo, RheoError, RheoReject, RheoRetry } from '../../lib';
import { MemoryBackend } from '../../lib/backends/memory/memory-backend';
import type { NewEvent } from '../../lib/backends/backend';
import { formatTraceparent, parseTraceparent } from '../../lib/core/otel-w3c';
import { drainAll, startConsumer, unique } from '../runtime/helpers';
import { until } from '../support/until';
import { type SpanRecord, spansNamed, startTracing, type TestTracing } from './tracing';

// The span model on the memory backend, in process, against the real SDK
// (NodeTracerProvider + InMemorySpanExporter): what `send <stream>` and
// `process <stream>` carry, how they nest, and what the metadata holds.

/** The memory backend, with the next `failAppends` appends answered by an error (a store that went away). */
class FlakyAppendBackend extends MemoryBackend {
  failAppends = 0;
  override async append(stream: string, events: NewEvent[]) {
    if (this.failAppends > 0) {
      this.failAppends--;
      throw new RheoError('backend_unavailable', 'injected: the store is away');
    }
    return super.append(stream, events);
  }
}

let tracing: TestTracing;
let backend: FlakyAppendBackend;
let rheo: Rheo;
const tracer = () => trace.getTracer('test');

beforeAll(() => {
  tracing = startTracing();
});
afterAll(() => tracing.stop());
beforeEach(() => {
  tracing.exporter.reset();
  backend = new FlakyAppendBackend();
  rheo = new Rheo(backend);
});
afterEach(drainAll);

async function streamWithGroup(partitions = 1) {
  const stream = unique('otel');
  const group = unique('g');
  await rheo.createStream(stream, { partitions });
  await rheo.createGroup(stream, group);
  return { stream, group };
}

const only = (spans: SpanRecord[]): SpanRecord => {
  expect(spans).toHaveLength(1);
  return spans[0];
};

describe('send <stream>', () => {
  it('wraps an append in a PRODUCER span with the messaging attributes and stamps its traceparent into the metadata', async () => {
    const { stream } = await streamWithGroup(4);
    const event = await rheo.append(stream, { key: 'k1', payload: { n: 1 }, metadata: { correlationId: 'c1' } });
    const send = only(spansNamed(tracing.exporter, `send ${stream}`));
    expect(send.kind).toBe(SpanKind.PRODUCER);
    expect(send.attributes).toEqual({
      'messaging.system': 'rheo',
      'messaging.destination.name': stream,
      'messaging.operation.type': 'send',
      'messaging.operation.name': 'send',
      'messaging.message.id': event.id,
      'messaging.destination.partition.id': String(event.partition),
    });
    expect(send.status.code).toBe(SpanStatusCode.UNSET);
    const traceparent = `00-${send.traceId}-${send.spanId}-01`;
    expect(event.metadata).toEqual({ correlationId: 'c1', traceparent });
    // What the store holds, not only what append answered.
    const [stored] = await rheo.read(stream, { partition: event.partition });
    expect(stored.metadata).toEqual({ correlationId: 'c1', traceparent });
  });

  it('is a child of the span active at the call', async () => {
    const { stream } = await streamWithGroup();
    const parent = tracer().startSpan('http request');
    await otelContext.with(trace.setSpan(otelContext.active(), parent), () => rheo.append(stream, { payload: 1 }));
    parent.end();
    const send = only(spansNamed(tracing.exporter, `send ${stream}`));
    expect(send.traceId).toBe(parent.spanContext().traceId);
    expect(send.parentSpanId).toBe(parent.spanContext().spanId);
  });

  it('covers a batch with one span: the count instead of an id, the partition only when all events share it', async () => {
    const { stream } = await streamWithGroup(4);
    const spread = await rheo.appendBatch(
      stream,
      [0, 1, 2, 3].map((p) => ({ partition: p, payload: p })),
    );
    const same = await rheo.appendBatch(
      stream,
      [1, 2].map((n) => ({ partition: 2, payload: n })),
    );
    const [spreadSpan, sameSpan] = spansNamed(tracing.exporter, `send ${stream}`);
    expect(spreadSpan.attributes['messaging.batch.message_count']).toBe(4);
    expect(spreadSpan.attributes).not.toHaveProperty('messaging.message.id');
    expect(spreadSpan.attributes).not.toHaveProperty('messaging.destination.partition.id');
    expect(sameSpan.attributes['messaging.batch.message_count']).toBe(2);
    expect(sameSpan.attributes['messaging.destination.partition.id']).toBe('2');
    for (const e of spread) expect(e.metadata.traceparent).toBe(`00-${spreadSpan.traceId}-${spreadSpan.spanId}-01`);
    for (const e of same) expect(e.metadata.traceparent).toBe(`00-${sameSpan.traceId}-${sameSpan.spanId}-01`);
  });

  it("keeps a caller's traceparent (and its tracestate) untouched, event by event", async () => {
    const { stream } = await streamWithGroup();
    const theirs = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const [kept, stamped] = await rheo.appendBatch(stream, [
      { payload: 1, metadata: { traceparent: theirs, tracestate: 'them=1' } },
      { payload: 2 },
    ]);
    const send = only(spansNamed(tracing.exporter, `send ${stream}`));
    expect(kept.metadata).toEqual({ traceparent: theirs, tracestate: 'them=1' });
    expect(stamped.metadata).toEqual({ traceparent: `00-${send.traceId}-${send.spanId}-01` });
  });

  it("writes the span's tracestate next to its traceparent, and replaces a stray caller tracestate that has no traceparent", async () => {
    const { stream } = await streamWithGroup();
    const remote = trace.setSpanContext(ROOT_CONTEXT, {
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
      spanId: '00f067aa0ba902b7',
      traceFlags: 1,
      isRemote: true,
      traceState: createTraceState('vendor=abc'),
    });
    const inState = await otelContext.with(remote, () => rheo.append(stream, { payload: 1, metadata: { tracestate: 'stray=1' } }));
    const outOfState = await rheo.append(stream, { payload: 2, metadata: { tracestate: 'stray=2' } });
    const [first, second] = spansNamed(tracing.exporter, `send ${stream}`);
    expect(first.traceId).toBe('4bf92f3577b34da6a3ce929d0e0e4736');
    expect(first.parentSpanId).toBe('00f067aa0ba902b7');
    expect(inState.metadata).toEqual({ traceparent: `00-${first.traceId}-${first.spanId}-01`, tracestate: 'vendor=abc' });
    expect(outOfState.metadata).toEqual({ traceparent: `00-${second.traceId}-${second.spanId}-01` });
  });

  it('marks a failed append ERROR with the exception recorded, and the error still reaches the caller', async () => {
    const { stream } = await streamWithGroup();
    backend.failAppends = 1;
    await expect(rheo.append(stream, { payload: 1 })).rejects.toMatchObject({ code: 'backend_unavailable' });
    const send = only(spansNamed(tracing.exporter, `send ${stream}`));
    expect(send.status).toEqual({ code: SpanStatusCode.ERROR, message: 'injected: the store is away' });
    expect(send.attributes['error.type']).toBe('backend_unavailable');
    expect(send.events).toEqual(['exception']);
  });
});

describe('process <stream>', () => {
  /** Consume `stream` with `handler` until `n` handler runs settled; returns the process spans. */
  async function consume(
    stream: string,
    group: string,
    n: number,
    handler: (lease: Lease) => Promise<Outcome | void>,
  ): Promise<SpanRecord[]> {
    let settled = 0;
    const g = startConsumer(rheo, { stream, group, pollMs: 10, consumerId: 'c-1' }, handler);
    g.on('settled', () => settled++);
    await until(`${n} settles`, () => settled >= n);
    await g.drain(1000);
    return spansNamed(tracing.exporter, `process ${stream}`);
  }

  it('is a CONSUMER span whose parent is the send span, linked to it, with the messaging and rheo attributes', async () => {
    const { stream, group } = await streamWithGroup(3);
    const event = await rheo.append(stream, { key: 'k', payload: 1 });
    const send = only(spansNamed(tracing.exporter, `send ${stream}`));
    const [process] = await consume(stream, group, 1, async () => undefined);
    expect(process.kind).toBe(SpanKind.CONSUMER);
    expect(process.traceId).toBe(send.traceId);
    expect(process.parentSpanId).toBe(send.spanId);
    expect(process.links).toEqual([{ traceId: send.traceId, spanId: send.spanId }]);
    expect(process.attributes).toEqual({
      'messaging.system': 'rheo',
      'messaging.destination.name': stream,
      'messaging.operation.type': 'process',
      'messaging.operation.name': 'process',
      'messaging.consumer.group.name': group,
      'messaging.client.id': 'c-1',
      'messaging.message.id': event.id,
      'messaging.destination.partition.id': String(event.partition),
      'rheo.attempt': 1,
      'rheo.outcome': 'ack',
    });
    expect(process.status.code).toBe(SpanStatusCode.UNSET);
  });

  it('runs the handler with the span active: a span the handler starts is its child', async () => {
    const { stream, group } = await streamWithGroup();
    await rheo.append(stream, { payload: 1 });
    const [process] = await consume(stream, group, 1, async () => {
      // An await first: the context must survive the handler's own async hops.
      await new Promise((r) => setImmediate(r));
      tracer().startSpan('handler work').end();
    });
    const work = only(spansNamed(tracing.exporter, 'handler work'));
    expect(work.traceId).toBe(process.traceId);
    expect(work.parentSpanId).toBe(process.spanId);
  });

  it('says retry / reject with status ERROR, records real failures as exceptions, and counts the attempt', async () => {
    const { stream, group } = await streamWithGroup();
    const cases = ['throw', 'rheo-retry', 'rheo-reject', 'nack-value', 'bad-value'] as const;
    await rheo.appendBatch(
      stream,
      cases.map((c) => ({ type: c, payload: c })),
    );
    const handler = async (lease: Lease): Promise<Outcome | void> => {
      if (lease.attempt > 1) return; // the retried ones ack on their second attempt
      switch (lease.event.type) {
        case 'throw':
          throw new TypeError('boom');
        case 'rheo-retry':
          throw new RheoRetry('later', { delayMs: 0 });
        case 'rheo-reject':
          throw new RheoReject('never');
        case 'nack-value':
          return { kind: 'nack', reason: 'asked', delayMs: 0 };
        case 'bad-value':
          return 42 as unknown as Outcome;
      }
    };
    // Five first attempts, then four second attempts (all but the rejected one).
    const spans = await consume(stream, group, 9, handler);
    const events = await rheo.read(stream);
    const idOf = (type: string) => events.find((e) => e.type === type)!.id;
    const first = (type: string) =>
      spans.find((s) => s.attributes['rheo.attempt'] === 1 && s.attributes['messaging.message.id'] === idOf(type))!;
    const view = (s: SpanRecord) => ({
      outcome: s.attributes['rheo.outcome'],
      status: s.status,
      events: s.events,
      errorType: s.attributes['error.type'],
    });
    expect(view(first('throw'))).toEqual({
      outcome: 'retry',
      status: { code: SpanStatusCode.ERROR, message: 'boom' },
      events: ['exception'],
      errorType: 'TypeError',
    });
    expect(view(first('rheo-retry'))).toEqual({
      outcome: 'retry',
      status: { code: SpanStatusCode.ERROR, message: 'later' },
      events: [],
      errorType: undefined,
    });
    expect(view(first('rheo-reject'))).toEqual({
      outcome: 'reject',
      status: { code: SpanStatusCode.ERROR, message: 'never' },
      events: [],
      errorType: undefined,
    });
    expect(view(first('nack-value'))).toEqual({
      outcome: 'retry',
      status: { code: SpanStatusCode.ERROR, message: 'asked' },
      events: [],
      errorType: undefined,
    });
    expect(view(first('bad-value'))).toMatchObject({
      outcome: 'retry',
      status: { code: SpanStatusCode.ERROR },
      events: ['exception'],
      errorType: 'invalid_argument',
    });
    // The second attempts: acked, attempt 2, still children of their send span.
    const send = only(spansNamed(tracing.exporter, `send ${stream}`));
    const seconds = spans.filter((s) => s.attributes['rheo.attempt'] === 2);
    expect(seconds).toHaveLength(4);
    for (const s of seconds) {
      expect(s.attributes['rheo.outcome']).toBe('ack');
      expect(s.parentSpanId).toBe(send.spanId);
    }
  });

  it('starts a root span without links when the event carries no usable traceparent', async () => {
    const { stream, group } = await streamWithGroup();
    await rheo.appendBatch(stream, [
      { payload: 1, metadata: { traceparent: 'not-a-traceparent' } },
      { payload: 2, metadata: { traceparent: `00-${'0'.repeat(32)}-b7ad6b7169203331-01` } },
    ]);
    const spans = await consume(stream, group, 2, async () => undefined);
    expect(spans).toHaveLength(2);
    for (const s of spans) {
      expect(s.parentSpanId).toBeUndefined();
      expect(s.links).toEqual([]);
    }
  });

  it('is not parented by whatever span was active when the Consumer started', async () => {
    const { stream, group } = await streamWithGroup();
    await rheo.append(stream, { payload: 1, metadata: { traceparent: 'none' } });
    const ambient = tracer().startSpan('bootstrap');
    const spans = await otelContext.with(trace.setSpan(ROOT_CONTEXT, ambient), () => consume(stream, group, 1, async () => undefined));
    ambient.end();
    expect(spans[0].parentSpanId).toBeUndefined();
    expect(spans[0].traceId).not.toBe(ambient.spanContext().traceId);
  });
});

describe('W3C traceparent', () => {
  const id = { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331' };

  it('writes version 00 with two-digit flags and reads it back', () => {
    expect(formatTraceparent({ ...id, traceFlags: 1 })).toBe(`00-${id.traceId}-${id.spanId}-01`);
    expect(formatTraceparent({ ...id, traceFlags: 0 })).toBe(`00-${id.traceId}-${id.spanId}-00`);
    expect(parseTraceparent(` 00-${id.traceId}-${id.spanId}-01 `)).toEqual({ ...id, traceFlags: 1 });
  });

  it.each([
    ['not a string', 42],
    ['upper-case hex', `00-${id.traceId.toUpperCase()}-${id.spanId}-01`],
    ['version ff', `ff-${id.traceId}-${id.spanId}-01`],
    ['version 00 with a fifth field', `00-${id.traceId}-${id.spanId}-01-extra`],
    ['all-zero trace id', `00-${'0'.repeat(32)}-${id.spanId}-01`],
    ['all-zero span id', `00-${id.traceId}-${'0'.repeat(16)}-01`],
    ['short span id', `00-${id.traceId}-b7ad6b71-01`],
  ])('refuses %s', (_what, value) => {
    expect(parseTraceparent(value)).toBeUndefined();
  });

  it('accepts a later version with extra fields', () => {
    expect(parseTraceparent(`01-${id.traceId}-${id.spanId}-00-more`)).toEqual({ ...id, traceFlags: 0 });
  });
});
