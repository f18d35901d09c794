// Streams and groups on SQLite: their registrations, created, read, changed and
// removed each in one short transaction (getStream and getGroup are the base
// class's, over loadStream and loadGroup here).
import { RheoError } from '../../core/errors';
import { hasFlowLimits } from '../../core/flow';
import type { GroupConfig, Retention, StreamInfo } from '../../core/types';
import type { CreateGroupRequest } from '../backend';
import { copyGroupConfig } from '../copies';
import { flowColumns, retentionColumns, toGroup, toStream } from '../sql/rows';
import type { SqliteContext } from './context';
import { startAfters } from './group-start';

export async function createStream(ctx: SqliteContext, stream: string, partitions: number, retention?: Retention): Promise<StreamInfo> {
  await ctx.base.init();
  const now = ctx.clock.now();
  const p = ctx.plans;
  let info!: StreamInfo;
  try {
    await ctx.write('createStream', () => {
      ctx.stmt(p.insertStream).run(stream, partitions, now, ...retentionColumns(retention));
      info = toStream(ctx.stmt(p.getStream).get(stream)!);
      const ins = ctx.stmt(p.insertPartition);
      for (let i = 0; i < partitions; i++) ins.run(stream, i);
    });
  } catch (err) {
    if (err instanceof RheoError && err.code === 'already_exists') throw RheoError.streamExists(stream, err);
    throw err;
  }
  return ctx.base.rememberStream(info);
}

/** The stream as stored, or null (the base class's getStream and mustStream read through this). */
export async function loadStream(ctx: SqliteContext, stream: string): Promise<StreamInfo | null> {
  await ctx.base.init();
  const row = await ctx.locked('read', 'getStream', () => ctx.stmt(ctx.plans.getStream).get(stream));
  return row ? toStream(row) : null;
}

export async function listStreams(ctx: SqliteContext): Promise<StreamInfo[]> {
  await ctx.base.init();
  return (await ctx.locked('read', 'listStreams', () => ctx.stmt(ctx.plans.listStreams).all())).map(toStream);
}

export async function setRetention(ctx: SqliteContext, stream: string, retention: Retention): Promise<StreamInfo> {
  await ctx.base.init();
  const row = await ctx.write('setRetention', () => {
    ctx.stmt(ctx.plans.setRetention).run(...retentionColumns(retention), stream);
    return ctx.stmt(ctx.plans.getStream).get(stream);
  });
  if (!row) throw RheoError.streamNotFound(stream);
  return ctx.base.rememberStream(toStream(row));
}

export async function createGroup(ctx: SqliteContext, req: CreateGroupRequest): Promise<GroupConfig> {
  const info = await ctx.base.mustStream(req.stream);
  const r = req.retry;
  try {
    const row = await ctx.write('createGroup', () => {
      const afters = startAfters(ctx, req.stream, info.partitions, req.start);
      const g = ctx
        .stmt(ctx.plans.insertGroup)
        .get(req.stream, req.group, req.maxAttempts, r.initialMs, r.factor, r.maxMs, req.ordering, ctx.clock.now(), ...flowColumns(req));
      const ins = ctx.stmt(ctx.plans.insertGroupPartition);
      const flow = hasFlowLimits(req) ? 1 : null;
      afters.forEach((after, p) => ins.run(req.stream, req.group, p, after + 1, flow));
      return g!;
    });
    return copyGroupConfig(ctx.base.rememberGroup(toGroup(row)));
  } catch (err) {
    if (err instanceof RheoError && err.code === 'already_exists') {
      throw RheoError.groupExists(req.stream, req.group, err);
    }
    throw err;
  }
}

/** The group as stored, or null (the base class's getGroup and mustGroup read through this). */
export async function loadGroup(ctx: SqliteContext, stream: string, group: string): Promise<GroupConfig | null> {
  await ctx.base.init();
  const row = await ctx.locked('read', 'getGroup', () => ctx.stmt(ctx.plans.getGroup).get(stream, group));
  return row ? toGroup(row) : null;
}

export async function listGroups(ctx: SqliteContext, stream: string): Promise<GroupConfig[]> {
  await ctx.base.mustStream(stream);
  return (await ctx.locked('read', 'listGroups', () => ctx.stmt(ctx.plans.listGroups).all(stream))).map(toGroup);
}

/** One write transaction (SQLite's one writer): no claim, settle or re-open of the group runs beside it. */
export async function deleteGroup(ctx: SqliteContext, stream: string, group: string): Promise<void> {
  await ctx.base.mustStream(stream);
  const removal = ctx.removal;
  const removed = await ctx.write('deleteGroup', () => {
    ctx.stmt(removal.deliveries).run(stream, group);
    ctx.stmt(removal.deadLetters).run(stream, group);
    ctx.stmt(removal.positions).run(stream, group);
    return ctx.stmt(removal.group).run(stream, group).changes;
  });
  ctx.base.forgetGroup(stream, group);
  if (removed === 0) throw RheoError.groupNotFound(stream, group);
  // A waiting consumer of the group looks again now, and learns it is gone.
  ctx.wake(stream);
}
