import { RheoError } from '../../core/errors';
import type { DeadLetter, GroupInfo, Lag, RheoEvent } from '../../core/types';
import type { ReplayRequest, ResolvedStart } from '../backend';
import { copyGroupConfig } from '../copies';
import { keyPlaces } from '../../core/flow';
import { groupOf, liveLeases, startParts, wake, type Delivery, type MemGroup, type MemoryContext, type MemStream } from './context';
import { recountKeys, waitingForKey } from './keys';
import { activePause } from './pause';
import { toEvent, type StoredEvent } from './partition-log';

// The recovery section: replay, reset and redrive move a group back; lag, groupInfo and
// the dead-letter reads tell where it stands.

export async function replay(ctx: MemoryContext, req: ReplayRequest): Promise<number> {
  const { s, g } = groupOf(ctx, req.stream, req.group);
  let reopened = 0;
  if (req.kind === 'events') {
    for (const e of req.events) reopened += reopen(s, g, e.id, e.partition, e.sequence) ? 1 : 0;
  } else {
    for (const p of req.partitions ?? s.log.map((_, i) => i)) {
      const log = s.log[p];
      const wanted = req.kind === 'sequence' ? Math.min(req.afterSequence, log.hwm) : log.firstAtOrAfter(req.from.getTime()) - 1;
      const after = Math.max(wanted, log.trimmedTo);
      const part = g.parts[p];
      for (const seq of [...part.deliveries.keys()]) {
        if (seq > after) {
          part.deliveries.delete(seq);
          part.open.delete(seq);
        }
      }
      for (const [id, dl] of g.dead) if (dl.partition === p && dl.sequence > after) g.dead.delete(id);
      g.deadOrder = null;
      part.cursor = after + 1;
      part.frontier = Math.min(part.frontier, after);
      reopened += log.hwm - after;
    }
  }
  recountAll(ctx, s, g);
  wake(s);
  return reopened;
}

/** Make one delivered event available again and pull the frontier back before it. */
function reopen(s: MemStream, g: MemGroup, eventId: string, p: number, seq: number): boolean {
  const part = g.parts[p];
  g.dead.delete(eventId);
  g.deadOrder = null;
  if (seq >= part.cursor) return false; // never delivered: already pending
  const before = part.deliveries.get(seq);
  const d: Delivery = {
    sequence: seq,
    state: 'available',
    attempt: 0,
    leaseId: null,
    consumerId: null,
    leasedAt: 0,
    expiresAt: 0,
    // A delayed event never offered yet (parked: available at attempt 0) keeps its time (ADR 028).
    availableAt: before && before.state === 'available' && before.attempt === 0 ? before.availableAt : 0,
    key: keyPlaces(g.config) === null ? null : s.log[p].get(seq)!.key,
  };
  // In a group with key places it waits for one, taken in sequence order by recountKeys.
  if (d.key !== null) d.state = 'waiting';
  part.deliveries.set(seq, d);
  part.open.add(seq);
  part.frontier = Math.min(part.frontier, seq - 1);
  return true;
}

/** Key places counted again in every partition (keys.ts), after a path that moved many deliveries. */
export function recountAll(ctx: MemoryContext, s: MemStream, g: MemGroup): void {
  const now = ctx.clock.now();
  g.parts.forEach((part, p) => recountKeys(s, g, part, p, now));
}

export async function reset(ctx: MemoryContext, stream: string, group: string, start: ResolvedStart): Promise<void> {
  const { s, g } = groupOf(ctx, stream, group);
  g.parts = startParts(s, start);
  g.rateLog = [];
  g.dead.clear();
  g.deadOrder = null;
  wake(s);
}

