// The facade's registry section: streams and groups, created, listed, deleted,
// and a stream's retention. Each operation checks its input before anything
// reaches the store; an `ifNotExists` create returns what exists, and a '/' is
// refused in a new name only (one that exists is returned as it is).
import { checkFlowSupported as checkBackendFlow } from '../flow';
import { RheoError } from '../errors';
import { MAX_PARTITIONS } from '../limits';
import { checkGroupOptions, checkOptions, checkRetention, keepsEverything, resolveStart } from '../requests';
import type { DeleteGroupOptions, GroupConfig, GroupOptions, Retention, StreamInfo } from '../types';
import { checkInt, checkName, checkNewName } from '../validate';
import type { FacadeContext } from './context';

/** The options of {@link createStream}. */
export interface CreateStreamOptions {
  partitions?: number;
  ifNotExists?: boolean;
  retention?: Retention;
}

export async function createStream(ctx: FacadeContext, stream: string, options: CreateStreamOptions): Promise<StreamInfo> {
  checkName('stream', stream);
  checkOptions('createStream', options);
  // A '/' is refused in a new stream's name only: with ifNotExists, one that exists is returned (createStreamChecked).
  if (!options.ifNotExists) checkNewName('stream', stream);
  const partitions = options.partitions === undefined ? 1 : checkInt('partitions', options.partitions, 1, MAX_PARTITIONS);
  const retention = options.retention === undefined ? undefined : checkRetention('retention', options.retention);
  return ctx.traced(
    'createStream',
    () => ({ operation: 'createStream', stream }),
    () => createStreamChecked(ctx, stream, partitions, retention, options),
  );
}

async function createStreamChecked(
  ctx: FacadeContext,
  stream: string,
  partitions: number,
  retention: Retention | undefined,
  options: { ifNotExists?: boolean },
): Promise<StreamInfo> {
  await ctx.init();
  if (options.ifNotExists) {
    const existing = await ctx.backend.getStream(stream);
    if (existing) return existing;
    checkNewName('stream', stream);
  }
  try {
    return await ctx.backend.createStream(stream, partitions, retention && !keepsEverything(retention) ? retention : undefined);
  } catch (err) {
    if (options.ifNotExists && err instanceof RheoError && err.code === 'already_exists') return ctx.freshStream(stream);
    throw err;
  }
}

export async function createGroup(ctx: FacadeContext, stream: string, group: string, options: GroupOptions): Promise<GroupConfig> {
  checkName('stream', stream);
  checkName('group', group);
  const checked = checkGroupOptions(options);
  // As for streams: a '/' is refused in a new group's name only (createGroupChecked).
  if (!options.ifNotExists) checkNewName('group', group);
  return ctx.traced(
    'createGroup',
    () => ({ operation: 'createGroup', stream, group }),
    () => createGroupChecked(ctx, stream, group, checked, options),
  );
}

async function createGroupChecked(
  ctx: FacadeContext,
  stream: string,
  group: string,
  settings: ReturnType<typeof checkGroupOptions>,
  options: GroupOptions,
): Promise<GroupConfig> {
  await ctx.init();
  checkFlowSupported(ctx, settings);
  const info = await ctx.stream(stream);
  const start = resolveStart('start', options.start, info.partitions);
  if (options.ifNotExists) {
    const existing = await ctx.backend.getGroup(stream, group);
    if (existing) return existing;
    checkNewName('group', group);
  }
  try {
    return await ctx.backend.createGroup({ stream, group, start, ...settings });
  } catch (err) {
    if (options.ifNotExists && err instanceof RheoError && err.code === 'already_exists') {
      const existing = await ctx.backend.getGroup(stream, group);
      if (existing) return existing;
    }
    throw err;
  }
}

export async function setRetention(ctx: FacadeContext, stream: string, retention: Retention): Promise<StreamInfo> {
  checkName('stream', stream);
  const checked = checkRetention('retention', retention);
  await ctx.init();
  await ctx.stream(stream);
  return ctx.backend.setRetention(stream, checked);
}

export async function listStreams(ctx: FacadeContext): Promise<StreamInfo[]> {
  await ctx.init();
  return ctx.backend.listStreams();
}

export async function listGroups(ctx: FacadeContext, stream: string): Promise<GroupConfig[]> {
  checkName('stream', stream);
  await ctx.init();
  await ctx.stream(stream);
  return ctx.backend.listGroups(stream);
}

export async function deleteGroup(ctx: FacadeContext, stream: string, group: string, options: DeleteGroupOptions): Promise<void> {
  checkName('stream', stream);
  checkName('group', group);
  if (typeof options !== 'object' || options === null || options.confirm !== true) {
    const message = 'deleteGroup removes the group with its deliveries and dead letters: pass { confirm: true }';
    throw new RheoError('confirm_required', message, { field: 'confirm' });
  }
  checkOptions('deleteGroup', options);
  return ctx.traced(
    'deleteGroup',
    () => ({ operation: 'deleteGroup', stream, group }),
    async () => {
      await ctx.init();
      await ctx.stream(stream);
      try {
        await ctx.backend.deleteGroup(stream, group);
      } finally {
        // What this instance remembers of the group goes too (a group re-created under the name may differ).
        ctx.registrations.forgetGroup(stream, group);
        ctx.frontiers.forget(stream, group);
      }
    },
  );
}

/** Flow limits on a backend that does not enforce them are refused, naming the first one given. */
export function checkFlowSupported(
  ctx: FacadeContext,
  config: Pick<GroupConfig, 'ordering' | 'keyConcurrency' | 'groupConcurrency' | 'rateLimit'>,
): void {
  checkBackendFlow(ctx.backend, config);
}
