// Request validation of the facade, one function per operation's input (like
// pg-boss's attorney): each checks and defaults what a caller passed, throwing
// RheoError('invalid_argument') naming the field before anything is touched.
// The facade (rheo.ts) then reads as the list of operations. The delivery
// operations' requests (leases, settles, fetch) are in delivery-requests.ts.
import type { NewEvent, QueryRequest, ReplayRequest, ResolvedStart } from '../backends/backend';
import { DEFAULT_RETRY } from './backoff';
import { decodeCursor } from './cursor';
import { checkFlowOptions } from './flow';
import { RheoError } from './errors';
import { newEventId } from './ids';
import {
  DEFAULT_LEASE_MS,
  DEFAULT_MAX_BATCH_BYTES,
  DEFAULT_MAX_METADATA_BYTES,
  DEFAULT_MAX_PAYLOAD_BYTES,
  DEFAULT_MAX_ATTEMPTS,
  DEFAULT_PAGE_LIMIT,
  MAX_ATTEMPTS_LIMIT,
  MAX_BATCH,
  MAX_DELAY_MS,
  MAX_DURATION_MS,
  MAX_FILTER_BYTES,
  MAX_FILTER_DEPTH,
  MAX_FILTER_KEYS,
  MAX_PAGE_LIMIT,
} from './limits';
import { boundReason } from './outcomes';
import { partitionForKey } from './partitioner';
import type { AppendInput, GroupConfig, GroupOptions, Query, Retention, RetryBackoff, StartPosition } from './types';
import {
  checkBoolean,
  checkDate,
  checkInt,
  checkJsonObject,
  checkJsonSize,
  checkMetadata,
  checkName,
  checkObject,
  checkKeys,
  isName,
  isPlainObject,
  jsonPayload,
  keySet,
} from './validate';

/**
 * The keys of every options object the facade takes, by operation: anything else
 * is refused (`options.leasems is not a fetch option (use limit, ...)`), so a
 * typo fails instead of falling back to a default.
 */
const OPTION_KEYS = {
  rheo: keySet('a Rheo option', ['maxPayloadBytes', 'maxMetadataBytes', 'maxBatchBytes']),
  createStream: keySet('a createStream option', ['partitions', 'ifNotExists', 'retention']),
  createGroup: keySet('a createGroup option', [
    'start',
    'maxAttempts',
    'retry',
    'ordering',
    'keyConcurrency',
    'groupConcurrency',
    'rateLimit',
    'ifNotExists',
  ]),
  append: keySet('an append option', ['manager']),
  read: keySet('a read option', ['partition', 'afterSequence', 'limit']),
  fetch: keySet('a fetch option', ['limit', 'leaseMs', 'consumerId', 'partitions']),
  renew: keySet('a renew option', ['leaseMs']),
  nack: keySet('a nack option', ['reason', 'delayMs']),
  reject: keySet('a reject option', ['reason']),
  reset: keySet('a reset option', ['confirm', 'start']),
  deleteGroup: keySet('a deleteGroup option', ['confirm']),
  deadLetters: keySet('a deadLetters option', ['limit', 'after']),
  countDeadLetters: keySet('a countDeadLetters option', ['since']),
  trim: keySet('a trim option', ['force']),
} as const;

/** An operation's options object: a plain object of its known keys only. */
export function checkOptions(operation: keyof typeof OPTION_KEYS, options: unknown): Record<string, unknown> {
  const o = checkObject('options', options);
  checkKeys('options', o, OPTION_KEYS[operation]);
  return o;
}

/** A bulk call's array: an array of at most {@link MAX_BATCH} items. */
export function checkBatch<T>(field: string, value: T[], noun: string): T[] {
  if (!Array.isArray(value)) throw RheoError.invalid(field, 'must be an array');
  if (value.length > MAX_BATCH) throw RheoError.invalid(field, `must hold at most ${MAX_BATCH} ${noun}`);
  return value;
}

/** A settle reason: a string, cut to the stored bound; `fallback` when absent. */
export function checkReason(field: string, value: unknown, fallback: string): string {
  if (value === undefined) return fallback;
  if (typeof value !== 'string') throw RheoError.invalid(field, 'must be a string');
  return boundReason(value);
}

/** One partition number of a stream of `partitions` partitions: an integer from 0 to `partitions - 1`. */
export function checkPartition(field: string, value: unknown, partitions: number): number {
  return checkInt(field, value, 0, partitions - 1);
}

