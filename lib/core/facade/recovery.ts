// The facade's recovery section: replay, reset, redrive and the reads an operator
// recovers by (lag, groupInfo, dead letters). Each names a group that must exist:
// its config is read from the store (groupConfig), not from what this process
// remembers, so a group deleted elsewhere answers `group_not_found`.
import type { ReplayRequest } from '../../backends/backend';
import { StoreClock } from '../clock';
import { RheoError } from '../errors';
import { MAX_PAGE_LIMIT } from '../limits';
import { checkOptions, checkPageLimit, checkRedrive, checkReplayKind, checkReplayRange, resolveStart } from '../requests';
import type { DeadLetter, GroupInfo, Lag, Query, RedriveOptions, ReplayOptions, ResetOptions } from '../types';
import { checkDate, checkName, checkObject } from '../validate';
import { counted, type FacadeContext } from './context';
import { queryStream } from './log';

/** The options of {@link deadLetters}. */
export interface DeadLettersOptions {
  limit?: number;
  after?: string;
}

export async function replay(ctx: FacadeContext, stream: string, group: string, options: ReplayOptions): Promise<number> {
  checkName('stream', stream);
  checkName('group', group);
  const kind = checkReplayKind(options);
  return ctx.traced(
    'replay',
    () => ({ operation: 'replay', stream, group }),
    () => replayChecked(ctx, stream, group, kind, options),
    counted,
  );
}

async function replayChecked(
  ctx: FacadeContext,
  stream: string,
  group: string,
  kind: ReturnType<typeof checkReplayKind>,
  options: ReplayOptions,
): Promise<number> {
  await ctx.init();
  const info = await ctx.stream(stream);
  await ctx.groupConfig(stream, group);
  let request: ReplayRequest;
  if (kind === 'query') {
    const query = checkObject('query', (options as { query: unknown }).query);
    const events: Array<{ id: string; partition: number; sequence: number }> = [];
    for await (const e of queryStream(ctx, { ...query, stream, limit: MAX_PAGE_LIMIT } as Query)) {
      events.push({ id: e.id, partition: e.partition, sequence: e.sequence });
    }
    request = { stream, group, kind: 'events', events };
  } else {
    request = checkReplayRange(
      stream,
      group,
      options as { afterSequence?: unknown; from?: unknown; partitions?: unknown },
      info.partitions,
    );
  }
  return ctx.backend.replay(request);
}

export async function reset(ctx: FacadeContext, stream: string, group: string, options: ResetOptions): Promise<void> {
  checkName('stream', stream);
  checkName('group', group);
  if (typeof options !== 'object' || options === null || options.confirm !== true) {
    throw new RheoError('confirm_required', 'reset forgets every delivery of the group: pass { confirm: true }', { field: 'confirm' });
  }
  checkOptions('reset', options);
  return ctx.traced(
    'reset',
    () => ({ operation: 'reset', stream, group }),
    async () => {
      await ctx.init();
      const info = await ctx.stream(stream);
      const start = resolveStart('start', options.start, info.partitions);
      await ctx.groupConfig(stream, group);
      await ctx.backend.reset(stream, group, start);
    },
  );
}

export async function lag(ctx: FacadeContext, stream: string, group: string): Promise<Lag> {
  checkName('stream', stream);
  checkName('group', group);
  await ctx.init();
  await ctx.stream(stream);
  const lag = await ctx.backend.lag(stream, group);
  ctx.frontiers.observe(lag);
  return lag;
}

export async function groupInfo(ctx: FacadeContext, stream: string, group: string): Promise<GroupInfo> {
  checkName('stream', stream);
  checkName('group', group);
  await ctx.init();
  await ctx.stream(stream);
  const info = await ctx.backend.groupInfo(stream, group);
  ctx.frontiers.observe(info.lag);
  // A clock far from the store's is this process's condition, shown beside the store's own (ADR 041).
  const skew = ctx.backend.clock instanceof StoreClock ? ctx.backend.clock.warning() : undefined;
  return skew === undefined ? info : { ...info, warnings: [...(info.warnings ?? []), skew] };
}

export async function deadLetters(ctx: FacadeContext, stream: string, group: string, options: DeadLettersOptions): Promise<DeadLetter[]> {
  checkName('stream', stream);
  checkName('group', group);
  checkOptions('deadLetters', options);
  const limit = checkPageLimit('limit', options.limit);
  const after = options.after === undefined ? undefined : checkName('after', options.after);
  await ctx.init();
  await ctx.stream(stream);
  await ctx.groupConfig(stream, group);
  return ctx.backend.deadLetters(stream, group, limit, after);
}

export async function countDeadLetters(ctx: FacadeContext, stream: string, group: string, options: { since?: Date }): Promise<number> {
  checkName('stream', stream);
  checkName('group', group);
  checkOptions('countDeadLetters', options);
  const since = options.since === undefined ? null : checkDate('options.since', options.since);
  await ctx.init();
  await ctx.stream(stream);
  await ctx.groupConfig(stream, group);
  return ctx.backend.countDeadLetters(stream, group, since);
}

export async function redrive(ctx: FacadeContext, stream: string, group: string, options: RedriveOptions): Promise<number> {
  checkName('stream', stream);
  checkName('group', group);
  const ids = checkRedrive(options);
  return ctx.traced(
    'redrive',
    () => ({ operation: 'redrive', stream, group }),
    async () => {
      await ctx.init();
      await ctx.stream(stream);
      await ctx.groupConfig(stream, group);
      if (ids !== 'all' && ids.length === 0) return 0;
      return ctx.backend.redrive(stream, group, ids);
    },
    counted,
  );
}
