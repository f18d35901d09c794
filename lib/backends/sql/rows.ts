import type {
  DeadLetter,
  EventMetadata,
  FlowLimits,
  GroupConfig,
  GroupInfo,
  GroupPause,
  JsonValue,
  Lag,
  Ordering,
  Retention,
  RheoEvent,
  StreamInfo,
} from '../../core/types';
import { copyGroupConfig } from '../copies';

// The rows both dialects' SELECTs return, one interface per column list (the
// dialect-only ones are in postgres/plans.ts and sqlite/plans.ts, next to their
// statements), and their mapping to core's types.

/** An integer column: PostgreSQL's bigint (and count) arrives as a string (pg keeps all 64 bits), the rest as a number. */
export type DbInt = number | string;

/** Every column of `T` null: the columns of a LEFT JOIN that found no row. */
export type DbNulls<T> = { [K in keyof T]: null };

/**
 * A stream: rheo_streams (getStream, listStreams, createStream, setRetention).
 * The retention columns are null when unset.
 */
export interface DbStream {
  name: string;
  partitions: DbInt;
  created_at: DbInt;
  max_age_ms?: DbInt | null;
  max_events?: DbInt | null;
  dead_letter_max_age_ms?: DbInt | null;
}

/** A group: rheo_groups, `SELECT *` (getGroup, listGroups, createGroup). */
export interface DbGroup {
  stream: string;
  name: string;
  max_attempts: DbInt;
  retry_initial_ms: DbInt;
  retry_factor: DbInt;
  retry_max_ms: DbInt;
  ordering: string;
  created_at: DbInt;
  /**
   * The group's pause (schema version 4, docs/adr/046-pausing-a-group.md): when it
   * was set (null: never paused, or resumed), its `until` (null: until resumed),
   * reason and who. What groupInfo shows; the claim's gate is `paused_to` on the
   * group's partition rows, written in the same transaction.
   */
  paused_at?: DbInt | null;
  paused_until?: DbInt | null;
  pause_reason?: string | null;
  paused_by?: string | null;
  /**
   * The group's flow limits (schema version 6, docs/adr/049-flow-control.md), null
   * when it has none: `rate_max` and `rate_per_ms` together make its rateLimit.
   */
  key_concurrency?: DbInt | null;
  group_concurrency?: DbInt | null;
  rate_max?: DbInt | null;
  rate_per_ms?: DbInt | null;
}

/**
 * The `paused_to` of a group partition row paused without an `until`: a time no
 * clock reaches (year 287,396), so the claim's one test, `paused_to > now`, covers
 * both kinds of pause. Null is "not paused".
 */
export const PAUSED_UNTIL_RESUMED = Number.MAX_SAFE_INTEGER;

/** The pause a group row holds at `now` by the store's clock, or null: none, or past its `until`. */
export function pauseOf(r: Pick<DbGroup, 'paused_at' | 'paused_until' | 'pause_reason' | 'paused_by'>, now: number): GroupPause | null {
  if (r.paused_at == null) return null;
  const until = r.paused_until == null ? null : Number(r.paused_until);
  if (until !== null && until <= now) return null;
  return {
    pausedAt: new Date(Number(r.paused_at)),
    until: until === null ? null : new Date(until),
    reason: r.pause_reason ?? null,
    by: r.paused_by ?? null,
  };
}

/** An event as every read returns it (each dialect's EVENT_COLUMNS): JSON columns as text, parsed once here. */
export interface DbEvent {
  id: string;
  partition: DbInt;
  sequence: DbInt;
  ts: DbInt;
  key: string | null;
  type: string | null;
  metadata: string;
  payload: string;
  /** A delayed event's deliverAt (ms), null for any other (schema version 3; absent where a statement does not read it). */
  deliver_at?: DbInt | null;
}

/** A partition's high watermark (highWatermarks). */
export interface DbHighWatermark {
  partition: DbInt;
  hwm: DbInt;
}

/** Where a delivery sits (deadLetterPosition, deadById, reopen). */
export interface DbPosition {
  partition: DbInt;
  sequence: DbInt;
}

/** A count (deadCount). */
export interface DbCount {
  n: DbInt;
}

/** Per partition of a group (groupState): high watermark, cursor, derived frontier, live leases, first unsettled event's time. */
export interface DbPartitionState {
  partition: DbInt;
  hwm: DbInt;
  cursor: DbInt;
  frontier: DbInt;
  live: DbInt;
  oldest_ts: DbInt | null;
  /** Deliveries waiting for their key (schema version 6); absent where the query does not count them. */
  waiting_key?: DbInt | null;
}

/**
 * A dead letter (deadLetters): the dead letter's columns, then the event's, all
 * null when the event row is gone (trimmed). `d_event_id`, where the dialect
 * stores it, names the event even then.
 */
export type DbDeadLetter = {
  d_partition: DbInt;
  d_sequence: DbInt;
  d_event_id?: string;
  reason: string | null;
  attempt: DbInt;
  dead_at: DbInt;
} & (DbEvent | DbNulls<DbEvent>);

/** JSON columns arrive as text from both dialects; parsing yields a fresh object every time. */
function json<T>(text: string): T {
  return JSON.parse(text) as T;
}

