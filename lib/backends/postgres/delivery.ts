// The delivery section of the PostgreSQL backend: fetch (the claim), renew,
// settle, release, and the transactional consumer's ack.
import { RheoError } from '../../core/errors';
import { deadLetteredOf, pausedAnswer } from '../../core/fetched';
import { hasFlowLimits } from '../../core/flow';
import { newId } from '../../core/ids';
import { classifySettleError } from '../../core/settle';
import type { Lease } from '../../core/types';
import type { FetchedLeases, FetchRequest, RenewResult, SettleOp, SettleResult, TransactionalAck } from '../backend';
import { claimPastDelays } from '../delays';
import { isUniqueViolation, mapDriverError } from '../sql/errors';
import { leasePosition, planLeases, type PlannedLease, planSettles, settled, staleRenewals } from '../sql/settle-plan';
import { query } from '../sql/statement';
import { runHandlerWork } from '../sql/transaction';
import { boolArray, intArray, textArray } from './arrays';
import { claimedRound } from './claimed';
import { backendClosed, type PostgresContext } from './context';
import { fetchFlow, wakesOnSettle } from './flow';
import { claimGate } from './pause';
import type { DbClaimed } from './plans/claim';
import type { DbFenced, DbSettledOp } from './plans/delivery';

/** Rounds of a fenced statement for ops whose row changed under it (plans/delivery.ts, heldBy), the first included. */
const FENCE_ROUNDS = 3;

/**
 * Run a fenced statement (settle, release, renew) over `todo`, and again over the
 * ops it held but did not change: a change of the same row (a renewal of that
 * lease) committed while the statement waited for the row's lock, and the next
 * statement's snapshot sees it. `answer` gets every other row. An op still not
 * applied after FENCE_ROUNDS is left unanswered: the caller reports it stale,
 * which is safe (the lease expires and the event is delivered again).
 */
async function fencedRounds<P extends { i: number }, R extends DbFenced>(
  todo: P[],
  run: (batch: P[]) => Promise<R[]>,
  answer: (row: R) => void,
): Promise<void> {
  for (let round = 1; todo.length > 0; round++) {
    const again = new Set<number>();
    for (const r of await run(todo)) {
      if (r.receipt_ok && !r.applied) {
        if (round < FENCE_ROUNDS) again.add(Number(r.i));
        continue;
      }
      answer(r);
    }
    todo = again.size === 0 ? [] : todo.filter((p) => again.has(p.i));
  }
}

/**
 * The columns that name and fence each planned lease, bound as one array per
 * column ($2..$8 of the settle and release statements): position in the call,
 * stream, group, partition, sequence, lease id, receipt.
 */
function fenceColumns(planned: PlannedLease[]) {
  return [
    intArray(planned.map((p) => p.i)),
    textArray(planned.map((p) => p.stream)),
    textArray(planned.map((p) => p.group)),
    intArray(planned.map((p) => p.partition)),
    intArray(planned.map((p) => p.sequence)),
    textArray(planned.map((p) => p.leaseId)),
    textArray(planned.map((p) => p.receipt)),
  ];
}

export async function fetch(ctx: PostgresContext, req: FetchRequest): Promise<FetchedLeases> {
  const info = await ctx.mustStream(req.stream);
  const g = await ctx.mustGroup(req.stream, req.group);
  const partitions = req.partitions ?? Array.from({ length: info.partitions }, (_, p) => p);
  const now = ctx.clock.now();
  ctx.board.fetching(req.stream, req.group);
  if (hasFlowLimits(g)) return fetchFlow(ctx, req, g, info.partitions, partitions, now);
  // The rows an ordered claim locked last (their pause gates), for an empty answer.
  let locked: Array<{ paused_to: unknown; flow: boolean }> | undefined;
  // One claim, and more only while claims park delayed events (../delays.ts).
  const leases = await claimPastDelays(req.limit, async (limit) => {
    const params = [
      req.stream,
      req.group,
      partitions,
      now,
      limit,
      ctx.rotate(req.stream, req.group, info.partitions),
      info.partitions,
      req.consumerId,
      req.leaseMs,
      newId(),
    ];
    const rows =
      g.ordering === 'partition'
        ? await ctx.tx('fetch', async (qr) => {
            // Lock first, claim in a second statement: its snapshot then sees every claim committed before our lock.
            locked = await query(qr, ctx.plans.delivery.lockGroupPartitions, [req.stream, req.group, partitions]);
            return query(qr, ctx.plans.delivery.fetchOrdered, params);
          })
        : await claimFresh(ctx, params);
    return claimedRound(rows, req, now, g.maxAttempts);
  });
  // Empty: was it the pause? (docs/adr/046-pausing-a-group.md; a claim that found events never asks.)
  if (leases.length > 0 || deadLetteredOf(leases)) return leases;
  const gate = await claimGate(ctx, req.stream, req.group, partitions, now, locked);
  if (gate === 'paused') return pausedAnswer();
  if (gate === 'flow') {
    // Flow limits set in place by another process: read the group again and claim by them.
    ctx.forgetGroup(req.stream, req.group);
    const stored = await ctx.mustGroup(req.stream, req.group);
    if (hasFlowLimits(stored)) return fetchFlow(ctx, req, stored, info.partitions, partitions, now);
  }
  return leases;
}

