// The JSON API's inputs (query strings, POST bodies) read into the admin
// service's arguments. Only the shape is checked here, with a RheoError naming the
// field (answered 400); names, ids, sequences and times are checked by the admin
// service and the facade behind it, the same as for the CLI.
import { RheoError } from '../../core/errors';
import { MAX_BATCH } from '../../core/limits';
import { checkKeys, checkObject, keySet } from '../../core/validate';
import type { CancelDelayedInput, PauseGroupInput, RescheduleInput, RheoAdminOperations, SkipInput } from '../../admin/types';

export type RedriveTarget = Parameters<RheoAdminOperations['redrive']>[2];
export type ReplayFrom = Parameters<RheoAdminOperations['replay']>[2];

function body(value: unknown): Record<string, unknown> {
  // No body, or one sent as text: Express leaves {}, Fastify undefined.
  return checkObject('body', value ?? {});
}

function only(b: Record<string, unknown>, allowed: string[]): void {
  checkKeys('', b, keySet('accepted here', allowed));
}

/** `?limit=&after=` of the dead-letter list. */
export function deadLetterQuery(query: Record<string, unknown> | undefined): { limit?: number; after?: string } {
  const q = query ?? {};
  const out: { limit?: number; after?: string } = {};
  if (q.limit !== undefined) {
    if (typeof q.limit !== 'string' || !/^\d{1,9}$/.test(q.limit)) throw RheoError.invalid('limit', 'must be a positive integer');
    out.limit = Number(q.limit);
  }
  if (q.after !== undefined) {
    if (typeof q.after !== 'string') throw RheoError.invalid('after', 'must be given once');
    out.after = q.after;
  }
  return out;
}

/** `?limit=&after=` of the overview: a page of streams, `after` the last stream of the page before. */
export function overviewQuery(query: Record<string, unknown> | undefined): { limit?: number; after?: string } {
  const q = query ?? {};
  only(q, ['limit', 'after']);
  return deadLetterQuery(q);
}

/** `{ eventIds: [...] }`, or `{ all: true, confirm: true }`. */
export function redriveBody(value: unknown): RedriveTarget {
  const b = body(value);
  if (b.eventIds !== undefined) {
    only(b, ['eventIds']);
    if (!Array.isArray(b.eventIds) || b.eventIds.length === 0 || b.eventIds.some((id) => typeof id !== 'string')) {
      throw RheoError.invalid('eventIds', 'must be a non-empty array of event ids');
    }
    return { eventIds: b.eventIds as string[] };
  }
  if (b.all === true) {
    only(b, ['all', 'confirm']);
    return { all: true, confirm: b.confirm === true };
  }
  throw RheoError.invalid('eventIds', 'or all: true (with confirm: true) must be given');
}

/** `{ afterSequence: N }`, `{ from: ISO time }` or `{ where: { … } }` (a Query's where). */
export function replayBody(value: unknown): ReplayFrom {
  const b = body(value);
  if (b.afterSequence !== undefined) {
    only(b, ['afterSequence']);
    if (typeof b.afterSequence !== 'number') throw RheoError.invalid('afterSequence', 'must be an integer');
    return { afterSequence: b.afterSequence };
  }
  if (b.from !== undefined) {
    only(b, ['from']);
    if (typeof b.from !== 'string') throw RheoError.invalid('from', 'must be an ISO 8601 time');
    return { from: b.from };
  }
  if (b.where !== undefined) {
    only(b, ['where']);
    return { where: checkObject('where', b.where) };
  }
  throw RheoError.invalid('afterSequence', 'or from (an ISO time) or where must be given');
}

/**
 * `{ start?, confirm: '<the group's name>' }`: the typed confirmation the page
 * asks for is checked here too, so a script or a replayed request cannot reset
 * another group than the one it names twice.
 */
export function resetBody(value: unknown, group: string): { start?: string; confirm: true } {
  const b = body(value);
  only(b, ['start', 'confirm']);
  if (b.confirm !== group) {
    throw new RheoError('confirm_required', `reset forgets every delivery of ${group}: confirm must be the group's name`, {
      field: 'confirm',
    });
  }
  if (b.start !== undefined && typeof b.start !== 'string') throw RheoError.invalid('start', "must be a string ('beginning', 'end', …)");
  return b.start === undefined ? { confirm: true } : { start: b.start, confirm: true };
}

