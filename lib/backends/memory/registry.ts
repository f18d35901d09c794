import { RheoError } from '../../core/errors';
import type { GroupConfig, Retention, StreamInfo } from '../../core/types';
import type { CreateGroupRequest } from '../backend';
import { copyGroupConfig, copyStreamInfo, newGroupConfig } from '../copies';
import { groupOf, open, startParts, streamOf, wake, type MemoryContext } from './context';
import { PartitionLog } from './partition-log';

// The registry section: streams and groups. Every record handed out is a copy of the store's.

export async function createStream(ctx: MemoryContext, stream: string, partitions: number, retention?: Retention): Promise<StreamInfo> {
  open(ctx);
  if (ctx.streams.has(stream)) throw RheoError.streamExists(stream);
  const info: StreamInfo = { name: stream, partitions, createdAt: new Date(ctx.clock.now()) };
  if (retention) info.retention = { ...retention };
  ctx.streams.set(stream, {
    info,
    log: Array.from({ length: partitions }, () => new PartitionLog()),
    byId: new Map(),
    groups: new Map(),
    waiters: new Set(),
  });
  return copyStreamInfo(info);
}

export async function getStream(ctx: MemoryContext, stream: string): Promise<StreamInfo | null> {
  open(ctx);
  const s = ctx.streams.get(stream);
  return s ? copyStreamInfo(s.info) : null;
}

export async function listStreams(ctx: MemoryContext): Promise<StreamInfo[]> {
  open(ctx);
  return [...ctx.streams.values()].map((s) => copyStreamInfo(s.info)).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

export async function setRetention(ctx: MemoryContext, stream: string, retention: Retention): Promise<StreamInfo> {
  const s = streamOf(ctx, stream);
  if (Object.keys(retention).length > 0) s.info.retention = { ...retention };
  else delete s.info.retention;
  return copyStreamInfo(s.info);
}

export async function createGroup(ctx: MemoryContext, req: CreateGroupRequest): Promise<GroupConfig> {
  const s = streamOf(ctx, req.stream);
  if (s.groups.has(req.group)) throw RheoError.groupExists(req.stream, req.group);
  const config = newGroupConfig(req, ctx.clock.now());
  s.groups.set(req.group, {
    config,
    parts: startParts(s, req.start),
    dead: new Map(),
    deadOrder: null,
    nextPartition: 0,
    skips: { count: 0, lastReason: null, lastAt: null },
    rateLog: [],
  });
  return copyGroupConfig(config);
}

export async function getGroup(ctx: MemoryContext, stream: string, group: string): Promise<GroupConfig | null> {
  open(ctx);
  const g = ctx.streams.get(stream)?.groups.get(group);
  return g ? copyGroupConfig(g.config) : null;
}

export async function listGroups(ctx: MemoryContext, stream: string): Promise<GroupConfig[]> {
  const s = streamOf(ctx, stream);
  return [...s.groups.values()].map((g) => copyGroupConfig(g.config)).sort((a, b) => (a.group < b.group ? -1 : a.group > b.group ? 1 : 0));
}

export async function deleteGroup(ctx: MemoryContext, stream: string, group: string): Promise<void> {
  const { s } = groupOf(ctx, stream, group);
  // Every lease, delivery and dead letter lives in the group's record: dropping it drops them all.
  s.groups.delete(group);
  // A waiting consumer of the group looks again now, and learns it is gone.
  wake(s);
}
