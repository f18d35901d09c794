import { RheoError } from '../../core/errors';
import { groupKey } from '../../core/registrations';
import type { WaitRequest } from '../backend';
import { ClusterWakeListeners, isCluster } from './cluster';
import { BLOCKER_OVERRIDES, disconnect, sleep } from './connection';
import type { RedisContext } from './context';
import type { RedisClient, RedisCluster, RedisStreamEntry } from './external';
import { turnKey } from './keys';
import { WakeListener } from './wake-listener';

// The coordination section: named turns (claimTurn, releaseTurn) and wait, with the blocking connections behind it.

/**
 * One script on the job's own key (`<prefix>:turn:<job>`, outside every stream): the
 * turn's end is a time of the backend's clock, so processes sharing a clock agree.
 */
export async function claimTurn(ctx: RedisContext, job: string, holder: string, ttlMs: number): Promise<boolean> {
  if (typeof job !== 'string' || job.length === 0) throw RheoError.invalid('job', 'must be a non-empty string');
  if (typeof holder !== 'string' || holder.length === 0) throw RheoError.invalid('holder', 'must be a non-empty string');
  if (!Number.isInteger(ttlMs) || ttlMs < 1) throw RheoError.invalid('ttlMs', 'must be a whole number of at least 1');
  const granted = await ctx.script('write', 'claimTurn', [turnKey(ctx.prefix, job)], [ctx.clock.now(), holder, ttlMs]);
  return Number(granted) === 1;
}

export async function releaseTurn(ctx: RedisContext, job: string, holder: string): Promise<boolean> {
  if (typeof job !== 'string' || job.length === 0) throw RheoError.invalid('job', 'must be a non-empty string');
  if (typeof holder !== 'string' || holder.length === 0) throw RheoError.invalid('holder', 'must be a non-empty string');
  return Number(await ctx.script('write', 'releaseTurn', [turnKey(ctx.prefix, job)], [holder])) === 1;
}

/**
 * Blocks (XREAD BLOCK on the stream's wake key, on the dedicated connection)
 * until a write that may create work for the group happens after its last
 * fetch, `timeoutMs` passes, or `signal` aborts. Never throws: a failure only
 * turns the wait into a plain sleep.
 */
export async function wait(ctx: RedisContext, req: WaitRequest): Promise<void> {
  if (ctx.connection.closed || req.signal.aborted) return;
  const key = ctx.keys(req.stream).wake;
  try {
    let lastId = ctx.wake.lastIds.get(groupKey(req.stream, req.group));
    if (lastId === undefined) {
      const last = (await ctx.redis().xrevrange(key, '+', '-', 'COUNT', 1)) as RedisStreamEntry[];
      lastId = last[0]?.[0] ?? '0-0';
    }
    const c = ctx.redis();
    if (isCluster(c)) {
      ctx.wake.cluster ??= new ClusterWakeListeners(() => ctx.redis() as RedisCluster);
      await ctx.wake.cluster.wait(key, lastId, req.timeoutMs, req.signal);
    } else {
      await wakeListener(ctx).wait(key, lastId, req.timeoutMs, req.signal);
    }
  } catch {
    await sleep(req.timeoutMs, req.signal);
  }
}

/** On a cluster, the slots with a blocking connection for wait() now, and the node each is open to (tests look). */
export function wakeSlots(ctx: RedisContext): Array<{ slot: number; node: string }> {
  return ctx.wake.cluster?.slots ?? [];
}

/** Release every waiter and close the blocking connections (the backend closes). */
export function closeWaits(ctx: RedisContext): Array<Promise<void>> {
  const { listener, cluster, blocker } = ctx.wake;
  listener?.close();
  const closing: Array<Promise<void>> = [];
  if (cluster) closing.push(cluster.close());
  if (blocker) closing.push(disconnect(blocker));
  return closing;
}

/** One server: the blocking connection, a duplicate of the client opened on the first wait. */
function wakeListener(ctx: RedisContext): WakeListener {
  if (!ctx.wake.listener) {
    const client = ctx.redis() as RedisClient;
    ctx.wake.blocker = client.duplicate(BLOCKER_OVERRIDES);
    ctx.wake.listener = new WakeListener(ctx.wake.blocker, (id) => client.client('UNBLOCK', id));
  }
  return ctx.wake.listener;
}
