// The waiting section of the Redis backend (docs/adr/048-skip-reschedule-cancel.md):
// skip, reschedule and cancelDelayed, one script each (scripts/skip.ts,
// reschedule.ts, cancel-delayed.ts), over keys of the stream's hash slot. Many ids
// are cut into calls of IDS_PER_CALL (a script blocks the server while it runs);
// each id's answer is its own. A frontier walk a script cut short is finished by
// tidy, as after a settle.
import { RheoError } from '../../core/errors';
import type { GroupSkips } from '../../core/types';
import type { CancelDelayedRequest, RescheduleRequest, SettleResult, SkipRequest } from '../backend';
import { CANCELLED_REASON, notDelayed, notInStream, notOffered, settledAlready, type WaitingOperation, waitsForKey } from '../waiting';
import type { RedisContext } from './context';
import { tidy } from './delivery';
import { configOf, partitionsOf } from './registry';
import { flowSlots } from './keys';

/** Ids per script call: a bounded call, as settle's ops are. */
const IDS_PER_CALL = 100;
/** Records a frontier walk may look at in one call (tidy finishes the rest). */
const BUDGET = 500;
/** Rounds of cancelDelayed while the stream's groups change under it. */
const CANCEL_ROUNDS = 5;

export async function skip(ctx: RedisContext, req: SkipRequest): Promise<SettleResult[]> {
  const P = await partitionsOf(ctx, req.stream);
  await configOf(ctx, req.stream, req.group);
  const results: SettleResult[] = [];
  let cut = false;
  for (let from = 0; from < req.ids.length; from += IDS_PER_CALL) {
    const ids = req.ids.slice(from, from + IDS_PER_CALL);
    const args = [ctx.clock.now(), BUDGET, req.reason ?? '', ...ids];
    const out = (await ctx.script('write', 'skip', keysOf(ctx, req.stream, req.group, P), args, req)) as Array<string | number>;
    results.push(...ids.map((id, i) => answer(ctx, 'skip', req.stream, req.group, id, String(out[i]))));
    if (Number(out[ids.length]) === 1) cut = true;
  }
  if (cut)
    await tidy(
      ctx,
      req.stream,
      req.group,
      Array.from({ length: P }, (_, p) => p),
    );
  return results;
}

export async function reschedule(ctx: RedisContext, req: RescheduleRequest): Promise<SettleResult[]> {
  const P = await partitionsOf(ctx, req.stream);
  await configOf(ctx, req.stream, req.group);
  const now = ctx.clock.now();
  const due = req.deliverAt ? req.deliverAt.getTime() : now + req.delayMs!;
  const results: SettleResult[] = [];
  for (let from = 0; from < req.ids.length; from += IDS_PER_CALL) {
    const ids = req.ids.slice(from, from + IDS_PER_CALL);
    const out = (await ctx.script('write', 'reschedule', keysOf(ctx, req.stream, req.group, P), [now, due, ...ids], req)) as string[];
    results.push(...ids.map((id, i) => answer(ctx, 'reschedule', req.stream, req.group, id, String(out[i]))));
  }
  return results;
}

export async function cancelDelayed(ctx: RedisContext, req: CancelDelayedRequest): Promise<number> {
  await partitionsOf(ctx, req.stream);
  const k = ctx.keys(req.stream);
  for (let round = 1; ; round++) {
    // The event's position and the stream's groups, read first; the script checks both still hold.
    const [pos, groups] = await ctx.call(
      'read',
      async (r) => [(await r.hmget(k.ids, req.id))[0], (await r.smembers(k.groups)).sort()] as const,
    );
    if (pos === null) throw notInStream('cancelDelayed', req.id, req.stream);
    const p = Number(pos.split(':')[0]);
    const keys = [k.meta, k.ids, k.groups, k.wake, k.cancelled, k.log(p)];
    for (const name of groups) {
      const g = k.group(name);
      keys.push(g.cfg, g.deliveries, g.leased(p), g.available(p), g.keyOpen(p), g.keyWaiting(p));
    }
    const args = [ctx.clock.now(), BUDGET, req.reason ?? CANCELLED_REASON, req.id, pos, ...groups];
    const out = (await ctx.script('write', 'cancelDelayed', keys, args, { stream: req.stream })) as Array<string | number>;
    switch (out[0]) {
      case 'ok': {
        for (const g of out.slice(2)) await tidy(ctx, req.stream, groups[Number(g)], [p]);
        return Number(out[1]);
      }
      case 'cancelled':
        return 0;
      case 'not_in_stream':
        throw notInStream('cancelDelayed', req.id, req.stream);
      case 'not_delayed':
        throw notDelayed(req.id);
      case 'lease_held':
        throw RheoError.leaseHeld('cancelDelayed', req.id, groups[Number(out[1])], new Date(Number(out[2])));
      case 'retry':
        if (round < CANCEL_ROUNDS) continue;
        throw new RheoError('failed', `cancelDelayed: the groups of stream "${req.stream}" kept changing; try again`);
      default:
        throw new RheoError('failed', `cancelDelayed: the script answered an unknown code ${String(out[0])}`);
    }
  }
}

/** The group's skips as stored (cfg `sk`, `skr`, `ska`), for groupInfo. */
export async function skipsOf(ctx: RedisContext, stream: string, group: string): Promise<GroupSkips> {
  const cfg = ctx.keys(stream).group(group).cfg;
  const [n, reason, at] = await ctx.call('read', (r) => r.hmget(cfg, 'sk', 'skr', 'ska'));
  return { count: Number(n ?? 0), lastReason: reason ?? null, lastAt: at === null ? null : new Date(Number(at)) };
}

/** KEYS of skip and reschedule: meta, cfg, dl, ids, wake, then every partition's leased and available sets. */
function keysOf(ctx: RedisContext, stream: string, group: string, partitions: number): string[] {
  const k = ctx.keys(stream);
  const g = k.group(group);
  const keys = [k.meta, g.cfg, g.deliveries, k.ids, k.wake];
  for (let p = 0; p < partitions; p++) keys.push(g.leased(p), g.available(p));
  keys.push(
    ...flowSlots(
      k,
      g,
      Array.from({ length: partitions }, (_, p) => p),
    ),
  );
  return keys;
}

/** One id's answer, from the code the script gave (includes/waiting.ts). */
function answer(ctx: RedisContext, operation: WaitingOperation, stream: string, group: string, id: string, code: string): SettleResult {
  if (code === 'ok') return { ok: true };
  if (code === 'not_in_stream') return { ok: false, error: notInStream(operation, id, stream) };
  if (code === 'not_offered') return { ok: false, error: notOffered(operation, id, group) };
  if (code === 'settled') return { ok: false, error: settledAlready(operation, id, group) };
  if (code === 'waits_for_key') return { ok: false, error: waitsForKey(id, group) };
  if (code.startsWith('lease_held:'))
    return { ok: false, error: RheoError.leaseHeld(operation, id, group, new Date(Number(code.slice(11)))) };
  return { ok: false, error: ctx.opError(operation, code, stream, group) };
}
