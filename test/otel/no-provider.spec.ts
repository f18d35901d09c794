import { trace } from '@opentelemetry/api';
import { memoryBackend, Rheo } from '../../lib';
import { drainAll, startConsumer, unique } from '../runtime/helpers';
import { until } from '../support/until';
import { spansNamed, startTracing } from './tracing';

// The benchmark's situation: @opentelemetry/api installed, no tracer provider
// registered. The hooks must then leave events exactly as the caller gave them,
// and notice a provider registered later (and one unregistered again).
afterEach(drainAll);

async function fresh() {
  const rheo = new Rheo(memoryBackend());
  const stream = unique('quiet');
  await rheo.createStream(stream);
  await rheo.createGroup(stream, 'g');
  return { rheo, stream };
}

it('with no provider registered, appends and consumes without touching the metadata', async () => {
  const { rheo, stream } = await fresh();
  const one = await rheo.append(stream, { payload: 1, metadata: { source: 'test' } });
  const batch = await rheo.appendBatch(stream, [{ payload: 2 }, { payload: 3 }]);
  expect(one.metadata).toEqual({ source: 'test' });
  expect(batch.map((e) => e.metadata)).toEqual([{}, {}]);
  const activeInHandler: unknown[] = [];
  let settled = 0;
  const g = startConsumer(rheo, { stream, group: 'g', pollMs: 10 }, async () => {
    activeInHandler.push(trace.getActiveSpan());
  });
  g.on('settled', () => settled++);
  await until('three settles', () => settled === 3);
  expect(activeInHandler).toEqual([undefined, undefined, undefined]);
  expect((await rheo.read(stream)).map((e) => e.metadata)).toEqual([{ source: 'test' }, {}, {}]);
});

it('starts tracing once a provider is registered after the first append, and stops when it is disabled', async () => {
  const { rheo, stream } = await fresh();
  const before = await rheo.append(stream, { payload: 'before' });
  const tracing = startTracing();
  let during;
  let spans;
  try {
    during = await rheo.append(stream, { payload: 'during' });
  } finally {
    // Read before stop: shutting the provider down empties its in-memory exporter.
    spans = spansNamed(tracing.exporter, `send ${stream}`);
    await tracing.stop();
  }
  const after = await rheo.append(stream, { payload: 'after' });
  expect(spans).toHaveLength(1);
  expect(before.metadata).toEqual({});
  expect(during.metadata).toEqual({ traceparent: `00-${spans[0].traceId}-${spans[0].spanId}-01` });
  expect(after.metadata).toEqual({});

  // A second provider, registered after the first was disabled, is picked up too.
  const again = startTracing();
  try {
    const stamped = await rheo.append(stream, { payload: 'again' });
    const [second] = spansNamed(again.exporter, `send ${stream}`);
    expect(stamped.metadata.traceparent).toBe(`00-${second.traceId}-${second.spanId}-01`);
  } finally {
    await again.stop();
  }
});