/** A partition filter: distinct partition numbers of the stream, sorted; undefined for all. */
export function checkPartitions(field: string, value: unknown, count: number): number[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || value.length === 0) throw RheoError.invalid(field, 'must be a non-empty array of partition numbers');
  return [...new Set(value.map((p, i) => checkPartition(`${field}[${i}]`, p, count)))].sort((a, b) => a - b);
}

/** A lease time-to-live, ms. */
export function checkLeaseMs(value: unknown): number {
  return value === undefined ? DEFAULT_LEASE_MS : checkInt('leaseMs', value, 1, MAX_DURATION_MS);
}

/** A page size of read, query or dead letters. */
export function checkPageLimit(field: string, value: unknown): number {
  return value === undefined ? DEFAULT_PAGE_LIMIT : checkInt(field, value, 1, MAX_PAGE_LIMIT);
}

// ------------------------------------------------------------------ groups

const RETRY_KEYS = keySet('a retry setting', ['initialMs', 'factor', 'maxMs']);

/** The fields of a retry setting that are given, each checked (`retry.<field>`); how they combine is the caller's. */
export function checkRetryFields(value: unknown): RetryBackoff {
  const r = checkObject('retry', value);
  checkKeys('retry', r, RETRY_KEYS);
  const retry: RetryBackoff = {};
  if (r.initialMs !== undefined) retry.initialMs = checkInt('retry.initialMs', r.initialMs, 0, MAX_DELAY_MS);
  if (r.maxMs !== undefined) retry.maxMs = checkInt('retry.maxMs', r.maxMs, 0, MAX_DELAY_MS);
  if (r.factor !== undefined) {
    if (typeof r.factor !== 'number' || !(r.factor >= 1 && r.factor <= 100))
      throw RheoError.invalid('retry.factor', 'must be a number between 1 and 100');
    retry.factor = r.factor;
  }
  return retry;
}

/** The settings a group is created with (the start position is resolved against the stream later). */
export function checkGroupOptions(
  options: GroupOptions,
): Pick<GroupConfig, 'maxAttempts' | 'retry' | 'ordering' | 'keyConcurrency' | 'groupConcurrency' | 'rateLimit'> {
  checkOptions('createGroup', options);
  const maxAttempts =
    options.maxAttempts === undefined ? DEFAULT_MAX_ATTEMPTS : checkInt('maxAttempts', options.maxAttempts, 1, MAX_ATTEMPTS_LIMIT);
  const retry = { ...DEFAULT_RETRY };
  if (options.retry !== undefined) {
    Object.assign(retry, checkRetryFields(options.retry));
    if (retry.maxMs < retry.initialMs) throw RheoError.invalid('retry.maxMs', 'must be >= retry.initialMs');
  }
  const ordering = options.ordering ?? 'none';
  if (ordering !== 'none' && ordering !== 'partition' && ordering !== 'key')
    throw RheoError.invalid('ordering', "must be 'none', 'partition' or 'key'");
  return { maxAttempts, retry, ordering, ...checkFlowOptions(options, ordering) };
}

const START_AT_KEYS = keySet('a key of a start { at }', ['at']);
const START_AFTER_KEYS = keySet('a key of a start { afterSequence }', ['afterSequence']);

/** A start position, resolved against a stream of `partitions` partitions. */
export function resolveStart(field: string, start: StartPosition | undefined, partitions: number): ResolvedStart {
  if (start === undefined || start === 'beginning') return { kind: 'beginning' };
  if (start === 'end') return { kind: 'end' };
  if (typeof start !== 'object' || start === null)
    throw RheoError.invalid(field, "must be 'beginning', 'end', { afterSequence } or { at }");
  if ('at' in start) {
    checkKeys(field, start, START_AT_KEYS);
    return { kind: 'at', time: checkDate(`${field}.at`, start.at) };
  }
  if ('afterSequence' in start) {
    checkKeys(field, start, START_AFTER_KEYS);
    const s = start.afterSequence;
    if (typeof s === 'number') return { kind: 'after', sequences: checkInt(`${field}.afterSequence`, s, 0) };
    const map = checkObject(`${field}.afterSequence`, s);
    const sequences: Record<number, number> = {};
    for (const [p, v] of Object.entries(map)) {
      const part = checkPartition(`${field}.afterSequence[${p}]`, /^\d+$/.test(p) ? Number(p) : p, partitions);
      sequences[part] = checkInt(`${field}.afterSequence[${p}]`, v, 0);
    }
    return { kind: 'after', sequences };
  }
  throw RheoError.invalid(field, "must be 'beginning', 'end', { afterSequence } or { at }");
}

// ------------------------------------------------------------------ append, query

const EVENT_KEYS = keySet('a key of an event', [
  'id',
  'key',
  'type',
  'payload',
  'metadata',
  'partition',
  'timestamp',
  'deliverAt',
  'delayMs',
]);

