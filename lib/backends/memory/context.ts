import type { Clock } from '../../core/clock';
import { RheoError } from '../../core/errors';
import type { GroupConfig, GroupPause, StreamInfo } from '../../core/types';
import type { ResolvedStart } from '../backend';
import type { KeyBook } from './keys';
import type { PartitionLog, StoredEvent } from './partition-log';

/** 'waiting': open, but waiting for a place of its key (keys.ts), so never claimable. */
type DeliveryState = 'available' | 'leased' | 'acked' | 'dead' | 'waiting';

/** Per-group state of one event that has been delivered at least once. */
export interface Delivery {
  sequence: number;
  state: DeliveryState;
  attempt: number;
  leaseId: string | null;
  consumerId: string | null;
  leasedAt: number;
  expiresAt: number;
  availableAt: number;
  /** The event's key in a group with key places (keys.ts), else null: not counted. */
  key: string | null;
}

/**
 * One partition as seen by one group. Events from `cursor` up are fresh (never
 * delivered) and need no record; `deliveries` holds every delivered event above
 * the frontier, plus none below it: once the frontier passes a terminal event its
 * record is dropped (dead letters live on in the group's dead-letter index).
 */
export interface GroupPartition {
  cursor: number;
  frontier: number;
  deliveries: Map<number, Delivery>;
  /** Sequences of `deliveries` that are not terminal: the only ones fetch scans. */
  open: Set<number>;
  /** In a group with key places: what each key holds (keys.ts); made on first use. */
  keys?: KeyBook;
}

/** One dead letter of a group, keyed by event id in {@link MemGroup.dead}. */
export interface DeadEntry {
  partition: number;
  sequence: number;
  reason: string;
  attempt: number;
  at: number;
}

export interface MemGroup {
  config: GroupConfig;
  parts: GroupPartition[];
  dead: Map<string, DeadEntry>;
  /** Event ids of `dead` in (partition, sequence) order, rebuilt on the first page read after a change. */
  deadOrder: string[] | null;
  /** Rotates the partition fetch starts from, so no partition starves. */
  nextPartition: number;
  /** Set by pauseGroup, cleared by resumeGroup; one past its `until` holds nothing back (see pause.ts). */
  pause?: GroupPause;
  /** The deliveries skipped (skip, cancelDelayed): how many, the last one's reason and time (ms). */
  skips: { count: number; lastReason: string | null; lastAt: number | null };
  /** The rate limit's recent starts (core/flow.ts RateLog); empty without one. */
  rateLog: number[];
}

export interface MemStream {
  info: StreamInfo;
  log: PartitionLog[];
  byId: Map<string, StoredEvent>;
  groups: Map<string, MemGroup>;
  /** Whoever waits for news of this stream (see coordination.ts); woken, they look again. */
  waiters: Set<() => void>;
}

/** A job's turn (claimTurn): who holds it and until when, ms. */
export interface Turn {
  holder: string;
  until: number;
}

/**
 * The in-memory store: everything the memory backend's sections share. Its maps
 * are the store itself, so the backend keeps no `Registrations` (the facade keeps
 * its own, docs/adr/044-registrations-in-one-layer.md).
 */
export interface MemoryContext {
  readonly clock: Clock;
  readonly streams: Map<string, MemStream>;
  readonly turns: Map<string, Turn>;
  /** Set by close: every operation but wait refuses from then on. */
  closed: boolean;
}

/** A new, empty store. */
export function memoryContext(clock: Clock): MemoryContext {
  return { clock, streams: new Map(), turns: new Map(), closed: false };
}

/** Refuse once the backend is closed. */
export function open(ctx: MemoryContext): void {
  if (ctx.closed) throw new RheoError('backend_unavailable', 'the memory backend is closed');
}

export function streamOf(ctx: MemoryContext, name: string): MemStream {
  open(ctx);
  const s = ctx.streams.get(name);
  if (!s) throw RheoError.streamNotFound(name);
  return s;
}

export function groupOf(ctx: MemoryContext, stream: string, group: string): { s: MemStream; g: MemGroup } {
  const s = streamOf(ctx, stream);
  const g = s.groups.get(group);
  if (!g) throw RheoError.groupNotFound(stream, group);
  return { s, g };
}

/** Wake everyone waiting on the stream. */
export function wake(s: MemStream): void {
  const waiters = [...s.waiters];
  s.waiters.clear();
  for (const w of waiters) w();
}

/** A group's partitions as they stand when it starts (createGroup) or starts over (reset) at `start`. */
export function startParts(s: MemStream, start: ResolvedStart): GroupPartition[] {
  return s.log.map((log, p) => {
    let after = 0;
    if (start.kind === 'end') after = log.hwm;
    else if (start.kind === 'after') after = typeof start.sequences === 'number' ? start.sequences : (start.sequences[p] ?? 0);
    else if (start.kind === 'at') after = log.firstAtOrAfter(start.time.getTime()) - 1;
    // Nothing at or below the trim point exists any more: start after it.
    after = Math.max(after, log.trimmedTo);
    return { cursor: after + 1, frontier: after, deliveries: new Map(), open: new Set() };
  });
}

/**
 * Walk the frontier forward over terminal deliveries, dropping their records.
 * A sequence below the cursor with no record was terminal and already dropped.
 */
export function advance(part: GroupPartition): void {
  for (;;) {
    const next = part.frontier + 1;
    if (next >= part.cursor) return;
    const d = part.deliveries.get(next);
    if (d && d.state !== 'acked' && d.state !== 'dead') return;
    if (d) part.deliveries.delete(next);
    part.frontier = next;
  }
}

/** The group's live leases (leased, not expired at `now`), across every partition: groupInfo's inflight, groupConcurrency's count. */
export function liveLeases(g: MemGroup, now: number): number {
  let n = 0;
  for (const part of g.parts)
    for (const q of part.open) {
      const d = part.deliveries.get(q)!;
      if (d.state === 'leased' && d.expiresAt > now) n++;
    }
  return n;
}
