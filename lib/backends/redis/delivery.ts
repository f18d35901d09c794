import { RheoError } from '../../core/errors';
import { deadLetteredOf, fetched, pausedAnswer } from '../../core/fetched';
import { newId } from '../../core/ids';
import { groupKey } from '../../core/registrations';
import { checkPartition } from '../../core/requests';
import { hasFlowLimits } from '../../core/flow';
import type { GroupConfig, Lease } from '../../core/types';
import type { ClaimDeadLetter, FetchedLeases, FetchRequest, FlowHeld, RenewResult, SettleOp, SettleResult } from '../backend';
import { claimPastDelays, type ClaimRound } from '../delays';
import { eventOfLease, type FetchAnswer, fetchAnswer, leaseOf, leaseOpValues, type OpValue, settleOpValues } from './codec';
import type { RedisContext } from './context';
import type { RedisPipelineResult } from './external';
import { flowSlots, type GroupKeys, type StreamKeys } from './keys';
import { entryId } from './log-scan';
import { configOf, getGroup, partitionsOf } from './registry';
import type { ScriptCall } from './script-runner';

// The delivery section: fetch (the claim), renew, settle and release.

/**
 * How much one script call may do. A script blocks the whole server while it runs,
 * so work that grows with the backlog or with a bulk call is cut into calls of
 * about a millisecond each (docs/adr/014-redis-bounded-scripts.md). Measured on a
 * loaded 2-core machine: ~10 µs per lease claimed or op settled, ~1 µs per record
 * walked, so the slowest call stays well under 10 ms even when the OS preempts it.
 */
/** Delivery records and dead letters one call may walk over or drop (frontier walk, rewind). */
const SLICE = 500;
/** Renew, settle and release ops per script call; the calls of one bulk call go out in one pipeline. */
const OPS_PER_CALL = 100;
/** Leases one fetch script call claims; a larger fetch makes several calls. */
const FETCH_PER_CALL = 100;

/**
 * Claims in calls of at most FETCH_PER_CALL leases. When a call reports work
 * left unfinished (a frontier walk cut short, a rewind under way: by this
 * process, or by one that died between slices), it is finished here, so a
 * crash never leaves a group stuck; a fetch that found nothing because of it
 * tries once more.
 */
export async function fetch(ctx: RedisContext, req: FetchRequest): Promise<FetchedLeases> {
  const P = await partitionsOf(ctx, req.stream);
  const parts = req.partitions ?? Array.from({ length: P }, (_, p) => p);
  let pending = false;
  let paused = false;
  // One claim, and more only while claims park delayed events (../delays.ts).
  const leases = await claimPastDelays(req.limit, async (limit) => {
    const round = await claim(ctx, { ...req, limit }, parts);
    pending ||= round.pending;
    paused ||= round.paused;
    return round;
  });
  // Marked only when empty: leases claimed by an earlier round before a pause are the caller's.
  if (paused && leases.length === 0) return pausedAnswer();
  if (!pending) return leases;
  await tidy(ctx, req.stream, req.group, parts);
  if (leases.length > 0) return leases;
  // The claim after tidy may dead-letter too: both claims' dead letters are told.
  const again = await claim(ctx, req, parts);
  if (again.paused && deadLetteredOf(leases) === undefined) return pausedAnswer();
  const before = deadLetteredOf(leases);
  return fetched(again.leases, before && again.deadLettered ? [...before, ...again.deadLettered] : (again.deadLettered ?? before?.slice()));
}

/**
 * One call first: most fetches find fewer than FETCH_PER_CALL events, and an idle
 * poll must stay one script call. When the first call came back full, the calls
 * for the rest of the limit go out together, in one pipeline (one round trip,
 * not one per hundred leases).
 */