/** The size limits of one facade's appends: its options, defaults applied. */
export interface AppendLimits {
  maxPayloadBytes: number;
  maxMetadataBytes: number;
  maxBatchBytes: number;
}

/** The append limits of a facade's options (each a positive integer of bytes when given). */
export function checkAppendLimits(options: {
  maxPayloadBytes?: unknown;
  maxMetadataBytes?: unknown;
  maxBatchBytes?: unknown;
}): AppendLimits {
  const bytes = (field: string, value: unknown, fallback: number) => (value === undefined ? fallback : checkInt(field, value, 1));
  return {
    maxPayloadBytes: bytes('maxPayloadBytes', options.maxPayloadBytes, DEFAULT_MAX_PAYLOAD_BYTES),
    maxMetadataBytes: bytes('maxMetadataBytes', options.maxMetadataBytes, DEFAULT_MAX_METADATA_BYTES),
    maxBatchBytes: bytes('maxBatchBytes', options.maxBatchBytes, DEFAULT_MAX_BATCH_BYTES),
  };
}

/**
 * One event to append: validated, id and timestamp assigned, routed to its
 * partition, payload and metadata serialised once and bounded in size.
 */
export function toNewEvent(field: string, input: AppendInput<unknown>, partitions: number, now: number, limits: AppendLimits): NewEvent {
  // Per event, field names (`events[17].key`) are built only for an error: valid input is tested first.
  if (!isPlainObject(input)) checkObject(field, input);
  checkKeys(field, input, EVENT_KEYS);
  const id = input.id === undefined ? newEventId() : isName(input.id) ? input.id : checkName(`${field}.id`, input.id);
  const key = input.key === undefined || input.key === null ? null : isName(input.key) ? input.key : checkName(`${field}.key`, input.key);
  const type =
    input.type === undefined || input.type === null ? null : isName(input.type) ? input.type : checkName(`${field}.type`, input.type);
  const metadata = input.metadata === undefined ? {} : checkMetadata(`${field}.metadata`, input.metadata);
  const metadataJson =
    input.metadata === undefined ? '{}' : checkJsonSize(`${field}.metadata`, JSON.stringify(metadata), limits.maxMetadataBytes);
  const payloadField = `${field}.payload`;
  // The caller's value when it is plain JSON; what JSON makes of it otherwise (a DTO): stored and returned as such.
  const payload = jsonPayload(payloadField, input.payload);
  const payloadJson = checkJsonSize(payloadField, JSON.stringify(payload), limits.maxPayloadBytes);
  let partition: number;
  if (input.partition !== undefined) partition = checkPartition(`${field}.partition`, input.partition, partitions);
  else partition = key === null ? 0 : partitionForKey(key, partitions);
  const timestamp = input.timestamp === undefined ? new Date(now) : checkDate(`${field}.timestamp`, input.timestamp);
  const event: NewEvent = {
    id,
    partition,
    timestamp,
    key,
    type,
    metadata,
    metadataJson,
    payload,
    payloadJson,
  };
  const deliverAt = checkDelay(field, input, now);
  if (deliverAt !== undefined) event.deliverAt = deliverAt;
  return event;
}

/**
 * The bytes of one appendBatch call: its events' payload and metadata JSON
 * together (empty metadata counts nothing), at most `maxBytes`. Counted only
 * near the limit, as for one payload.
 */
export function checkBatchBytes(events: NewEvent[], maxBytes: number): void {
  let units = 0;
  for (const e of events) units += e.payloadJson.length + (e.metadataJson === '{}' ? 0 : e.metadataJson.length);
  if (units * 3 <= maxBytes) return;
  let size = 0;
  for (const e of events) size += Buffer.byteLength(e.payloadJson) + (e.metadataJson === '{}' ? 0 : Buffer.byteLength(e.metadataJson));
  if (size > maxBytes) {
    const message = `events is ${size} bytes in all, over the limit of ${maxBytes} per appendBatch call`;
    throw new RheoError('payload_too_large', message, { field: 'events' });
  }
}

/**
 * A time at most {@link MAX_DELAY_MS} after `now` (a delayed event's deliverAt, a
 * reschedule's, a pause's end), as a new Date: the one bound every time ahead has.
 */
export function checkTimeAhead(field: string, value: unknown, now: number): Date {
  const at = checkDate(field, value).getTime();
  if (at - now > MAX_DELAY_MS) throw RheoError.invalid(field, `must be at most ${MAX_DELAY_MS} ms after now (a year, as delayMs)`);
  return new Date(at);
}

