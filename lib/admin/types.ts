// What an operator sees and does: the one admin service behind the `rheo` command
// line, the dashboard's JSON API and RheoClient's admin methods, so the three
// never disagree. Every figure is JSON-ready (dates as ISO strings, no class
// instances), because the CLI prints it with --json and the dashboard sends it
// over HTTP as it is.
import type { EventMetadata, JsonValue, Retention } from '../core/types';

/** A stream, with its size. */
export interface StreamSummary {
  name: string;
  partitions: number;
  createdAt: string;
  retention: Retention | null;
  /** Per partition, the last sequence appended (0 when empty). */
  highWatermarks: number[];
  /** Sum of the high watermarks: events ever appended (trimmed ones included). */
  highWatermark: number;
}

/** One consumer group's state. */
export interface GroupSummary {
  stream: string;
  group: string;
  lag: number;
  inflight: number;
  deadLetters: number;
  oldestUnsettledAgeMs: number | null;
  maxAttempts: number;
  /** The backoff between a failed delivery's attempts, as stored. */
  retry: { initialMs: number; factor: number; maxMs: number };
  ordering: string;
  /** At most this many open deliveries per key (`keyConcurrency`), or null: none. */
  keyConcurrency: number | null;
  /** At most this many leases of the group in flight at once (`groupConcurrency`), or null: none. */
  groupConcurrency: number | null;
  /** At most `max` deliveries started per `perMs` ms (`rateLimit`), or null: none. */
  rateLimit: { max: number; perMs: number } | null;
  /** Events the group has reached that wait for their key (GroupInfo.waitingForKey). */
  waitingForKey: number;
  /** Per partition: frontier, high watermark, lag. */
  partitions: Array<{ partition: number; frontier: number; highWatermark: number; lag: number }>;
  /** The group's skips (GroupInfo.skipped), the time as ISO. */
  skipped: { count: number; lastReason: string | null; lastAt: string | null };
  /** Store conditions that put the group's data at risk (GroupInfo.warnings). */
  warnings: string[];
  /** The pause holding the group back (`Rheo#pauseGroup`), or null when it claims as usual. */
  paused: GroupPauseSummary | null;
  /**
   * The state of the consumer this process runs for the group (`running`,
   * `backing_off`, …) when the service was given the process's consumers (the
   * dashboard inside a Nest app); absent otherwise (the CLI).
   */
  consumer?: string;
}

/** A group's pause, JSON-ready (GroupPause with ISO times). */
export interface GroupPauseSummary {
  /** When it was paused, by the store's clock. */
  pausedAt: string;
  /** When it resumes by itself, or null: until someone resumes it. */
  until: string | null;
  /** Why, as the operator wrote it, or null. */
  reason: string | null;
  /** Who paused it, as given, or null. */
  by: string | null;
}

/** One page of the dashboard's overview: streams in name order, each with its groups. */
export interface Overview {
  /** When it was read (the backend's clock), ISO. */
  at: string;
  /** Streams in the store, all pages together. */
  total: number;
  /** How many streams (in name order) come before this page's first. */
  offset: number;
  /** The `after` of the next page: the name of this page's last stream; null on the last page. */
  next: string | null;
  streams: Array<StreamSummary & { groups: GroupSummary[] }>;
}

/** A dead letter as shown to an operator. */
export interface DeadLetterSummary {
  eventId: string;
  partition: number;
  sequence: number;
  reason: string;
  attempt: number;
  deadLetteredAt: string;
  /** The event's type and key; null when the event was trimmed. */
  type: string | null;
  key: string | null;
  /** Only when asked for (`withPayloads`): the payload, or null when the event was trimmed. */
  payload?: JsonValue | null;
}

/** An event as shown by `tail`. */
export interface EventSummary {
  id: string;
  partition: number;
  sequence: number;
  timestamp: string;
  type: string | null;
  key: string | null;
  metadata: Record<string, JsonValue>;
  payload: JsonValue;
}

/** A page of dead letters; `next` is the `after` of the next page, or null. */
export interface DeadLetterPage {
  items: DeadLetterSummary[];
  next: string | null;
}

/** Who asks, for the admin log lines ("redrive by dashboard", "by cli"). */
export type AdminActor = 'cli' | 'dashboard' | 'client';

/**
 * The admin operations. Inputs are validated by the core facade (RheoError
 * naming the field); destructive ones (`reset`, `redrive` of all, forced
 * `trim`) take `confirm: true` and refuse without it (`confirm_required`).
 */