export async function redrive(ctx: MemoryContext, stream: string, group: string, eventIds: string[] | 'all'): Promise<number> {
  const { s, g } = groupOf(ctx, stream, group);
  // A dead letter whose event was trimmed has nothing left to deliver: it stays listed until purged.
  const live = (id: string) => {
    const dl = g.dead.get(id);
    return dl !== undefined && dl.sequence > s.log[dl.partition].trimmedTo;
  };
  const ids = eventIds === 'all' ? [...g.dead.keys()].filter(live) : eventIds.filter(live);
  for (const id of ids) {
    const dl = g.dead.get(id)!;
    reopen(s, g, id, dl.partition, dl.sequence);
  }
  recountAll(ctx, s, g);
  if (ids.length) wake(s);
  return ids.length;
}

export async function lag(ctx: MemoryContext, stream: string, group: string): Promise<Lag> {
  const { s, g } = groupOf(ctx, stream, group);
  const partitions = g.parts.map((part, p) => {
    const highWatermark = s.log[p].hwm;
    return { partition: p, frontier: part.frontier, highWatermark, lag: Math.max(0, highWatermark - part.frontier) };
  });
  return { stream, group, lag: partitions.reduce((n, x) => n + x.lag, 0), partitions };
}

export async function groupInfo(ctx: MemoryContext, stream: string, group: string): Promise<GroupInfo> {
  const { s, g } = groupOf(ctx, stream, group);
  const now = ctx.clock.now();
  const inflight = liveLeases(g, now);
  let oldest: number | null = null;
  g.parts.forEach((part, p) => {
    const next = s.log[p].get(part.frontier + 1);
    // A delayed event is unsettled from its deliverAt on (before, it is not due: age 0).
    const since = next ? Math.max(next.timestamp, next.deliverAt ?? next.timestamp) : null;
    if (since !== null && (oldest === null || since < oldest)) oldest = since;
  });
  return {
    stream,
    group,
    lag: await lag(ctx, stream, group),
    inflight,
    deadLetters: g.dead.size,
    oldestUnsettledAgeMs: oldest === null ? null : Math.max(0, now - oldest),
    config: copyGroupConfig(g.config),
    waitingForKey: waitingForKey(g),
    paused: activePause(g, now),
    skipped: { count: g.skips.count, lastReason: g.skips.lastReason, lastAt: g.skips.lastAt === null ? null : new Date(g.skips.lastAt) },
  };
}

export async function deadLetters(ctx: MemoryContext, stream: string, group: string, limit: number, after?: string): Promise<DeadLetter[]> {
  const { s, g } = groupOf(ctx, stream, group);
  g.deadOrder ??= [...g.dead.entries()].sort(([, a], [, b]) => a.partition - b.partition || a.sequence - b.sequence).map(([id]) => id);
  const order = g.deadOrder;
  let from = 0;
  if (after !== undefined) {
    const cut = g.dead.get(after);
    if (!cut) throw RheoError.invalid('after', `is not a dead-lettered event id of group "${group}"`);
    from = lowerBound(order, (id) => comparePosition(g.dead.get(id)!, cut) <= 0);
  }
  return order
    .slice(from, from + limit)
    .map((id) => [id, g.dead.get(id)!] as const)
    .map(([id, dl]) => ({
      stream,
      group,
      eventId: id,
      partition: dl.partition,
      sequence: dl.sequence,
      reason: dl.reason,
      attempt: dl.attempt,
      deadLetteredAt: new Date(dl.at),
      event: eventOrNull(stream, s.log[dl.partition].get(dl.sequence)),
    }));
}

export async function countDeadLetters(ctx: MemoryContext, stream: string, group: string, since: Date | null): Promise<number> {
  const { g } = groupOf(ctx, stream, group);
  if (since === null) return g.dead.size;
  const from = since.getTime();
  let n = 0;
  for (const dl of g.dead.values()) if (dl.at >= from) n++;
  return n;
}

function comparePosition(a: { partition: number; sequence: number }, b: { partition: number; sequence: number }): number {
  return a.partition - b.partition || a.sequence - b.sequence;
}

/** First index of `sorted` for which `before` is false (`before` holds for a prefix). */
function lowerBound<T>(sorted: T[], before: (item: T) => boolean): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (before(sorted[mid])) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function eventOrNull(stream: string, e: StoredEvent | undefined): RheoEvent | null {
  return e ? toEvent(stream, e) : null;
}
