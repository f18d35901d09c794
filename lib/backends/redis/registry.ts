import { RheoError } from '../../core/errors';
import { hasFlowLimits } from '../../core/flow';
import { groupKey } from '../../core/registrations';
import type { GroupConfig, Retention, StreamInfo } from '../../core/types';
import type { CreateGroupRequest, ResolvedStart } from '../backend';
import { copyGroupConfig, copyStreamInfo, newGroupConfig } from '../copies';
import type { RedisContext } from './context';
import { decodeRetention, retentionArgs, setLimits } from './codec';
import { decodeGroupConfig, encodeGroupConfig, STORED_GROUP_FIELD_NAMES } from './group-config';
import { flowSlots, META_FIELDS, registryKey } from './keys';
import { firstAtOrAfter } from './log-scan';
import { recordFlowLayout } from './lifecycle';

// The registry section: streams and groups, created, read, listed and deleted.

export async function createStream(ctx: RedisContext, stream: string, partitions: number, retention?: Retention): Promise<StreamInfo> {
  const createdAt = ctx.clock.now();
  const k = ctx.keys(stream);
  // The registry is an index in another slot (on a cluster, possibly another node), so it cannot be
  // written in the creation script (see keys.ts). It is written FIRST: a stream whose meta exists is
  // then always registered, and a crash between the two leaves a registered name without meta, which
  // listStreams leaves out (the meta is the authority) until a retry creates it. On already_exists the
  // name is registered again, which repairs a stream created before this order (meta first) whose
  // registration was lost.
  await ctx.call('write', (redis) => redis.sadd(registryKey(ctx.prefix), stream));
  try {
    await ctx.script('write', 'createStream', [k.meta], [partitions, createdAt, ...retentionArgs(retention)]);
  } catch (err) {
    if ((err as RheoError).code !== 'already_exists') throw err;
    throw RheoError.streamExists(stream);
  }
  const info: StreamInfo = { name: stream, partitions, createdAt: new Date(createdAt) };
  ctx.registrations.rememberStream(info);
  return withRetention(info, setLimits(retention));
}

/**
 * The registration with its current retention, read from Redis every time (another
 * process may have changed it); partitions and createdAt of a known stream come from
 * memory. A known stream whose keys vanished is answered from memory: the scripts
 * then report the loss in words (see RedisContext.explain).
 */
export async function getStream(ctx: RedisContext, stream: string): Promise<StreamInfo | null> {
  const [partitions, createdAt, ...retention] = await ctx.call('read', (redis) =>
    redis.hmget(
      ctx.keys(stream).meta,
      META_FIELDS.partitions,
      META_FIELDS.createdAt,
      META_FIELDS.retentionMaxAgeMs,
      META_FIELDS.retentionMaxEvents,
      META_FIELDS.retentionDeadLetterMaxAgeMs,
    ),
  );
  const known = ctx.registrations.stream(stream);
  // What is remembered may carry a retention read earlier (the facade remembers what it was given): never told.
  if (partitions === null) return known ? withRetention(known, undefined) : null;
  const info = known ?? { name: stream, partitions: Number(partitions), createdAt: new Date(Number(createdAt)) };
  if (!known) ctx.registrations.rememberStream(info);
  return withRetention(info, decodeRetention(retention));
}

export async function setRetention(ctx: RedisContext, stream: string, retention: Retention): Promise<StreamInfo> {
  const [partitions, createdAt] = (await ctx.script('write', 'setRetention', [ctx.keys(stream).meta], retentionArgs(retention), {
    stream,
  })) as [string, string];
  const info = ctx.registrations.stream(stream) ?? { name: stream, partitions: Number(partitions), createdAt: new Date(Number(createdAt)) };
  ctx.registrations.rememberStream(info);
  return withRetention(info, setLimits(retention));
}

/**
 * The registered names whose stream exists: a name without its `meta` (a creation that
 * did not finish, see createStream) is left out, and nothing is removed from the
 * registry (a creation may be under way in another process).
 */
