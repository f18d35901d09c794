// The facade's pause section: a group held back from claiming in every process,
// and let go again (docs/adr/046-pausing-a-group.md). The options are checked
// before anything reaches the store, so a refusal changes nothing; the store
// keeps the pause and its clock decides when an `until` has come.
import type { PauseGroupRequest } from '../../backends/backend';
import { channels } from '../diagnostics';
import { RheoError } from '../errors';
import { MAX_REASON_LENGTH } from '../limits';
import { checkTimeAhead } from '../requests';
import type { GroupPause, PauseGroupOptions } from '../types';
import { checkKeys, checkName, checkObject, checkOperatorText, keySet } from '../validate';
import type { FacadeContext } from './context';

const PAUSE_KEYS = keySet('a pauseGroup option', ['until', 'reason', 'by']);
/** Longest `by`: a name or an address, not a story. */
const MAX_BY_LENGTH = 256;

export async function pauseGroup(ctx: FacadeContext, stream: string, group: string, options: PauseGroupOptions = {}): Promise<GroupPause> {
  checkName('stream', stream);
  checkName('group', group);
  const o = checkObject('options', options);
  checkKeys('options', o, PAUSE_KEYS);
  const request: PauseGroupRequest = {
    stream,
    group,
    until: o.until === undefined ? null : checkUntil(ctx, o.until),
    reason: o.reason === undefined ? null : checkOperatorText('reason', o.reason, MAX_REASON_LENGTH),
    by: o.by === undefined ? null : checkOperatorText('by', o.by, MAX_BY_LENGTH),
  };
  await ctx.init();
  await ctx.stream(stream);
  const pause = await ctx.backend.pauseGroup(request);
  if (channels.groupPaused.hasSubscribers) channels.groupPaused.publish({ stream, group, pause });
  return pause;
}

export async function resumeGroup(ctx: FacadeContext, stream: string, group: string): Promise<boolean> {
  checkName('stream', stream);
  checkName('group', group);
  await ctx.init();
  await ctx.stream(stream);
  const wasPaused = await ctx.backend.resumeGroup(stream, group);
  if (channels.groupResumed.hasSubscribers) channels.groupResumed.publish({ stream, group, wasPaused });
  return wasPaused;
}

/** A time after now by the store's clock (as the backend estimates it), at most a year ahead, as a delay may be. */
function checkUntil(ctx: FacadeContext, value: unknown): Date {
  const now = ctx.backend.clock.now();
  const until = checkTimeAhead('until', value, now);
  if (until.getTime() <= now) throw RheoError.invalid('until', `must be after now (${new Date(now).toISOString()} by the store's clock)`);
  return until;
}