/** An event's metadata from its stored text: most events carry none, and '{}' needs no parser to become a fresh empty object. */
export function metadataOf(text: string): EventMetadata {
  return text === '{}' ? {} : json<EventMetadata>(text);
}

export function toEvent(stream: string, r: DbEvent): RheoEvent {
  const event: RheoEvent = {
    id: r.id,
    stream,
    partition: Number(r.partition),
    sequence: Number(r.sequence),
    timestamp: new Date(Number(r.ts)),
    key: r.key,
    type: r.type,
    metadata: metadataOf(r.metadata),
    payload: json<JsonValue>(r.payload),
  };
  // Only a delayed event has it: events without a delay read exactly as before.
  if (r.deliver_at != null) event.deliverAt = new Date(Number(r.deliver_at));
  return event;
}

export function toStream(r: DbStream): StreamInfo {
  const info: StreamInfo = { name: r.name, partitions: Number(r.partitions), createdAt: new Date(Number(r.created_at)) };
  const retention: Retention = {};
  if (r.max_age_ms != null) retention.maxAgeMs = Number(r.max_age_ms);
  if (r.max_events != null) retention.maxEvents = Number(r.max_events);
  if (r.dead_letter_max_age_ms != null) retention.deadLetterMaxAgeMs = Number(r.dead_letter_max_age_ms);
  // Present only when a limit is set, with only the set limits.
  if (Object.keys(retention).length > 0) info.retention = retention;
  return info;
}

/** A retention as the three nullable columns of rheo_streams (max_age_ms, max_events, dead_letter_max_age_ms). */
export function retentionColumns(retention: Retention | undefined): [number | null, number | null, number | null] {
  return [retention?.maxAgeMs ?? null, retention?.maxEvents ?? null, retention?.deadLetterMaxAgeMs ?? null];
}

export function toGroup(r: DbGroup): GroupConfig {
  return {
    stream: r.stream,
    group: r.name,
    maxAttempts: Number(r.max_attempts),
    retry: { initialMs: Number(r.retry_initial_ms), factor: Number(r.retry_factor), maxMs: Number(r.retry_max_ms) },
    ordering: r.ordering as Ordering,
    keyConcurrency: nullableInt(r.key_concurrency),
    groupConcurrency: nullableInt(r.group_concurrency),
    rateLimit: r.rate_max == null || r.rate_per_ms == null ? null : { max: Number(r.rate_max), perMs: Number(r.rate_per_ms) },
    createdAt: new Date(Number(r.created_at)),
  };
}

function nullableInt(v: DbInt | null | undefined): number | null {
  return v == null ? null : Number(v);
}

/** The flow-limit columns of rheo_groups (schema version 6), in the order the create and update statements take them. */
export function flowColumns(c: FlowLimits): [number | null, number | null, number | null, number | null] {
  return [c.keyConcurrency, c.groupConcurrency, c.rateLimit?.max ?? null, c.rateLimit?.perMs ?? null];
}

/** Lag from the per-partition rows of a group-state query (hwm, derived frontier). */
export function lagOf(stream: string, group: string, rows: DbPartitionState[]): Lag {
  const partitions = rows.map((r) => {
    const highWatermark = Number(r.hwm);
    const frontier = Number(r.frontier);
    return { partition: Number(r.partition), frontier, highWatermark, lag: Math.max(0, highWatermark - frontier) };
  });
  return { stream, group, lag: partitions.reduce((n, p) => n + p.lag, 0), partitions };
}

/**
 * A group's info from the per-partition rows of a group-state query, its dead
 * letters' count, its config (copied: the caller may hold the cached one) and its
 * pause (pauseOf), at `now` by the store's clock.
 */
export function groupInfoOf(
  stream: string,
  group: string,
  rows: DbPartitionState[],
  deadLetters: DbInt,
  config: GroupConfig,
  now: number,
): Omit<GroupInfo, 'paused' | 'skipped'> {
  const oldest = rows.reduce<number | null>((m, r) => (r.oldest_ts === null ? m : Math.min(m ?? Infinity, Number(r.oldest_ts))), null);
  return {
    stream,
    group,
    lag: lagOf(stream, group, rows),
    inflight: rows.reduce((n, r) => n + Number(r.live), 0),
    waitingForKey: rows.reduce((n, r) => n + Number(r.waiting_key ?? 0), 0),
    deadLetters: Number(deadLetters),
    oldestUnsettledAgeMs: oldest === null ? null : Math.max(0, now - oldest),
    config: copyGroupConfig(config),
  };
}

/** A dead-letter row (delivery columns plus the event's, null when the event row is gone) as a DeadLetter. */
export function toDeadLetter(stream: string, group: string, r: DbDeadLetter): DeadLetter {
  return {
    stream,
    group,
    eventId: r.d_event_id ?? (r.id as string), // r.id is null when the event row is gone
    partition: Number(r.d_partition),
    sequence: Number(r.d_sequence),
    reason: r.reason ?? '',
    attempt: Number(r.attempt),
    deadLetteredAt: new Date(Number(r.dead_at)),
    event: r.id === null ? null : toEvent(stream, r),
  };
}
