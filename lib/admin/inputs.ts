// The admin operations' inputs as an operator types them (a command-line word, a
// form field, a JSON body): times as ISO strings, start positions as words. Each
// is turned here into the facade's vocabulary, so the CLI and the dashboard read
// them the same way; the facade then validates the rest.
import { RheoError } from '../core/errors';
import type { StartPosition } from '../core/types';
import { checkKeys, checkObject, keySet } from '../core/validate';

/** The keys of each admin operation's input object; anything else is refused, naming it and listing these. */
const INPUT_KEYS = {
  admin: keySet('a RheoAdmin option', ['consumers', 'actor', 'log']),
  overview: keySet('an overview option', ['limit', 'after']),
  deadLetters: keySet('a deadLetters option', ['limit', 'after', 'withPayloads']),
  tail: keySet('a tail option', ['where', 'limit', 'cursor']),
  append: keySet('a key of an admin append', ['payload', 'key', 'type', 'id', 'metadata']),
  redrive: keySet('a redrive option', ['eventIds', 'all', 'confirm']),
  replay: keySet('a replay option', ['afterSequence', 'from', 'where']),
  reset: keySet('a reset option', ['start', 'confirm']),
  trim: keySet('a trim option', ['force', 'confirm']),
  purgeDeadLetters: keySet('a purgeDeadLetters option', ['before', 'all']),
  updateGroup: keySet('an updateGroup option', ['maxAttempts', 'retry', 'keyConcurrency', 'groupConcurrency', 'rateLimit', 'confirm']),
  pauseGroup: keySet('a pauseGroup option', ['until', 'reason', 'by', 'confirm']),
  resumeGroup: keySet('a resumeGroup option', ['confirm']),
  skip: keySet('a skip option', ['eventIds', 'reason', 'confirm']),
  reschedule: keySet('a reschedule option', ['eventIds', 'deliverAt', 'delayMs', 'confirm']),
  cancelDelayed: keySet('a cancelDelayed option', ['reason', 'confirm']),
} as const;

/** An admin operation's input object (named `field` in errors): a plain object of its known keys only. */
export function checkInput(operation: keyof typeof INPUT_KEYS, field: string, value: unknown): Record<string, unknown> {
  const o = checkObject(field, value);
  checkKeys(field, o, INPUT_KEYS[operation]);
  return o;
}

/** An ISO 8601 time (a string, or a Date as it is), else a RheoError naming `field`. */
export function parseTime(field: string, value: unknown): Date {
  if (value instanceof Date && !Number.isNaN(value.getTime())) return value;
  // Date.parse alone accepts "1" or "March 7": only ISO-looking text is a time here.
  if (typeof value === 'string' && /^\d{4}-\d{2}-\d{2}([T ]\S+)?$/.test(value)) {
    const date = new Date(value);
    if (!Number.isNaN(date.getTime())) return date;
  }
  throw RheoError.invalid(field, 'must be an ISO 8601 time, e.g. 2025-01-31T12:00:00Z');
}

const DURATION_UNITS: Readonly<Record<string, number>> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * When a pause ends: an ISO 8601 time, or a duration from `now` (the store's
 * clock, ms) written as a whole number and a unit, `90s`, `30m`, `2h`, `1d`. The
 * facade then checks it is after now and at most a year ahead.
 */
export function parseUntil(field: string, value: unknown, now: number): Date {
  if (typeof value === 'string') {
    const m = /^(\d{1,9})(s|m|h|d)$/.exec(value);
    if (m) return new Date(now + Number(m[1]) * DURATION_UNITS[m[2]]);
  }
  try {
    return parseTime(field, value);
  } catch {
    throw RheoError.invalid(field, 'must be an ISO 8601 time (2025-01-31T12:00:00Z) or a duration such as 90s, 30m, 2h or 1d');
  }
}

const START_FORMS = "must be 'beginning', 'end', a sequence (N), per partition sequences (0:N,1:M) or an ISO time";

/**
 * A start position from its written form: `beginning`, `end`, `N` (after sequence
 * N in every partition), `0:N,1:M` (per partition) or an ISO time (the first event
 * stamped at or after it). Undefined means the facade's default (`beginning`).
 */
export function parseStart(field: string, value: unknown): StartPosition | undefined {
  if (value === undefined || value === 'beginning' || value === 'end') return value;
  if (typeof value !== 'string') throw RheoError.invalid(field, START_FORMS);
  if (/^\d{1,15}$/.test(value)) return { afterSequence: Number(value) };
  if (/^\d{1,5}:\d{1,15}(,\d{1,5}:\d{1,15})*$/.test(value)) {
    const sequences: Record<number, number> = {};
    for (const pair of value.split(',')) {
      const [p, s] = pair.split(':').map(Number);
      sequences[p] = s;
    }
    return { afterSequence: sequences };
  }
  try {
    return { at: parseTime(field, value) };
  } catch {
    throw RheoError.invalid(field, START_FORMS);
  }
}

/**
 * Destructive operations refuse unless the caller said `confirm: true`: a script
 * or a stray click must not forget a group's deliveries.
 */
export function requireConfirm(confirm: unknown, what: string): void {
  if (confirm !== true) throw new RheoError('confirm_required', `${what}: confirm it (confirm: true)`, { field: 'confirm' });
}
