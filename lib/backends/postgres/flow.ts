// Flow control on PostgreSQL (docs/adr/049-flow-control.md): the claim of a group
// with flow limits, and what other sections ask of key places. Groups without
// limits never reach this file: their claim is delivery.ts's, statement for statement.
//
// A claim of such a group is one transaction: lock the group's partition rows (all
// of them under a group-wide limit, so that those claims take turns and each sees
// the live leases and the rate log the previous one left), read the group's row as
// stored, hand key places on from release rows (a statement of its own, whose
// snapshot starts after the locks), then claim (plans/flow-claim.ts for key places,
// the usual statement with the cap otherwise), and write the rate log.
import { groupRoom, keyPlaces, rateLogAfter, rateNow, type RateLog } from '../../core/flow';
import { deadLetteredOf, pausedAnswer } from '../../core/fetched';
import { newId } from '../../core/ids';
import type { GroupConfig, Lease } from '../../core/types';
import type { FetchedLeases, FetchRequest } from '../backend';
import { claimPastDelays, type ClaimRound } from '../delays';
import { toGroup } from '../sql/rows';
import { claimedRound } from './claimed';
import type { PostgresContext, PreparedRun } from './context';
import { claimGate } from './pause';

/**
 * Most fresh events per partition a first claim round sets waiting for their key;
 * each round after one that set some waiting (or parked) may set four times as
 * many, up to {@link KEY_SCAN}. Each is a primary-key read of an event that a
 * claim of a keyless group never makes, so a claim that meets a few waiting events
 * reads a few more, and one that meets a long run of one key passes it in a few
 * rounds.
 */
const FIRST_SCAN = 16;
/** Most fresh events per partition one claim round sets waiting (memory: delivery.ts KEY_SCAN). */
export const KEY_SCAN = 1000;

/** The waiting events round `round` (0: the first) of a fetch may pass per partition. */
function scanOf(round: number): number {
  return Math.min(KEY_SCAN, FIRST_SCAN * 4 ** round);
}

/** Whether a settle of the group frees something a waiting consumer can claim beyond a partition head. */
export function wakesOnSettle(config: GroupConfig | null): boolean {
  return config !== null && (keyPlaces(config) !== null || config.groupConcurrency !== null);
}

/** The claim of group `known` (the process's copy of it), which has flow limits. */
export async function fetchFlow(
  ctx: PostgresContext,
  req: FetchRequest,
  known: GroupConfig,
  partitionCount: number,
  partitions: number[],
  now: number,
): Promise<FetchedLeases> {
  let round = 0;
  // Each round reads the group's row as stored; the next round starts from what it read. Nothing inside the
  // transaction asks for a second connection (a pool of one would wait for itself).
  const leases = await claimPastDelays(req.limit, (limit) =>
    ctx.preparedTx('fetch', async (run) => {
      const { result, stored } = await claimRound(ctx, run, { ...req, limit }, known, partitionCount, partitions, now, scanOf(round++));
      if (stored) known = stored;
      return result;
    }),
  );
  if (leases.length > 0 || deadLetteredOf(leases) || (leases as FetchedLeases).held) return leases;
  return (await claimGate(ctx, req.stream, req.group, partitions, now)) === 'paused' ? pausedAnswer() : leases;
}

async function claimRound(
  ctx: PostgresContext,
  run: PreparedRun,
  req: FetchRequest,
  known: GroupConfig,
  partitionCount: number,
  partitions: number[],
  now: number,
  scan: number,
): Promise<{ result: ClaimRound<Lease>; stored?: GroupConfig }> {
  const wide = known.groupConcurrency !== null || known.rateLimit !== null;
  const all = Array.from({ length: partitionCount }, (_, p) => p);
  await run(ctx.plans.delivery.lockGroupPartitions, [req.stream, req.group, wide ? all : partitions]);
  // The row as stored, and (with key places) the places ended keys freed handed on: one statement after the locks.
  const [stored] = await run(ctx.plans.flow.state, [req.stream, req.group, now, partitions, ctx.channel]);
  // Gone since: the claim statement finds no partition row either, and answers nothing.
  if (!stored) return { result: { leases: [], parked: 0 } };
  const g = ctx.rememberGroup(toGroup(stored));
  const log: RateLog = (stored.rate_log ?? []).map(Number);
  // Judged at, and stamped with, no time before the log's newest start: this process read its now before its turn.
  const at = g.rateLimit !== null ? rateNow(log, now) : now;
  // A group-wide limit set in place since this process last read the group holds from its next round on, once
  // every lock is taken (taking the rest now, after some, could deadlock with a claim that took them all).
  const room = wide ? groupRoom(g, req.limit, Number(stored.live ?? 0), log, at) : { limit: req.limit };
  if (room.limit === 0) return { result: { leases: [], parked: 0, held: room.held }, stored: g };
  const places = keyPlaces(g);
  const params = [
    req.stream,
    req.group,
    partitions,
    at,
    room.limit,
    ctx.rotate(req.stream, req.group, partitionCount),
    partitionCount,
    req.consumerId,
    req.leaseMs,
    newId(),
  ];
  let result: ClaimRound<Lease>;
  let waited = 0;
  if (places !== null) {
    const rows = await run(ctx.plans.flow.claim, [...params, places, scan]);
    waited = rows.filter((r) => r.waited).length;
    result = claimedRound(
      rows.filter((r) => !r.waited),
      req,
      at,
      g.maxAttempts,
    );
    // Events set waiting take no place of the limit, but a round that set some claims again (../delays.ts).
    result.parked += waited;
  } else {
    const plan = g.ordering === 'partition' ? ctx.plans.delivery.fetchOrderedCapped : ctx.plans.delivery.fetchCapped;
    result = claimedRound(await run(plan, params), req, at, g.maxAttempts);
  }
  if (g.rateLimit !== null && result.leases.length > 0) {
    const after = rateLogAfter(log, at, g.rateLimit.perMs, result.leases.length);
    await run(ctx.plans.flow.saveRateLog, [req.stream, req.group, after]);
  }
  const held = { ...room.held, ...(waited > 0 ? { waitingForKey: waited } : {}) };
  if (held.limit || held.waitingForKey) result.held = held;
  return { result, stored: g };
}