async function claim(
  ctx: RedisContext,
  req: FetchRequest,
  parts: number[],
): Promise<ClaimRound<Lease> & { pending: boolean; paused: boolean }> {
  const k = ctx.keys(req.stream);
  const g = k.group(req.group);
  let keys = [k.meta, g.cfg, g.deliveries, k.wake];
  for (const p of parts) keys.push(k.log(p), g.leased(p), g.available(p));
  // Where a claim files a lease that expired on the last attempt (scripts/fetch.ts).
  keys.push(g.dead, g.deadOrder, g.deadTimes);
  // The stream's cancelled delayed events (cancelDelayed): read only for delayed entries.
  keys.push(k.cancelled);
  const plain = keys;
  // A group with flow limits gets their keys; one this process has no copy of is told by the script.
  const known = ctx.registrations.group(req.stream, req.group);
  if (known && hasFlowLimits(known)) keys = await flowKeys(ctx, req.stream, req.group, parts, plain, known);
  const now = ctx.clock.now();
  const call = (want: number): ScriptCall => ({ name: 'fetch', keys, args: [now, want, req.leaseMs, newId(), ...parts] });
  let first = call(Math.min(FETCH_PER_CALL, req.limit));
  let answer = fetchAnswer(await ctx.script('write', 'fetch', keys, first.args, req));
  if (answer.flowKeys) {
    const config = await getGroup(ctx, req.stream, req.group);
    if (!config) throw RheoError.groupNotFound(req.stream, req.group);
    keys = await flowKeys(ctx, req.stream, req.group, parts, plain, config);
    first = call(Math.min(FETCH_PER_CALL, req.limit));
    answer = fetchAnswer(await ctx.script('write', 'fetch', keys, first.args, req));
    if (answer.flowKeys)
      throw new RheoError('failed', `fetch of group "${req.group}" on stream "${req.stream}" kept asking for its flow keys`);
  }
  const answers: FetchAnswer[] = [answer];
  // The first call's wake id: wait() then wakes for anything written since this fetch began (a resume included).
  ctx.wake.lastIds.set(groupKey(req.stream, req.group), answers[0].wakeId);
  if (answers[0].paused) return { leases: [], pending: false, parked: 0, paused: true };
  // A call held by a group-wide limit took all it may: no more calls.
  if (answers[0].leases.count === first.args[1] && req.limit > FETCH_PER_CALL && !answers[0].held?.limit) {
    const rest: ScriptCall[] = [];
    for (let left = req.limit - FETCH_PER_CALL; left > 0; left -= FETCH_PER_CALL) rest.push(call(Math.min(FETCH_PER_CALL, left)));
    const replies = await ctx.call('write', () => ctx.scripts.runPipelined(rest));
    for (const [err, reply] of replies) {
      if (err) throw ctx.explain(ctx.mapError(err, 'write'), req.stream, req.group);
      answers.push(fetchAnswer(reply));
    }
  }
  const leases: Lease[] = [];
  let pending = false;
  let parked = 0;
  let deadLettered: ClaimDeadLetter[] | undefined;
  let held: FlowHeld | undefined;
  for (const out of answers) {
    pending ||= out.pending;
    parked += out.parked;
    if (out.held)
      held = {
        ...out.held,
        ...(held?.waitingForKey || out.held.waitingForKey
          ? { waitingForKey: (held?.waitingForKey ?? 0) + (out.held.waitingForKey ?? 0) }
          : {}),
      };
    if (out.deadLettered) deadLettered = deadLettered ? [...deadLettered, ...out.deadLettered] : out.deadLettered;
    for (let n = 0; n < out.leases.count; n++) {
      const event = eventOfLease(req.stream, out.leases, n);
      const { leaseId, attempt } = leaseOf(out.leases, n);
      leases.push({
        leaseId,
        receipt: entryId(event.sequence),
        stream: req.stream,
        group: req.group,
        consumerId: req.consumerId,
        attempt,
        leasedAt: new Date(out.at ?? now),
        expiresAt: new Date((out.at ?? now) + req.leaseMs),
        event,
      });
    }
  }
  const round: ClaimRound<Lease> & { pending: boolean; paused: boolean } = { leases, pending, parked, paused: false };
  if (deadLettered) round.deadLettered = deadLettered;
  if (held) round.held = held;
  return round;
}

/**
 * The fetch KEYS of a group with flow limits (scripts/fetch.ts): after the plain ones, the
 * key places of the named partitions, and under groupConcurrency the leased set of every
 * partition of the stream (its live leases are counted wherever they are).
 */
async function flowKeys(
  ctx: RedisContext,
  stream: string,
  group: string,
  parts: number[],
  plain: string[],
  config: GroupConfig,
): Promise<string[]> {
  const g = ctx.keys(stream).group(group);
  const keys = [...plain, ...g.keySlots(parts)];
  if (config.groupConcurrency !== null) {
    const P = await partitionsOf(ctx, stream);
    for (let p = 0; p < P; p++) keys.push(g.leased(p));
  }
  return keys;
}