/**
 * The claim of a group without partition ordering: the fast statement, or, if its
 * insert of fresh deliveries met a row (plans/delivery.ts, claimPlan: never expected), the
 * guarded one, which leaves such an event to its row. The fast one failed whole.
 */
async function claimFresh(ctx: PostgresContext, params: unknown[]): Promise<DbClaimed[]> {
  try {
    return await ctx.q(ctx.plans.delivery.fetch, params, 'write', 'fetch');
  } catch (err) {
    if (!(err instanceof RheoError && isUniqueViolation(err.cause))) throw err;
    return ctx.q(ctx.plans.delivery.fetchGuarded, params, 'write', 'fetch');
  }
}

export async function renew(ctx: PostgresContext, leases: Lease<unknown>[], leaseMs: number): Promise<RenewResult[]> {
  const now = ctx.clock.now();
  const results: Array<RenewResult | undefined> = new Array(leases.length);
  const todo: PlannedLease[] = [];
  leases.forEach((l, i) => {
    const pos = leasePosition(l);
    if (pos) todo.push({ i, stream: l.stream, group: l.group, ...pos, leaseId: l.leaseId, receipt: l.receipt });
  });
  await fencedRounds(
    todo,
    (batch) => ctx.q(ctx.plans.delivery.renew, [now, now + leaseMs, ...fenceColumns(batch)], 'write', 'renew'),
    (r) => {
      results[Number(r.i)] = r.receipt_ok
        ? { ok: true, expiresAt: new Date(now + leaseMs) }
        : { ok: false, error: RheoError.receiptMismatch('renew') };
    },
  );
  return staleRenewals(results);
}

export async function settle(ctx: PostgresContext, ops: SettleOp[]): Promise<SettleResult[]> {
  const now = ctx.clock.now();
  await ctx.loadGroupsOf(ops.map((op) => op.lease));
  const { planned, answered } = planSettles(ops, (s, g) => ctx.cachedGroup(s, g));
  // Errors are built only for the ops that fail (a RheoError captures a stack: not free on the hot path).
  const results: Array<SettleResult | undefined> = new Array(ops.length);
  if (planned.length === 0) return settled(results, answered, (i) => ops[i].kind);
  await fencedRounds(
    planned,
    (batch) => {
      return ctx.q(
        ctx.plans.delivery.settle,
        [
          now,
          ...fenceColumns(batch),
          textArray(batch.map((p) => p.action)),
          batch.map((p) => p.delayMs),
          batch.map((p) => p.reason),
          ctx.channel,
          boolArray(batch.map((p) => p.ordered || wakesOnSettle(ctx.cachedGroup(p.stream, p.group)))),
        ],
        'write',
        'settle',
      );
    },
    (r) => {
      const i = Number(r.i);
      results[i] = r.receipt_ok ? written(r) : { ok: false, error: RheoError.receiptMismatch(ops[i].kind) };
    },
  );
  return settled(results, answered, (i) => ops[i].kind);
}

