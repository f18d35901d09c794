import type { DeadLetter, EventMetadata, GroupConfig, JsonValue, Lag, Ordering, RheoEvent, StreamInfo } from '../../core/types';

/** An event row as both dialects return it (bigints may arrive as strings, JSON as text or parsed). */
export interface EventRow {
  id: string;
  partition: number | string;
  sequence: number | string;
  ts: number | string;
  key: string | null;
  type: string | null;
  metadata: unknown;
  payload: unknown;
}

/** JSON columns arrive as text from both dialects; parsing yields a fresh object every time. */
function json<T>(value: unknown): T {
  return JSON.parse(value as string) as T;
}

export function toEvent(stream: string, r: EventRow): RheoEvent {
  return {
    id: r.id,
    stream,
    partition: Number(r.partition),
    sequence: Number(r.sequence),
    timestamp: new Date(Number(r.ts)),
    key: r.key,
    type: r.type,
    metadata: json<EventMetadata>(r.metadata),
    payload: json<JsonValue>(r.payload),
  };
}

export function toStream(r: { name: string; partitions: number | string; created_at: number | string }): StreamInfo {
  return { name: r.name, partitions: Number(r.partitions), createdAt: new Date(Number(r.created_at)) };
}

export interface GroupRow {
  stream: string;
  name: string;
  max_attempts: number | string;
  retry_initial_ms: number | string;
  retry_factor: number | string;
  retry_max_ms: number | string;
  ordering: string;
  created_at: number | string;
}

export function toGroup(r: GroupRow): GroupConfig {
  return {
    stream: r.stream,
    group: r.name,
    maxAttempts: Number(r.max_attempts),
    retry: { initialMs: Number(r.retry_initial_ms), factor: Number(r.retry_factor), maxMs: Number(r.retry_max_ms) },
    ordering: r.ordering as Ordering,
    createdAt: new Date(Number(r.created_at)),
  };
}

/** A fresh copy, so a caller mutating what it got back never touches a cache. */
export function copyGroup(g: GroupConfig): GroupConfig {
  return { ...g, retry: { ...g.retry }, createdAt: new Date(g.createdAt.getTime()) };
}

export function copyStream(s: StreamInfo): StreamInfo {
  return { ...s, createdAt: new Date(s.createdAt.getTime()) };
}

/** Lag from the per-partition rows of a group-state query (hwm, derived frontier). */
export function lagOf(stream: string, group: string, rows: Array<Record<string, unknown>>): Lag {
  const partitions = rows.map((r) => {
    const highWatermark = Number(r.hwm);
    const frontier = Number(r.frontier);
    return { partition: Number(r.partition), frontier, highWatermark, lag: Math.max(0, highWatermark - frontier) };
  });
  return { stream, group, lag: partitions.reduce((n, p) => n + p.lag, 0), partitions };
}

/** A dead-letter row (delivery columns plus the event's, null when the event row is gone) as a DeadLetter. */
export function toDeadLetter(stream: string, group: string, r: Record<string, unknown>): DeadLetter {
  return {
    stream,
    group,
    eventId: r.id as string,
    partition: Number(r.d_partition),
    sequence: Number(r.d_sequence),
    reason: (r.reason as string | null) ?? '',
    attempt: Number(r.attempt),
    deadLetteredAt: new Date(Number(r.dead_at)),
    event: r.id === null ? null : toEvent(stream, r as unknown as EventRow),
  };
}