/**
 * Finish the bounded work other calls left on these partitions (a frontier walk,
 * a rewind), one slice per script call, until none is left. Every slice leaves a
 * consistent state, so stopping anywhere (an error, a crash) loses nothing.
 */
export async function tidy(ctx: RedisContext, stream: string, group: string, parts: number[]): Promise<void> {
  const k = ctx.keys(stream);
  const g = k.group(group);
  let left = parts;
  while (left.length > 0) {
    const keys = [k.meta, g.cfg, g.deliveries, g.dead, g.deadOrder, k.wake, g.deadTimes, ...g.slots(left), ...flowSlots(k, g, left)];
    left = ((await ctx.script('write', 'tidy', keys, [SLICE, ...left], { stream, group })) as unknown[]).map(Number);
  }
}

export async function renew(ctx: RedisContext, leases: Lease<unknown>[], leaseMs: number): Promise<RenewResult[]> {
  return bulk<{ lease: Lease<unknown> }, RenewResult>(
    ctx,
    leases.map((lease) => ({ lease })),
    'renew',
    (now) => [now, leaseMs],
    ({ lease }) => leaseOpValues(lease),
    (now) => ({ ok: true, expiresAt: new Date(now + leaseMs) }),
    (error) => ({ ok: false, error }),
  );
}

export async function settle(ctx: RedisContext, ops: SettleOp[]): Promise<SettleResult[]> {
  return bulk<SettleOp, SettleResult>(
    ctx,
    ops,
    'settle',
    // The script reads the group's maxAttempts and backoff from its cfg hash: the stored settings decide (ADR 047).
    (now) => [now, SLICE],
    settleOpValues,
    (_now, code, maxAttempts) => settleWritten(code, maxAttempts),
    (error) => ({ ok: false, error }),
  );
}

/**
 * A written op's result from the settle script's code for it ('ok' an ack,
 * 'ok:reject', 'ok:dead_letter', 'ok:retry:<delay ms>') and the group's stored
 * maxAttempts the script decided by.
 */
function settleWritten(code: string, maxAttempts: number): SettleResult {
  if (code === 'ok') return { ok: true };
  if (code === 'ok:reject') return { ok: true, outcome: 'reject' };
  if (code === 'ok:dead_letter') return { ok: true, outcome: 'dead_letter', maxAttempts };
  return { ok: true, outcome: 'retry', maxAttempts, delayMs: Number(code.slice('ok:retry:'.length)) };
}

export async function release(ctx: RedisContext, leases: Lease<unknown>[]): Promise<SettleResult[]> {
  return bulk<{ lease: Lease<unknown> }, SettleResult>(
    ctx,
    leases.map((lease) => ({ lease })),
    'release',
    (now) => [now],
    ({ lease }) => leaseOpValues(lease),
    () => ({ ok: true }),
    (error) => ({ ok: false, error }),
  );
}

/**
 * Bulk ops: grouped by (stream, group), cut into script calls of at most
 * OPS_PER_CALL ops, all sent in one pipeline (one round trip), the per-op
 * answers mapped back. `build` returns an op's values: a call's ops go as ONE
 * JSON text after the `head` args (one argument to encode and to convert, not
 * five to eight per op), and the script numbers the partitions' KEYS slots by
 * first appearance, as done here. A settle whose
 * frontier walk was cut short is finished (tidy) before this returns, so lag
 * is exact once a settle resolved.
 */