/**
 * When a delayed event may first be offered: `deliverAt`, or now + `delayMs`
 * (exactly one of them may be given); undefined for an event without a delay.
 * Both are bounded alike, at {@link MAX_DELAY_MS} after now: an event due later
 * would hold its partition's frontier (and, under `ordering: 'partition'`, every
 * event behind it) for longer than any other delay may.
 */
function checkDelay(field: string, input: AppendInput<unknown>, now: number): Date | undefined {
  if (input.deliverAt !== undefined && input.delayMs !== undefined)
    throw RheoError.invalid(`${field}.delayMs`, 'cannot be given together with deliverAt: give one of them');
  if (input.deliverAt !== undefined) return checkTimeAhead(`${field}.deliverAt`, input.deliverAt, now);
  if (input.delayMs !== undefined) return new Date(now + checkInt(`${field}.delayMs`, input.delayMs, 0, MAX_DELAY_MS));
  return undefined;
}

const FILTERS = keySet('a filter', ['type', 'key', 'partition', 'metadata', 'payload']);
const QUERY_KEYS = keySet('a query option', [
  'stream',
  'where',
  'from',
  'to',
  'afterSequence',
  'untilSequence',
  'order',
  'limit',
  'cursor',
]);

/** A query, except what needs the stream (the partition filter's range: {@link checkQueryPartition}). */
export function checkQuery(query: Query): QueryRequest {
  checkObject('query', query);
  checkKeys('query', query, QUERY_KEYS);
  checkName('query.stream', query.stream);
  const where = query.where === undefined ? {} : checkObject('query.where', query.where);
  checkKeys('query.where', where, FILTERS);
  if (where.type !== undefined) checkName('query.where.type', where.type);
  if (where.key !== undefined) checkName('query.where.key', where.key);
  if (where.metadata !== undefined || where.payload !== undefined) checkFilters(where);
  const order = query.order ?? 'asc';
  if (order !== 'asc' && order !== 'desc') throw RheoError.invalid('query.order', "must be 'asc' or 'desc'");
  const limit = checkPageLimit('query.limit', query.limit);
  const req: QueryRequest = { stream: query.stream, where: where as QueryRequest['where'], order, limit };
  if (query.from !== undefined) req.from = checkDate('query.from', query.from);
  if (query.to !== undefined) req.to = checkDate('query.to', query.to);
  if (query.afterSequence !== undefined) req.afterSequence = checkInt('query.afterSequence', query.afterSequence, 0);
  if (query.untilSequence !== undefined) req.untilSequence = checkInt('query.untilSequence', query.untilSequence, 0);
  if (query.cursor !== undefined && query.cursor !== null) req.after = decodeCursor(query.cursor);
  return req;
}

/**
 * The metadata and payload filters of a query, bounded (ADR 036): each of their
 * keys becomes a predicate of the store's query, whose cost grows with them
 * faster than linearly (and SQLite refuses about 500), so keys are counted
 * before anything is walked; then depth and bytes.
 */
function checkFilters(where: Record<string, unknown>): void {
  const metadata = where.metadata === undefined ? undefined : checkObject('query.where.metadata', where.metadata);
  const payload = where.payload === undefined ? undefined : checkObject('query.where.payload', where.payload);
  const keys = (metadata ? Object.keys(metadata).length : 0) + (payload ? Object.keys(payload).length : 0);
  if (keys > MAX_FILTER_KEYS) {
    throw RheoError.invalid(
      'query.where',
      `must hold at most ${MAX_FILTER_KEYS} metadata and payload filter keys in all (it holds ${keys})`,
    );
  }
  if (metadata) checkMetadata('query.where.metadata', metadata, MAX_FILTER_DEPTH);
  if (payload) checkJsonObject('query.where.payload', payload, MAX_FILTER_DEPTH);
  const json = (metadata ? JSON.stringify(metadata) : '') + (payload ? JSON.stringify(payload) : '');
  const bytes = json.length * 3 <= MAX_FILTER_BYTES ? 0 : Buffer.byteLength(json);
  if (bytes > MAX_FILTER_BYTES) {
    throw RheoError.invalid('query.where', `is ${bytes} bytes of metadata and payload filters, over the limit of ${MAX_FILTER_BYTES}`);
  }
}

/** The query's partition filter against the stream's partition count. */
export function checkQueryPartition(req: QueryRequest, partitions: number): void {
  if (req.where.partition !== undefined) checkPartition('query.where.partition', req.where.partition, partitions);
}

// ------------------------------------------------------------------ replay, redrive