export async function listStreams(ctx: RedisContext): Promise<StreamInfo[]> {
  const names = await ctx.call('read', (redis) => redis.smembers(registryKey(ctx.prefix)));
  const infos = await Promise.all(names.map((n) => getStream(ctx, n)));
  return infos.filter((i): i is StreamInfo => i !== null).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** The stream's partition count: remembered once seen; `stream_not_found` when there is no such stream. */
export async function partitionsOf(ctx: RedisContext, stream: string): Promise<number> {
  const known = ctx.registrations.stream(stream);
  if (known) return known.partitions;
  const info = await getStream(ctx, stream);
  if (!info) throw RheoError.streamNotFound(stream);
  return info.partitions;
}

/** The group's config: remembered once seen; `group_not_found` when there is no such group. */
export async function configOf(ctx: RedisContext, stream: string, group: string): Promise<GroupConfig> {
  const known = ctx.registrations.group(stream, group);
  if (known) return known;
  const cfg = await getGroup(ctx, stream, group);
  if (!cfg) throw RheoError.groupNotFound(stream, group);
  return cfg;
}

export async function createGroup(ctx: RedisContext, req: CreateGroupRequest): Promise<GroupConfig> {
  const P = await partitionsOf(ctx, req.stream);
  const k = ctx.keys(req.stream);
  const g = k.group(req.group);
  const createdAt = ctx.clock.now();
  const { mode, after } = await startArgs(ctx, req.stream, P, req.start);
  const config = newGroupConfig(req, createdAt);
  if (hasFlowLimits(config)) await recordFlowLayout(ctx);
  const stored = encodeGroupConfig(config);
  await ctx
    .script('write', 'createGroup', [k.meta, g.cfg, k.groups], [req.group, mode, stored.length, ...stored, ...after], {
      stream: req.stream,
    })
    .catch((err: RheoError) => {
      throw err.code === 'already_exists' ? RheoError.groupExists(req.stream, req.group) : err;
    });
  ctx.registrations.rememberGroup(config);
  return copyGroupConfig(config);
}

/** A start position as script arguments: 'end' is resolved inside the script (atomic with appends), the rest here. */
export async function startArgs(
  ctx: RedisContext,
  stream: string,
  P: number,
  start: ResolvedStart,
): Promise<{ mode: 'end' | 'after'; after: number[] }> {
  if (start.kind === 'end') return { mode: 'end', after: [] };
  const after: number[] = [];
  for (let p = 0; p < P; p++) {
    if (start.kind === 'beginning') after.push(0);
    else if (start.kind === 'after') after.push(typeof start.sequences === 'number' ? start.sequences : (start.sequences[p] ?? 0));
    else after.push((await ctx.call('read', (redis) => firstAtOrAfter(redis, ctx.keys(stream).log(p), start.time.getTime()))) - 1);
  }
  return { mode: 'after', after };
}

export async function getGroup(ctx: RedisContext, stream: string, group: string): Promise<GroupConfig | null> {
  // A group may be deleted (deleteGroup) or its settings changed (updateGroup) by any process, so this reads
  // Redis; the scripts read the settings that decide from the cfg hash, and say when the group is gone.
  const g = ctx.keys(stream).group(group);
  const values = await ctx.call('read', (redis) => redis.hmget(g.cfg, ...STORED_GROUP_FIELD_NAMES));
  const config = decodeGroupConfig(stream, group, values);
  if (!config) {
    ctx.registrations.forgetGroup(stream, group);
    // A stream this process knew whose keys are gone (flushed, evicted) is said so, as every group operation says it.
    if (ctx.registrations.stream(stream)) {
      const [partitions] = await ctx.call('read', (redis) => redis.hmget(ctx.keys(stream).meta, META_FIELDS.partitions));
      if (partitions === null) throw ctx.explain(RheoError.streamNotFound(stream), stream);
    }
    return null;
  }
  ctx.registrations.rememberGroup(config);
  return copyGroupConfig(config);
}

export async function deleteGroup(ctx: RedisContext, stream: string, group: string): Promise<void> {
  const P = await partitionsOf(ctx, stream);
  const k = ctx.keys(stream);
  const g = k.group(group);
  // Forgotten first: a group deleted by another process is then reported as missing, not as lost keys (explain).
  ctx.registrations.forgetGroup(stream, group);
  ctx.wake.lastIds.delete(groupKey(stream, group));
  const all = Array.from({ length: P }, (_, p) => p);
  const keys = [k.meta, g.cfg, k.groups, g.deliveries, g.dead, g.deadOrder, g.deadTimes, k.wake, ...g.slots(all), ...flowSlots(k, g, all)];
  await ctx.script('write', 'deleteGroup', keys, [group], { stream, group });
}

export async function listGroups(ctx: RedisContext, stream: string): Promise<GroupConfig[]> {
  await partitionsOf(ctx, stream);
  const names = await ctx.call('read', (redis) => redis.smembers(ctx.keys(stream).groups));
  // The set is read fresh, and deleteGroup removes a name with its keys: a remembered config of a listed name is current.
  const configs = await Promise.all(
    names.map((n) => {
      const known = ctx.registrations.group(stream, n);
      return known ? copyGroupConfig(known) : getGroup(ctx, stream, n);
    }),
  );
  return configs.filter((c): c is GroupConfig => c !== null).sort((a, b) => (a.group < b.group ? -1 : a.group > b.group ? 1 : 0));
}

/** A caller's copy of a registration, with `retention` only when one is set. */
function withRetention(info: StreamInfo, retention: Retention | undefined): StreamInfo {
  const copy = copyStreamInfo(info);
  delete copy.retention;
  if (retention) copy.retention = { ...retention };
  return copy;
}