export interface RheoAdminOperations {
  /** A page of streams with their groups: at most `limit` (default 100, at most 1000) after the stream named `after`. */
  overview(options?: { limit?: number; after?: string }): Promise<Overview>;
  streams(): Promise<StreamSummary[]>;
  groups(stream: string): Promise<GroupSummary[]>;
  group(stream: string, group: string): Promise<GroupSummary>;
  deadLetters(stream: string, group: string, options?: { limit?: number; after?: string; withPayloads?: boolean }): Promise<DeadLetterPage>;
  redrive(stream: string, group: string, target: { eventIds: string[] } | { all: true; confirm: boolean }): Promise<{ redriven: number }>;
  replay(
    stream: string,
    group: string,
    from: { afterSequence: number } | { from: string | Date } | { where: Record<string, unknown> },
  ): Promise<{ replayed: number }>;
  reset(stream: string, group: string, options: { start?: string; confirm: boolean }): Promise<{ reset: true }>;
  trim(stream: string, options?: { force?: boolean; confirm?: boolean }): Promise<{ removed: number; skipped: Record<string, number> }>;
  purgeDeadLetters(stream: string, group: string, options: { before?: string | Date; all?: boolean }): Promise<{ purged: number }>;
  /**
   * Change a group's stored settings in place (`Rheo#updateGroup`); needs `confirm: true`.
   * Returns the group's settings as stored after the change.
   */
  updateGroup(stream: string, group: string, options: UpdateGroupInput): Promise<GroupSettingsSummary>;
  /**
   * Stop every process claiming the group's events (`Rheo#pauseGroup`); needs `confirm: true`.
   * `until` is an ISO time or a duration such as `30m`, `2h`, `1d`. Returns the pause as stored.
   */
  pauseGroup(stream: string, group: string, options: PauseGroupInput): Promise<GroupPauseSummary>;
  /** Let the group claim again (`Rheo#resumeGroup`); needs `confirm: true`. `resumed` says whether a pause was holding it. */
  resumeGroup(stream: string, group: string, options: { confirm: boolean }): Promise<{ resumed: boolean }>;
  /**
   * Settle waiting deliveries of a group as handled, the handler never run (`Rheo#skip`,
   * docs/adr/048-skip-reschedule-cancel.md); needs `confirm: true`. Per id, in order.
   */
  skip(stream: string, group: string, options: SkipInput): Promise<WaitingResultSummary>;
  /** Make waiting deliveries of a group due at another time (`Rheo#reschedule`); needs `confirm: true`. Per id, in order. */
  reschedule(stream: string, group: string, options: RescheduleInput): Promise<WaitingResultSummary>;
  /** Cancel a delayed event in every group of its stream (`Rheo#cancelDelayed`); needs `confirm: true`. */
  cancelDelayed(stream: string, eventId: string, options: CancelDelayedInput): Promise<{ groups: number }>;
  /**
   * Events of a stream, optionally filtered (Query.where), in (sequence, partition)
   * order: without `cursor` the latest `limit`, with one those after it. `next` is
   * a position per partition, never null: poll with it to follow the stream.
   */
  tail(
    stream: string,
    options?: { where?: Record<string, unknown>; limit?: number; cursor?: string },
  ): Promise<{ items: EventSummary[]; next: string | null }>;
  append(
    stream: string,
    input: { payload: JsonValue; key?: string; type?: string; id?: string; metadata?: EventMetadata },
  ): Promise<EventSummary>;
}

/** What {@link RheoAdminOperations.skip} takes. */
export interface SkipInput {
  eventIds: string[];
  reason?: string;
  confirm: boolean;
}

/** What {@link RheoAdminOperations.reschedule} takes: exactly one of `deliverAt` (ISO) and `delayMs`. */
export interface RescheduleInput {
  eventIds: string[];
  deliverAt?: string | Date;
  delayMs?: number;
  confirm: boolean;
}

/** What {@link RheoAdminOperations.cancelDelayed} takes. */
export interface CancelDelayedInput {
  reason?: string;
  confirm: boolean;
}

/** Per id of a skip or reschedule, in order: done, or the refusal's code and message. JSON-ready. */
export interface WaitingResultSummary {
  /** How many were skipped (or rescheduled). */
  done: number;
  results: Array<{ eventId: string; ok: true } | { eventId: string; ok: false; code: string; message: string }>;
}

/** What {@link RheoAdminOperations.updateGroup} takes: the changes, and the confirmation. */
export interface UpdateGroupInput {
  maxAttempts?: number;
  retry?: { initialMs?: number; factor?: number; maxMs?: number };
  /** A new key limit for a group that has one (it cannot be added or removed in place). */
  keyConcurrency?: number;
  /** A new group-wide limit, or null to remove it. */
  groupConcurrency?: number | null;
  /** A new rate limit, or null to remove it. */
  rateLimit?: { max: number; perMs: number } | null;
  confirm: boolean;
}

/** What {@link RheoAdminOperations.pauseGroup} takes: the pause as an operator types it, and the confirmation. */
export interface PauseGroupInput {
  /** When the group resumes by itself: an ISO 8601 time, or a duration from now (`90s`, `30m`, `2h`, `1d`). */
  until?: string | Date;
  /** Why, shown beside the pause (at most 1,000 characters). */
  reason?: string;
  /** Who, shown beside the reason (at most 256 characters). */
  by?: string;
  confirm: boolean;
}

/** A group's stored settings, JSON-ready. */
export interface GroupSettingsSummary {
  stream: string;
  group: string;
  maxAttempts: number;
  retry: { initialMs: number; factor: number; maxMs: number };
  ordering: 'none' | 'partition' | 'key';
  keyConcurrency: number | null;
  groupConcurrency: number | null;
  rateLimit: { max: number; perMs: number } | null;
}