/** A written op's result: what the statement decided, by the group's settings as stored (an ack: nothing more). */
function written(r: DbSettledOp): SettleResult {
  if (r.outcome === 'retry') return { ok: true, outcome: 'retry', maxAttempts: Number(r.max_attempts), delayMs: Number(r.retry_ms) };
  if (r.outcome !== 'dead') return { ok: true };
  return r.max_attempts === null
    ? { ok: true, outcome: 'reject' }
    : { ok: true, outcome: 'dead_letter', maxAttempts: Number(r.max_attempts) };
}

export async function release(ctx: PostgresContext, leases: Lease<unknown>[]): Promise<SettleResult[]> {
  const now = ctx.clock.now();
  await ctx.loadGroupsOf(leases);
  const { planned, answered } = planLeases(
    leases,
    () => 'release',
    (s, g) => ctx.cachedGroup(s, g),
  );
  const results: Array<SettleResult | undefined> = new Array(leases.length);
  if (planned.length > 0) {
    const woken = new Set<string>();
    await fencedRounds(
      planned,
      (batch) => ctx.q(ctx.plans.delivery.release, [now, ...fenceColumns(batch), ctx.channel], 'write', 'release'),
      (r) => {
        const i = Number(r.i);
        results[i] = r.receipt_ok ? { ok: true } : { ok: false, error: RheoError.receiptMismatch('release') };
        if (r.receipt_ok) woken.add(leases[i].stream);
      },
    );
    // Same-process consumers need not wait for the NOTIFY round trip.
    for (const stream of woken) ctx.board.wake(stream);
  }
  return settled(results, answered, () => 'release');
}

/**
 * The handler's transaction and its ack (a transactional consumer): one pooled
 * connection for the whole delivery; `work` gets its EntityManager. The fence
 * runs last, inside the transaction, and locks the delivery until the commit.
 * A statement or commit that definitely failed throws (the handler's writes are
 * gone with it: retried as a handler failure); a commit whose fate is unknown is
 * `ack_failed`, since writes and ack share it.
 */
export async function ackInTransaction(
  ctx: PostgresContext,
  lease: Lease<unknown>,
  work: (manager: unknown) => Promise<boolean>,
): Promise<TransactionalAck> {
  const plan = await ctx.planTransactionalAck(lease);
  if ('error' in plan) return { kind: 'ack_failed', error: plan.error };
  const p = plan.planned;
  if (ctx.isClosed()) throw backendClosed();
  const qr = ctx.ds.createQueryRunner();
  const rollback = () => (qr.isTransactionActive ? qr.rollbackTransaction().catch(() => undefined) : undefined);
  try {
    try {
      await qr.connect();
      await qr.startTransaction();
    } catch (err) {
      throw mapDriverError(err, 'read', 'ackInTransaction');
    }
    if (!(await runHandlerWork(work, qr.manager, rollback))) return { kind: 'rolled_back' };
    const ordered = p.config.ordering === 'partition' || wakesOnSettle(p.config);
    let row: { acked: number; live: boolean } | undefined;
    try {
      [row] = await query(qr, ctx.plans.delivery.ackInTransaction, [
        ctx.clock.now(),
        p.stream,
        p.group,
        p.partition,
        p.sequence,
        p.leaseId,
        p.receipt,
        ctx.channel,
        ordered,
      ]);
    } catch (err) {
      await rollback();
      // Nothing was committed: a lost connection here is not ambiguous.
      throw mapDriverError(err, 'read', 'ack');
    }
    if (row?.acked !== 1) {
      await rollback();
      return { kind: 'ack_failed', error: row?.live ? RheoError.receiptMismatch('ack') : RheoError.staleLease('ack') };
    }
    try {
      await qr.commitTransaction();
    } catch (err) {
      await rollback();
      const error = mapDriverError(err, 'write', 'ack commit');
      // Lost on the way (the connection, the server): writes and ack share a fate nobody knows.
      if (classifySettleError(error) === 'unknown') return { kind: 'ack_failed', error };
      throw error; // refused at commit (a deferred constraint, a serialization failure): nothing committed
    }
    // Same-process consumers of an ordered group need not wait for the NOTIFY round trip.
    if (ordered) ctx.board.wake(p.stream);
    return { kind: 'committed' };
  } finally {
    await qr.release().catch(() => undefined);
  }
}