/** `confirm: true`, which a pause, a resume, a skip, a reschedule and a cancel need as the CLI's --confirm: a script must say it means it. */
function confirmed(b: Record<string, unknown>, what: string): true {
  if (b.confirm !== true) throw new RheoError('confirm_required', `${what}: confirm it (confirm: true)`, { field: 'confirm' });
  return true;
}

/** `{ until?, reason?, by?, confirm: true }`: `until` an ISO time or a duration (`30m`, `2h`), checked by the admin service. */
export function pauseBody(value: unknown): PauseGroupInput {
  const b = body(value);
  only(b, ['until', 'reason', 'by', 'confirm']);
  const input: PauseGroupInput = { confirm: confirmed(b, 'pausing stops every process claiming the events of the group') };
  for (const field of ['until', 'reason', 'by'] as const) {
    const v = b[field];
    if (v === undefined) continue;
    if (typeof v !== 'string') throw RheoError.invalid(field, 'must be a string');
    input[field] = v;
  }
  return input;
}

/** `{ confirm: true }`. */
export function resumeBody(value: unknown): { confirm: true } {
  const b = body(value);
  only(b, ['confirm']);
  return { confirm: confirmed(b, 'resuming lets every process claim the events of the group again') };
}

/** `eventIds`: 1 to MAX_BATCH strings (each id's form, and repeats, are the facade's to check). */
function eventIds(value: unknown): string[] {
  if (!Array.isArray(value) || value.length === 0 || value.some((id) => typeof id !== 'string')) {
    throw RheoError.invalid('eventIds', 'must be a non-empty array of event ids');
  }
  if (value.length > MAX_BATCH) throw RheoError.invalid('eventIds', `must hold at most ${MAX_BATCH} event ids (it holds ${value.length})`);
  return value as string[];
}

/** An optional `reason` (its length is the facade's to bound, refused, never cut). */
function reasonOf(b: Record<string, unknown>): { reason?: string } {
  if (b.reason === undefined) return {};
  if (typeof b.reason !== 'string') throw RheoError.invalid('reason', 'must be a string');
  return { reason: b.reason };
}

/** `{ eventIds: [...], reason?, confirm: true }`. */
export function skipBody(value: unknown): SkipInput {
  const b = body(value);
  only(b, ['eventIds', 'reason', 'confirm']);
  const confirm = confirmed(b, 'skipping settles the deliveries without running the handler');
  return { eventIds: eventIds(b.eventIds), ...reasonOf(b), confirm };
}

/** `{ eventIds: [...], deliverAt: ISO time } | { eventIds: [...], delayMs: N }`, with `confirm: true`. */
export function rescheduleBody(value: unknown): RescheduleInput {
  const b = body(value);
  only(b, ['eventIds', 'deliverAt', 'delayMs', 'confirm']);
  const confirm = confirmed(b, 'rescheduling moves when every process of the group may run the deliveries');
  const ids = eventIds(b.eventIds);
  if ((b.deliverAt === undefined) === (b.delayMs === undefined)) throw RheoError.invalid('delayMs', 'or deliverAt: give exactly one');
  if (b.deliverAt !== undefined) {
    if (typeof b.deliverAt !== 'string') throw RheoError.invalid('deliverAt', 'must be an ISO 8601 time');
    return { eventIds: ids, deliverAt: b.deliverAt, confirm };
  }
  if (typeof b.delayMs !== 'number') throw RheoError.invalid('delayMs', 'must be an integer (ms)');
  return { eventIds: ids, delayMs: b.delayMs, confirm };
}

/** `{ eventId, reason?, confirm: true }`: a delayed event, cancelled in every group of the stream. */
export function cancelDelayedBody(value: unknown): { eventId: string; input: CancelDelayedInput } {
  const b = body(value);
  only(b, ['eventId', 'reason', 'confirm']);
  const confirm = confirmed(b, 'cancelling a delayed event stops every group of the stream from running it');
  if (typeof b.eventId !== 'string') throw RheoError.invalid('eventId', 'must be an event id');
  return { eventId: b.eventId, input: { ...reasonOf(b), confirm } };
}
