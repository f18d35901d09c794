// The facade's records turned into the admin DTOs: plain JSON (ISO strings for
// dates, null for absent, no class instances), so the CLI's --json and the
// dashboard's API print exactly what they get.
import type { DeadLetter, FlowLimits, GroupInfo, GroupPause, JsonValue, RheoEvent, StreamInfo } from '../core/types';
import type { DeadLetterSummary, EventSummary, GroupPauseSummary, GroupSummary, StreamSummary } from './types';

export function streamSummary(info: StreamInfo, highWatermarks: number[]): StreamSummary {
  return {
    name: info.name,
    partitions: info.partitions,
    createdAt: info.createdAt.toISOString(),
    retention: info.retention ? { ...info.retention } : null,
    highWatermarks,
    highWatermark: highWatermarks.reduce((a, b) => a + b, 0),
  };
}

export function groupSummary(info: GroupInfo, consumer: string | undefined): GroupSummary {
  const summary: GroupSummary = {
    stream: info.stream,
    group: info.group,
    lag: info.lag.lag,
    inflight: info.inflight,
    deadLetters: info.deadLetters,
    oldestUnsettledAgeMs: info.oldestUnsettledAgeMs,
    maxAttempts: info.config.maxAttempts,
    retry: { ...info.config.retry },
    ordering: info.config.ordering,
    ...flowSummary(info.config),
    waitingForKey: info.waitingForKey,
    partitions: info.lag.partitions.map(({ partition, frontier, highWatermark, lag }) => ({ partition, frontier, highWatermark, lag })),
    skipped: {
      count: info.skipped.count,
      lastReason: info.skipped.lastReason,
      lastAt: info.skipped.lastAt === null ? null : info.skipped.lastAt.toISOString(),
    },
    warnings: [...(info.warnings ?? [])],
    paused: info.paused ? pauseSummary(info.paused) : null,
  };
  if (consumer !== undefined) summary.consumer = consumer;
  return summary;
}

/** A group's flow limits, each null when it has none. */
export function flowSummary(c: FlowLimits): Pick<GroupSummary, 'keyConcurrency' | 'groupConcurrency' | 'rateLimit'> {
  return { keyConcurrency: c.keyConcurrency, groupConcurrency: c.groupConcurrency, rateLimit: c.rateLimit ? { ...c.rateLimit } : null };
}

export function pauseSummary(p: GroupPause): GroupPauseSummary {
  return { pausedAt: p.pausedAt.toISOString(), until: p.until ? p.until.toISOString() : null, reason: p.reason, by: p.by };
}

export function deadLetterSummary(d: DeadLetter, withPayload: boolean): DeadLetterSummary {
  const summary: DeadLetterSummary = {
    eventId: d.eventId,
    partition: d.partition,
    sequence: d.sequence,
    reason: d.reason,
    attempt: d.attempt,
    deadLetteredAt: d.deadLetteredAt.toISOString(),
    type: d.event ? d.event.type : null,
    key: d.event ? d.event.key : null,
  };
  if (withPayload) summary.payload = d.event ? d.event.payload : null;
  return summary;
}

export function eventSummary(e: RheoEvent): EventSummary {
  return {
    id: e.id,
    partition: e.partition,
    sequence: e.sequence,
    timestamp: e.timestamp.toISOString(),
    type: e.type,
    key: e.key,
    // Metadata values are JSON already; a key whose value is undefined is not stored.
    metadata: JSON.parse(JSON.stringify(e.metadata)) as Record<string, JsonValue>,
    payload: e.payload,
  };
}
