import { type ChildProcess, fork } from 'node:child_process';
import { join } from 'node:path';
import { Body, Controller, type INestApplication, Post } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { SpanKind, trace } from '@opentelemetry/api';
import request from 'supertest';
import { postgresBackend, RheoClient, RheoModule } from '../../lib';
import { dropSchema, freshSchema, PG_URL } from '../sql/pg-helpers';
import { type SpanRecord, spanRecord, startTracing, type TestTracing } from './tracing';

// Issue 11's acceptance test: an HTTP request that appends, and a consumer in
// another process on PostgreSQL, end up in one trace. This process is the
// producer (a Nest HTTP app whose controller appends inside its own span); the
// child (fixtures/consumer-app.ts) is a Nest microservice whose handler starts a
// span. Each exports to its own in-memory exporter; the child sends its spans back.
const schema = freshSchema('otel');

@Controller('orders')
class OrdersController {
  constructor(private readonly client: RheoClient) {}

  @Post()
  create(@Body() body: { sku: string }) {
    // Stands in for the server span an HTTP instrumentation would start.
    return trace.getTracer('shop').startActiveSpan('POST /orders', async (span) => {
      try {
        const event = await this.client.append('orders', { key: body.sku, payload: body });
        return { id: event.id, traceparent: event.metadata.traceparent };
      } finally {
        span.end();
      }
    });
  }
}

type ChildMessage = { k: 'ready' } | { k: 'handled'; eventId: string } | { k: 'spans'; spans: SpanRecord[] };

/** The consumer process, with every message it sent so far. */
function startConsumer(): { child: ChildProcess; messages: ChildMessage[]; next: (k: ChildMessage['k']) => Promise<ChildMessage> } {
  const child = fork(join(__dirname, 'fixtures', 'consumer-app.ts'), [], {
    execArgv: ['-r', 'ts-node/register/transpile-only'],
    env: { ...process.env, RHEO_OTEL_PG_URL: PG_URL, RHEO_OTEL_SCHEMA: schema, TS_NODE_TRANSPILE_ONLY: 'true' },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const messages: ChildMessage[] = [];
  const waiters: Array<() => void> = [];
  child.on('message', (m: ChildMessage) => {
    messages.push(m);
    for (const w of waiters.splice(0)) w();
  });
  const next = (k: ChildMessage['k']) =>
    new Promise<ChildMessage>((resolve, reject) => {
      const check = () => {
        const found = messages.find((m) => m.k === k);
        if (found) resolve(found);
        else waiters.push(check);
      };
      child.once('exit', (code) => reject(new Error(`consumer process exited (${code}) before it said ${k}`)));
      check();
    });
  return { child, messages, next };
}

describe('one trace from an HTTP request in one process to the handler in another (PostgreSQL)', () => {
  let tracing: TestTracing;
  let consumer: ReturnType<typeof startConsumer>;
  let app: INestApplication;

  beforeAll(async () => {
    tracing = startTracing();
    // The consumer first: it installs the schema and creates the group before anything is appended.
    consumer = startConsumer();
    await consumer.next('ready');
    const ref = await Test.createTestingModule({
      imports: [RheoModule.forRoot({ backend: postgresBackend({ url: PG_URL, schema, poolSize: 2 }), streams: [{ name: 'orders' }] })],
      controllers: [OrdersController],
    }).compile();
    app = ref.createNestApplication({ logger: false });
    await app.init();
  }, 60_000);

  afterAll(async () => {
    await app?.close();
    if (consumer && consumer.child.exitCode === null && consumer.child.signalCode === null) consumer.child.kill('SIGKILL');
    await tracing.stop();
    await dropSchema(schema);
  });

  it('links POST /orders -> send orders -> process orders -> the handler span, under one trace id', async () => {
    const res = await request(app.getHttpServer()).post('/orders').send({ sku: 'sku-1' }).expect(201);
    const { id, traceparent } = res.body as { id: string; traceparent: string };
    const handled = (await consumer.next('handled')) as { eventId: string };
    expect(handled.eventId).toBe(id);

    consumer.child.send({ type: 'stop' });
    const { spans: theirs } = (await consumer.next('spans')) as { spans: SpanRecord[] };
    const ours = tracing.exporter.getFinishedSpans().map(spanRecord);

    const one = (spans: SpanRecord[], name: string) => {
      const found = spans.filter((s) => s.name === name);
      expect(found.map((s) => s.name)).toEqual([name]);
      return found[0];
    };
    const http = one(ours, 'POST /orders');
    const send = one(ours, 'send orders');
    const processSpan = one(theirs, 'process orders');
    const work = one(theirs, 'charge card');

    // One trace, end to end.
    expect(new Set([http, send, processSpan, work].map((s) => s.traceId))).toEqual(new Set([http.traceId]));
    // Parentage: request -> send (this process) -> process -> handler span (the other one).
    expect(http.parentSpanId).toBeUndefined();
    expect(send.parentSpanId).toBe(http.spanId);
    expect(processSpan.parentSpanId).toBe(send.spanId);
    expect(processSpan.links).toEqual([{ traceId: send.traceId, spanId: send.spanId }]);
    expect(work.parentSpanId).toBe(processSpan.spanId);
    // What carried it: the send span's traceparent, stored in the event's metadata.
    expect(traceparent).toBe(`00-${send.traceId}-${send.spanId}-01`);

    expect(send.kind).toBe(SpanKind.PRODUCER);
    expect(processSpan.kind).toBe(SpanKind.CONSUMER);
    expect(processSpan.attributes).toMatchObject({
      'messaging.system': 'rheo',
      'messaging.destination.name': 'orders',
      'messaging.consumer.group.name': 'billing',
      'messaging.message.id': id,
      'rheo.attempt': 1,
      'rheo.outcome': 'ack',
    });
    expect(work.attributes).toEqual({ 'order.sku': 'sku-1' });

    const exit = await new Promise<number | null>((resolve) =>
      consumer.child.exitCode !== null ? resolve(consumer.child.exitCode) : consumer.child.once('exit', (code) => resolve(code)),
    );
    expect(exit).toBe(0);
  });
});
