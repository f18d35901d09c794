// The registry section of the PostgreSQL backend: streams and groups. getStream
// and getGroup are SqlBackendBase's (sql/base.ts), over loadStream and loadGroup.
import { RheoError } from '../../core/errors';
import type { GroupConfig, Retention, StreamInfo } from '../../core/types';
import type { CreateGroupRequest } from '../backend';
import { copyGroupConfig } from '../copies';
import { flowColumns, retentionColumns, toGroup, toStream } from '../sql/rows';
import { query } from '../sql/statement';
import type { PostgresContext } from './context';
import { startAfters } from './starts';

export async function createStream(ctx: PostgresContext, stream: string, partitions: number, retention?: Retention): Promise<StreamInfo> {
  try {
    const params = [stream, partitions, ctx.clock.now(), ...retentionColumns(retention)];
    const [row] = await ctx.q(ctx.plans.registry.createStream, params, 'write', 'createStream');
    return ctx.rememberStream(toStream(row));
  } catch (err) {
    if (err instanceof RheoError && err.code === 'already_exists') throw RheoError.streamExists(stream, err);
    throw err;
  }
}

export async function loadStream(ctx: PostgresContext, stream: string): Promise<StreamInfo | null> {
  const [row] = await ctx.q(ctx.plans.registry.getStream, [stream], 'read', 'getStream');
  return row ? toStream(row) : null;
}

export async function listStreams(ctx: PostgresContext): Promise<StreamInfo[]> {
  return (await ctx.q(ctx.plans.registry.listStreams, [], 'read', 'listStreams')).map(toStream);
}

export async function setRetention(ctx: PostgresContext, stream: string, retention: Retention): Promise<StreamInfo> {
  const [row] = await ctx.q(ctx.plans.registry.setRetention, [stream, ...retentionColumns(retention)], 'write', 'setRetention');
  if (!row) throw RheoError.streamNotFound(stream);
  return ctx.rememberStream(toStream(row));
}

export async function createGroup(ctx: PostgresContext, req: CreateGroupRequest): Promise<GroupConfig> {
  const info = await ctx.mustStream(req.stream);
  const afters = await startAfters(ctx, req.stream, info.partitions, req.start);
  const r = req.retry;
  try {
    const [row] = await ctx.q(
      ctx.plans.registry.createGroup,
      [req.stream, req.group, req.maxAttempts, r.initialMs, r.factor, r.maxMs, req.ordering, ctx.clock.now(), afters, ...flowColumns(req)],
      'write',
      'createGroup',
    );
    return copyGroupConfig(ctx.rememberGroup(toGroup(row)));
  } catch (err) {
    if (err instanceof RheoError && err.code === 'already_exists') {
      throw RheoError.groupExists(req.stream, req.group, err);
    }
    throw err;
  }
}

export async function loadGroup(ctx: PostgresContext, stream: string, group: string): Promise<GroupConfig | null> {
  const [row] = await ctx.q(ctx.plans.registry.getGroup, [stream, group], 'read', 'getGroup');
  return row ? toGroup(row) : null;
}

export async function listGroups(ctx: PostgresContext, stream: string): Promise<GroupConfig[]> {
  await ctx.mustStream(stream);
  return (await ctx.q(ctx.plans.registry.listGroups, [stream], 'read', 'listGroups')).map(toGroup);
}

/**
 * One transaction that first locks the group's partition rows, as claims,
 * replays, redrives and trims do (in partition order, so no deadlock): a claim
 * under way finishes first and its deliveries are deleted too; one that waited
 * finds the rows gone and claims nothing. A settle finds no delivery left.
 */
export async function deleteGroup(ctx: PostgresContext, stream: string, group: string): Promise<void> {
  const info = await ctx.mustStream(stream);
  const all = Array.from({ length: info.partitions }, (_, p) => p);
  const { removal } = ctx.plans;
  const removed = await ctx.tx('deleteGroup', async (qr) => {
    await query(qr, ctx.plans.delivery.lockGroupPartitions, [stream, group, all]);
    await query(qr, removal.deliveries, [stream, group]);
    await query(qr, ctx.plans.registry.removeKeyReleases, [stream, group]);
    await query(qr, removal.deadLetters, [stream, group]);
    await query(qr, removal.positions, [stream, group]);
    return query(qr, removal.group, [stream, group]);
  });
  ctx.forgetGroup(stream, group);
  if (removed.length === 0) throw RheoError.groupNotFound(stream, group);
  // A waiting consumer of the group in this process looks again now, and learns it is gone.
  ctx.board.wake(stream);
}
