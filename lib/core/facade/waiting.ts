// The facade's waiting section: an operator's hand on deliveries waiting in a group
// (docs/adr/048-skip-reschedule-cancel.md) — skipped (settled as handled, the handler
// never run), rescheduled, or, for a delayed event, cancelled in every group. The
// input is checked whole before anything reaches the store, so a refusal changes
// nothing; what each id's delivery is doing is the store's to judge, per id.
import type { SettleResult } from '../../backends/backend';
import { RheoError } from '../errors';
import { MAX_DELAY_MS, MAX_REASON_LENGTH } from '../limits';
import { checkBatch, checkTimeAhead } from '../requests';
import type { CancelDelayedOptions, RescheduleOptions, SkipOptions } from '../types';
import { checkInt, checkKeys, checkName, checkObject, checkOperatorText, keySet } from '../validate';
import type { FacadeContext } from './context';

const SKIP_KEYS = keySet('a skip option', ['reason']);
const RESCHEDULE_KEYS = keySet('a reschedule option', ['deliverAt', 'delayMs']);
const CANCEL_KEYS = keySet('a cancelDelayed option', ['reason']);

export async function skip(
  ctx: FacadeContext,
  stream: string,
  group: string,
  ids: string[],
  options: SkipOptions = {},
): Promise<SettleResult[]> {
  checkName('stream', stream);
  checkName('group', group);
  const checked = checkIds(ids);
  const o = checkObject('options', options);
  checkKeys('options', o, SKIP_KEYS);
  const reason = checkReasonText(o.reason);
  await ready(ctx, stream, group);
  if (checked.length === 0) return [];
  return ctx.backend.skip({ stream, group, ids: checked, reason });
}

export async function reschedule(
  ctx: FacadeContext,
  stream: string,
  group: string,
  ids: string[],
  options: RescheduleOptions,
): Promise<SettleResult[]> {
  checkName('stream', stream);
  checkName('group', group);
  const checked = checkIds(ids);
  const o = checkObject('options', options);
  checkKeys('options', o, RESCHEDULE_KEYS);
  if ((o.deliverAt === undefined) === (o.delayMs === undefined))
    throw RheoError.invalid('options', 'must give exactly one of deliverAt and delayMs');
  let deliverAt: Date | null = null;
  let delayMs: number | null = null;
  if (o.deliverAt !== undefined) {
    // Bounded as an appended event's deliverAt is: a year ahead of now by the store's clock (as estimated here).
    deliverAt = checkTimeAhead('deliverAt', o.deliverAt, ctx.backend.clock.now());
  } else {
    delayMs = checkInt('delayMs', o.delayMs, 0, MAX_DELAY_MS);
  }
  await ready(ctx, stream, group);
  if (checked.length === 0) return [];
  return ctx.backend.reschedule({ stream, group, ids: checked, deliverAt, delayMs });
}

export async function cancelDelayed(ctx: FacadeContext, stream: string, id: string, options: CancelDelayedOptions = {}): Promise<number> {
  checkName('stream', stream);
  checkName('id', id);
  const o = checkObject('options', options);
  checkKeys('options', o, CANCEL_KEYS);
  const reason = checkReasonText(o.reason);
  await ctx.init();
  await ctx.stream(stream);
  return ctx.backend.cancelDelayed({ stream, id, reason });
}

async function ready(ctx: FacadeContext, stream: string, group: string): Promise<void> {
  await ctx.init();
  await ctx.stream(stream);
  await ctx.groupConfig(stream, group);
}

/** Event ids: an array of at most MAX_BATCH names, none given twice (a second one would answer for the first). */
function checkIds(value: unknown): string[] {
  const ids = checkBatch('ids', value as unknown[], 'event ids');
  const seen = new Set<string>();
  return ids.map((id, i) => {
    const name = checkName(`ids[${i}]`, id);
    if (seen.has(name)) throw RheoError.invalid(`ids[${i}]`, `repeats "${name}": give each id once`);
    seen.add(name);
    return name;
  });
}

/** An operator's reason (checkOperatorText); null when absent. */
function checkReasonText(value: unknown): string | null {
  return value === undefined ? null : checkOperatorText('reason', value, MAX_REASON_LENGTH);
}
