// The facade's log section: append, read and query. An append resolves the
// stream through `ensured` so that, connected and with the stream known, it
// reaches the backend in the same turn (the hot path); each event is checked,
// routed and serialised once (requests.toNewEvent) before the store sees it.
import { repeatsOf } from '../appended';
import { encodeCursor } from '../cursor';
import { RheoError } from '../errors';
import { sendSpan } from '../otel';
import {
  checkBatch,
  checkBatchBytes,
  checkOptions,
  checkPageLimit,
  checkPartition,
  checkQuery,
  checkQueryPartition,
  toNewEvent,
} from '../requests';
import type { AppendInput, AppendOptions, JsonValue, Page, Query, RheoEvent } from '../types';
import { checkInt, checkName } from '../validate';
import { counted, type FacadeContext, type MessageDraft } from './context';

/** The options of {@link read}. */
export interface ReadOptions {
  partition?: number;
  afterSequence?: number;
  limit?: number;
}

function checkAppendOptions(ctx: FacadeContext, options: AppendOptions): AppendOptions {
  checkOptions('append', options);
  if (options.manager !== undefined && !ctx.backend.capabilities.mechanisms.transactionalAppend) {
    throw RheoError.invalid('options.manager', `is not supported by the ${ctx.backend.name} backend`);
  }
  return options;
}

export async function append<P = JsonValue>(
  ctx: FacadeContext,
  stream: string,
  input: AppendInput<P>,
  options: AppendOptions,
): Promise<RheoEvent<P>> {
  checkName('stream', stream);
  checkAppendOptions(ctx, options);
  // Traced from the first store access on, so a missing stream or an unreachable backend reaches `error` too.
  const [stored] = await ctx.traced(
    'append',
    () => ({ operation: 'append', stream, count: 1 }),
    async () => {
      const known = ctx.ensured(stream);
      const info = known instanceof Promise ? await known : known;
      const event = toNewEvent('event', input, info.partitions, ctx.backend.clock.now(), ctx.limits);
      return sendSpan(stream, [event], () => ctx.backend.append(stream, [event], options));
    },
    (events, m) => {
      const [e] = events;
      m.eventId = e.id;
      m.partition = e.partition;
      m.sequence = e.sequence;
      m.repeats = repeatsOf(events);
    },
  );
  return stored as RheoEvent<P>;
}

export async function appendBatch<P = JsonValue>(
  ctx: FacadeContext,
  stream: string,
  inputs: AppendInput<P>[],
  options: AppendOptions,
): Promise<RheoEvent<P>[]> {
  checkName('stream', stream);
  checkBatch('events', inputs, 'events');
  checkAppendOptions(ctx, options);
  if (inputs.length === 0) return [];
  const stored = await ctx.traced(
    'appendBatch',
    () => ({ operation: 'appendBatch', stream, count: inputs.length }),
    async () => {
      const known = ctx.ensured(stream);
      const info = known instanceof Promise ? await known : known;
      const now = ctx.backend.clock.now();
      const events = inputs.map((input, i) => toNewEvent(`events[${i}]`, input, info.partitions, now, ctx.limits));
      checkBatchBytes(events, ctx.limits.maxBatchBytes);
      return sendSpan(stream, events, () => ctx.backend.append(stream, events, options));
    },
    (events, m) => {
      m.repeats = repeatsOf(events);
    },
  );
  return stored as RheoEvent<P>[];
}

export async function read(ctx: FacadeContext, stream: string, options: ReadOptions): Promise<RheoEvent[]> {
  checkName('stream', stream);
  checkOptions('read', options);
  await ctx.init();
  const info = await ctx.stream(stream);
  const partition = options.partition === undefined ? 0 : checkPartition('partition', options.partition, info.partitions);
  const afterSequence = options.afterSequence === undefined ? 0 : checkInt('afterSequence', options.afterSequence, 0);
  const limit = checkPageLimit('limit', options.limit);
  return ctx.backend.read({ stream, partition, afterSequence, limit });
}

async function queryRequest(ctx: FacadeContext, query: Query) {
  const req = checkQuery(query);
  await ctx.init();
  const info = await ctx.stream(query.stream);
  checkQueryPartition(req, info.partitions);
  return req;
}

function queryMessage(query: Query): MessageDraft {
  return { operation: 'query', stream: typeof query?.stream === 'string' ? query.stream : undefined };
}

export async function query(ctx: FacadeContext, q: Query): Promise<RheoEvent[]> {
  return ctx.traced(
    'query',
    () => queryMessage(q),
    async () => ctx.backend.query(await queryRequest(ctx, q)),
    counted,
  );
}

export async function queryPage(ctx: FacadeContext, q: Query): Promise<Page<RheoEvent>> {
  const { req, items } = await ctx.traced(
    'query',
    () => queryMessage(q),
    async () => {
      const req = await queryRequest(ctx, q);
      return { req, items: await ctx.backend.query(req) };
    },
    (r, m) => counted(r.items, m),
  );
  const last = items[items.length - 1];
  return { items, nextCursor: items.length === req.limit && last ? encodeCursor(last) : null };
}

/** Every event matching the query, page by page (replay by query walks it too). */
export async function* queryStream(ctx: FacadeContext, q: Query): AsyncGenerator<RheoEvent, void, undefined> {
  let cursor = q.cursor;
  for (;;) {
    const page = await queryPage(ctx, { ...q, cursor });
    yield* page.items;
    if (!page.nextCursor) return;
    cursor = page.nextCursor;
  }
}