async function bulk<T extends { lease: Lease<unknown> }, R>(
  ctx: RedisContext,
  items: T[],
  name: 'renew' | 'settle' | 'release',
  head: (now: number) => Array<string | number>,
  build: (item: T) => OpValue[],
  /** A written op: `code` the script's 'ok' or 'ok:…' for it; `maxAttempts` the stored one the settle script answers (else NaN). */
  ok: (now: number, code: string, maxAttempts: number) => R,
  fail: (error: RheoError) => R,
): Promise<R[]> {
  const now = ctx.clock.now();
  const results: R[] = new Array(items.length);
  const byGroup = new Map<string, number[]>();
  items.forEach((it, i) => {
    const key = groupKey(it.lease.stream, it.lease.group);
    const list = byGroup.get(key);
    if (list) list.push(i);
    else byGroup.set(key, [i]);
  });
  /** One script call, and what it answers for: the items at `index`, of one group, on `parts`. */
  type Call = ScriptCall & { index: number[]; stream: string; group: string; parts: number[] };
  const calls: Call[] = [];
  for (const indexes of byGroup.values()) {
    const { stream, group } = items[indexes[0]].lease;
    let P: number;
    try {
      P = await partitionsOf(ctx, stream);
      // A group this process knows of is not read again: the scripts answer for one deleted since.
      await configOf(ctx, stream, group);
    } catch (err) {
      for (const i of indexes) results[i] = fail(ctx.mapError(err, 'read'));
      continue;
    }
    const k = ctx.keys(stream);
    const g = k.group(group);
    const valid: number[] = [];
    for (const i of indexes) {
      if (namesDelivery(items[i].lease, P)) valid.push(i);
      else results[i] = fail(RheoError.staleLease(name));
    }
    for (let from = 0; from < valid.length; from += OPS_PER_CALL) {
      const index = valid.slice(from, from + OPS_PER_CALL);
      const slots = new Map<number, number>();
      const ops: OpValue[] = [];
      for (const i of index) {
        const { partition } = items[i].lease.event;
        if (!slots.has(partition)) slots.set(partition, slots.size);
        for (const v of build(items[i])) ops.push(v);
      }
      const args = [...head(now), JSON.stringify(ops)];
      const parts = [...slots.keys()];
      calls.push({ name, keys: bulkKeys(name, k, g, parts), args, index, stream, group, parts });
    }
  }
  if (calls.length === 0) return results;
  let answers: RedisPipelineResult[];
  try {
    // One pipeline; on a cluster one per slot (streams on several nodes), all sent at once.
    answers = await ctx.call('write', () => ctx.scripts.runPipelined(calls));
  } catch (err) {
    answers = calls.map(() => [err as Error, null]);
  }
  const unfinished = new Map<string, { stream: string; group: string; parts: Set<number> }>();
  calls.forEach((c, n) => {
    const [err, reply] = answers[n];
    const codes = reply as Array<string | number>;
    const maxAttempts = !err && name === 'settle' ? Number(codes[c.index.length + 1]) : NaN;
    c.index.forEach((i, j) => {
      const code = err ? '' : String(codes[j]);
      if (err) results[i] = fail(ctx.explain(ctx.mapError(err, 'write'), c.stream, c.group));
      else if (code === 'ok' || code.startsWith('ok:')) results[i] = ok(now, code, maxAttempts);
      else results[i] = fail(ctx.opError(name, code, c.stream, c.group));
    });
    // The settle script ends with a flag: 1 when its frontier walk was cut short by the budget.
    if (!err && name === 'settle' && Number(codes[c.index.length]) === 1) {
      const key = groupKey(c.stream, c.group);
      const u = unfinished.get(key) ?? { stream: c.stream, group: c.group, parts: new Set<number>() };
      for (const p of c.parts) u.parts.add(p);
      unfinished.set(key, u);
    }
  });
  for (const u of unfinished.values()) {
    // The settles are done whatever happens here; a walk left unfinished is finished by the next fetch or lag.
    await tidy(ctx, u.stream, u.group, [...u.parts]).catch(() => undefined);
  }
  return results;
}

/**
 * Whether a lease can name a delivery of a stream of `partitions` partitions: a
 * partition of the stream (the one rule, checkPartition) and a sequence of at least
 * 1. One that cannot is stale without asking the store.
 */
function namesDelivery(lease: Lease<unknown>, partitions: number): boolean {
  const { partition, sequence } = lease.event;
  if (!Number.isInteger(sequence) || sequence < 1) return false;
  try {
    checkPartition('partition', partition, partitions);
    return true;
  } catch {
    return false;
  }
}

/** KEYS of renew / settle / release for the partitions of one call (each script's module documents its layout). */
function bulkKeys(name: 'renew' | 'settle' | 'release', k: StreamKeys, g: GroupKeys, parts: number[]): string[] {
  switch (name) {
    case 'renew':
      return [k.meta, g.cfg, g.deliveries, ...parts.map((p) => g.leased(p))];
    case 'settle':
      return [
        k.meta,
        g.cfg,
        g.deliveries,
        g.dead,
        g.deadOrder,
        k.wake,
        g.deadTimes,
        ...parts.flatMap((p) => [g.leased(p), g.available(p), k.log(p)]),
        ...g.keySlots(parts),
      ];
    case 'release':
      return [k.meta, g.cfg, g.deliveries, k.wake, ...parts.flatMap((p) => [g.leased(p), g.available(p)])];
  }
}