const REPLAY_KEYS = {
  afterSequence: keySet('a replay option with afterSequence', ['afterSequence', 'partitions']),
  from: keySet('a replay option with from', ['from', 'partitions']),
  query: keySet('a replay option with query', ['query']),
};
const REPLAY_QUERY_KEYS = keySet('a replay query option', ['where', 'from', 'to', 'afterSequence', 'untilSequence']);

/** Which of replay's exclusive options was given; exactly one must be. */
export function checkReplayKind(options: unknown): 'afterSequence' | 'from' | 'query' {
  const o = checkObject('options', options);
  const given = (['afterSequence', 'from', 'query'] as const).filter((k) => o[k] !== undefined);
  if (given.length !== 1) throw RheoError.invalid('options', 'must give exactly one of afterSequence, from, query');
  checkKeys('options', o, REPLAY_KEYS[given[0]]);
  if (given[0] === 'query') checkKeys('query', checkObject('query', o.query), REPLAY_QUERY_KEYS);
  return given[0];
}

/** A replay by sequence or time, resolved against a stream of `partitions` partitions. */
export function checkReplayRange(
  stream: string,
  group: string,
  options: { afterSequence?: unknown; from?: unknown; partitions?: unknown },
  partitions: number,
): ReplayRequest {
  const parts = checkPartitions('partitions', options.partitions, partitions);
  if (options.afterSequence !== undefined) {
    return { stream, group, kind: 'sequence', afterSequence: checkInt('afterSequence', options.afterSequence, 0), partitions: parts };
  }
  return { stream, group, kind: 'time', from: checkDate('from', options.from), partitions: parts };
}

const REDRIVE_ALL_KEYS = keySet('a redrive option with all', ['all']);
const REDRIVE_IDS_KEYS = keySet('a redrive option with eventIds', ['eventIds']);

/** Which dead letters to redrive: ids, or all. */
export function checkRedrive(options: unknown): string[] | 'all' {
  const o = checkObject('options', options);
  if (o.all === true && o.eventIds === undefined) {
    checkKeys('options', o, REDRIVE_ALL_KEYS);
    return 'all';
  }
  if (Array.isArray(o.eventIds) && o.all === undefined) {
    checkKeys('options', o, REDRIVE_IDS_KEYS);
    return o.eventIds.map((id, i) => checkName(`eventIds[${i}]`, id));
  }
  throw RheoError.invalid('options', 'must be { eventIds: [...] } or { all: true }');
}

const RETENTION_KEYS = keySet('a retention setting', ['maxAgeMs', 'maxEvents', 'deadLetterMaxAgeMs']);

/**
 * A retention: each limit optional, each a whole number of at least 1; unknown
 * keys are refused (a typo would otherwise keep everything forever). Returns only
 * the limits that are set.
 */
export function checkRetention(field: string, value: unknown): Retention {
  const o = checkObject(field, value);
  checkKeys(field, o, RETENTION_KEYS);
  const out: Retention = {};
  if (o.maxAgeMs !== undefined) out.maxAgeMs = checkInt(`${field}.maxAgeMs`, o.maxAgeMs, 1);
  if (o.maxEvents !== undefined) out.maxEvents = checkInt(`${field}.maxEvents`, o.maxEvents, 1);
  if (o.deadLetterMaxAgeMs !== undefined) out.deadLetterMaxAgeMs = checkInt(`${field}.deadLetterMaxAgeMs`, o.deadLetterMaxAgeMs, 1);
  return out;
}

/** True when a retention sets no limit at all (the stream keeps everything). */
export function keepsEverything(retention: Retention): boolean {
  return retention.maxAgeMs === undefined && retention.maxEvents === undefined && retention.deadLetterMaxAgeMs === undefined;
}

/** Options of trim: `force` must be a boolean when given. */
export function checkTrimOptions(options: unknown): { force: boolean } {
  const o = checkOptions('trim', options);
  if (o.force !== undefined) checkBoolean('options.force', o.force);
  return { force: o.force === true };
}

const PURGE_ALL_KEYS = keySet('a purge option with all', ['all']);
const PURGE_BEFORE_KEYS = keySet('a purge option with before', ['before']);

/** Which dead letters to purge: `{ before: Date }` or `{ all: true }`; null means all. */
export function checkPurge(options: unknown): Date | null {
  const o = checkObject('options', options);
  if (o.all === true && o.before === undefined) {
    checkKeys('options', o, PURGE_ALL_KEYS);
    return null;
  }
  if (o.before !== undefined && o.all === undefined) {
    checkKeys('options', o, PURGE_BEFORE_KEYS);
    return checkDate('options.before', o.before);
  }
  throw RheoError.invalid('options', 'must be { before: Date } or { all: true }');
}
