// The LOG lines of the admin actions (redrive, replay, reset, trim,
// purgeDeadLetters, updateGroup, pauseGroup, resumeGroup,
// skip, reschedule, cancelDelayed), with what each changed: an operator reading the log sees
// who rewound what. Framework-free, so RheoAdmin (CLI, dashboard) and
// RheoClient write the same words. Called after the action succeeded, with
// options already validated by the facade.
import type {
  GroupChanges,
  GroupPause,
  PurgeDeadLettersOptions,
  RedriveOptions,
  ReplayOptions,
  ResetOptions,
  TrimOptions,
  TrimResult,
} from '../core/types';

export function redriveLine(stream: string, group: string, options: RedriveOptions, n: number): string {
  const which = 'all' in options ? 'all' : `${options.eventIds.length} asked`;
  return `Redrove ${n} dead letter(s) of ${stream}/${group} (${which})`;
}

export function replayLine(stream: string, group: string, options: ReplayOptions, n: number): string {
  let from: string;
  if ('query' in options) from = 'matching a query';
  else if ('from' in options) from = `from ${options.from.toISOString()}`;
  else from = `after sequence ${options.afterSequence}`;
  const partitions = 'partitions' in options && options.partitions ? `, partitions ${options.partitions.join(',')}` : '';
  return `Replayed ${stream}/${group}: ${n} event(s) re-opened (${from}${partitions})`;
}

export function resetLine(stream: string, group: string, options: ResetOptions): string {
  const start = options.start ?? 'beginning';
  let where: string;
  if (typeof start === 'string') where = start;
  else if ('at' in start) where = `at ${start.at.toISOString()}`;
  else where = `after sequence ${typeof start.afterSequence === 'number' ? start.afterSequence : JSON.stringify(start.afterSequence)}`;
  return `Reset ${stream}/${group}: every delivery forgotten, restarting from ${where}`;
}

export function trimLine(result: TrimResult, options: TrimOptions | undefined): string {
  const skipped = Object.entries(result.skipped).filter(([, n]) => n > 0);
  const forced = options?.force ? ', forced' : '';
  const unfinished = skipped.length > 0 ? `; unfinished events removed: ${skipped.map(([g, n]) => `${g} ${n}`).join(', ')}` : '';
  return `Trimmed ${result.stream}: ${result.removed} event(s) removed${forced}${unfinished}`;
}

export function purgeLine(stream: string, group: string, options: PurgeDeadLettersOptions, n: number): string {
  const which = 'before' in options ? `dead-lettered before ${options.before.toISOString()}` : 'all';
  return `Purged ${n} dead letter(s) of ${stream}/${group} (${which})`;
}

/** The settings an updateGroup changed, as the caller gave them (field by field). */
export function updateGroupLine(stream: string, group: string, changes: GroupChanges): string {
  const parts: string[] = [];
  if (changes.maxAttempts !== undefined) parts.push(`maxAttempts ${changes.maxAttempts}`);
  for (const [k, v] of Object.entries(changes.retry ?? {})) if (v !== undefined) parts.push(`retry.${k} ${v}`);
  if (changes.keyConcurrency !== undefined) parts.push(`keyConcurrency ${changes.keyConcurrency}`);
  if (changes.groupConcurrency !== undefined) parts.push(`groupConcurrency ${changes.groupConcurrency ?? 'none'}`);
  if (changes.rateLimit !== undefined)
    parts.push(`rateLimit ${changes.rateLimit === null ? 'none' : `${changes.rateLimit.max} per ${changes.rateLimit.perMs} ms`}`);
  return `Changed the settings of ${stream}/${group}: ${parts.join(', ')}`;
}

/** A pause as stored: until when, why and by whom, as the operator gave them. */
export function pauseLine(stream: string, group: string, pause: GroupPause): string {
  const until = pause.until ? `until ${pause.until.toISOString()}` : 'until resumed';
  const by = pause.by === null ? '' : `, by ${JSON.stringify(pause.by)}`;
  const reason = pause.reason === null ? '' : `: ${JSON.stringify(pause.reason)}`;
  return `Paused ${stream}/${group} ${until}${by}${reason}`;
}

/** A resume, and whether a pause was holding the group back (an `until` may have passed already). */
export function resumeLine(stream: string, group: string, wasPaused: boolean): string {
  return wasPaused ? `Resumed ${stream}/${group}` : `Resumed ${stream}/${group} (it was not paused)`;
}

/** A skip: how many of the ids asked were skipped, and why. */
export function skipLine(stream: string, group: string, asked: number, done: number, reason: string | undefined): string {
  return `Skipped ${done} of ${asked} delivery(ies) of ${stream}/${group}${reason === undefined ? '' : ` (${reason})`}`;
}

/** A reschedule: how many of the ids asked were made due, and when. */
export function rescheduleLine(stream: string, group: string, asked: number, done: number, when: string): string {
  return `Rescheduled ${done} of ${asked} delivery(ies) of ${stream}/${group} to ${when}`;
}

/** A cancelDelayed: the event, and in how many groups it was still to run. */
export function cancelDelayedLine(stream: string, eventId: string, groups: number, reason: string | undefined): string {
  return `Cancelled delayed event ${eventId} of ${stream} in ${groups} group(s)${reason === undefined ? '' : ` (${reason})`}`;
}
