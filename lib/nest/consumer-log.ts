// The words of RheoServer's log lines about a consumer: one place, so the lines
// stay alike and docs/observability.md can quote them. A settled nack becomes a
// retry line or, on the group's last attempt, a dead-letter line, with the delay
// the store applied, as the settle's result tells them (else the outcome's delay,
// or the group's backoff for that attempt, by the config this process read). A
// dead letter a fetch made (an expired lease on the last attempt) has its own line.
import type { SettleWritten } from '../backends/backend';
import { backoffDelay } from '../core/backoff';
import type { Outcome } from '../core/outcomes';
import { writtenOutcome } from '../core/settle';
import type { GroupConfig, Lease } from '../core/types';
import type { ClaimDeadLetterEvent } from '../runtime/consumer-types';
import type { RheoConsumerSettingsSnapshot, RheoEventConsumer } from './rheo-events';

/** `Class.method (stream/group)`: how every line names a consumer. */
export function consumerLabel(c: RheoEventConsumer): string {
  return `${c.handlerName} (${c.stream}/${c.group})`;
}

/** `maxDemand 10, concurrency 1, ...`: the settings as one line segment (the consumer id is random by default, so left out). */
export function settingsText(s: RheoConsumerSettingsSnapshot): string {
  const { initialMs, factor, maxMs } = s.retry;
  return [
    `maxDemand ${s.maxDemand}`,
    `concurrency ${s.concurrency}`,
    `leaseMs ${s.leaseMs}`,
    `pollMs ${s.pollMs}`,
    `partitions ${s.partitions ? s.partitions.join(',') : 'all'}`,
    `maxAttempts ${s.maxAttempts}`,
    `retry ${initialMs} ms x${factor} up to ${maxMs} ms`,
    `ordering ${s.ordering}`,
    ...(s.keyConcurrency === undefined ? [] : [`keyConcurrency ${s.keyConcurrency}`]),
    ...(s.groupConcurrency === undefined ? [] : [`groupConcurrency ${s.groupConcurrency}`]),
    ...(s.rateLimit === undefined ? [] : [`rateLimit ${s.rateLimit.max} per ${s.rateLimit.perMs} ms`]),
  ].join(', ');
}

/** What a written non-ack outcome meant for the event. */
export type SettleReport =
  | { kind: 'retry'; reason: string; delayMs: number; maxAttempts: number }
  | { kind: 'dead_letter'; reason: string; cause: 'rejected' | 'max_attempts'; maxAttempts: number };

/**
 * A written outcome in terms of retries and dead letters (null for an ack): as the
 * store says it wrote it (`stored`: by the group's settings as stored, which
 * another process may have changed), else by `config` (a nack on the last
 * attempt dead-letters).
 */
export function settleReport(lease: Lease, outcome: Outcome, config: GroupConfig, stored?: SettleWritten): SettleReport | null {
  if (outcome.kind === 'ack') return null;
  const maxAttempts = stored?.maxAttempts ?? config.maxAttempts;
  const written = stored?.outcome ?? writtenOutcome(outcome.kind, lease.attempt, maxAttempts);
  if (written !== 'retry') {
    return { kind: 'dead_letter', reason: outcome.reason, cause: written === 'reject' ? 'rejected' : 'max_attempts', maxAttempts };
  }
  // A retry is a nack: the delay the store applied, else its own, else the group's backoff for this attempt.
  const delayMs = stored?.delayMs ?? (outcome.kind === 'nack' ? outcome.delayMs : undefined) ?? backoffDelay(config.retry, lease.attempt);
  return { kind: 'retry', reason: outcome.reason, delayMs, maxAttempts };
}

/** The one WARN line of a dead letter a fetch made: the lease of the event's last attempt expired unsettled. */
export function expiredDeadLetterLine(c: RheoEventConsumer, d: ClaimDeadLetterEvent, maxAttempts: number): string {
  return `${consumerLabel(c)}: event ${d.eventId} dead-lettered (attempt ${d.attempt}/${maxAttempts}, lease expired): ${d.reason}`;
}

/** The one WARN line of a retry or a dead letter. */
export function settleLine(c: RheoEventConsumer, lease: Lease, r: SettleReport): string {
  const at = `attempt ${lease.attempt}/${r.maxAttempts}`;
  const head = `${consumerLabel(c)}: event ${lease.event.id}`;
  if (r.kind === 'retry') return `${head} failed (${at}), retrying in ${r.delayMs} ms: ${r.reason}`;
  return r.cause === 'rejected'
    ? `${head} dead-lettered (rejected, ${at}): ${r.reason}`
    : `${head} dead-lettered (${at}, no attempts left): ${r.reason}`;
}
