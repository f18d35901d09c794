// The claim on SQLite (delivery.ts's fetch): one write transaction picks due
// deliveries and fresh events round-robin across partitions, leases them, parks
// delayed events not yet due and dead-letters deliveries whose last lease expired.
// A group with flow limits (docs/adr/049-flow-control.md) claims the same way within
// the room its limits leave, its keyed partitions' fresh events judged by their keys
// (delivery-flow.ts); a group without them runs only the statements it always ran.
import { newId } from '../../core/ids';
import { leaseExpiredReason } from '../../core/settle';
import type { GroupConfig, Lease, RheoEvent } from '../../core/types';
import type { ClaimDeadLetter, FetchRequest } from '../backend';
import type { ClaimRound } from '../delays';
import { toEvent } from '../sql/rows';
import type { SqliteContext } from './context';
import { eventFromRaw } from './event-rows';
import { closeFlow, endKeyed, openFlow, passScan, scanFresh, type Candidate, type Flow } from './delivery-flow';
import { storedSettings } from './group-settings';
import type { RawEventRow } from './plans';

/** A claim round, and whether a partition row's pause gate held it back (`paused_to` after now: pause.ts). */
export type SqliteClaimRound = ClaimRound<Lease> & { paused: boolean };

/**
 * One claim of up to `req.limit` events, in one write transaction. A fresh
 * delayed event before its deliver_at takes its place in the round-robin and is
 * passed by the cursor like any fresh event, but parked instead of leased
 * (parkDelayed); its deliver_at is read only at or below the partition's
 * delayed_to mark. A partition whose row is paused (docs/adr/046-pausing-a-group.md)
 * offers nothing: read with its cursor, the gate costs no statement.
 */
export function claimRound(
  ctx: SqliteContext,
  req: FetchRequest,
  g: GroupConfig,
  partitions: number[],
  start: number,
  partitionCount: number,
  now: number,
): Promise<SqliteClaimRound> {
  return ctx.write('fetch', () => claimIn(ctx, req, g, partitions, start, partitionCount, now, null));
}

/**
 * The claim inside its transaction. `flow` null: the group's claim as it ran before
 * flow limits, until the first partition row says the group has limits (its `flow`
 * gate, set by createGroup and updateGroup of any process); the claim then starts
 * over with them (delivery-flow.ts), having written nothing.
 */
function claimIn(
  ctx: SqliteContext,
  req: FetchRequest,
  g: GroupConfig,
  partitions: number[],
  start: number,
  partitionCount: number,
  now: number,
  flow: Flow | null,
): SqliteClaimRound {
  const expiresAt = now + req.leaseMs;
  const { stream, group } = req;
  const limit = flow ? flow.limit : req.limit;
  const p = ctx.plans;
  const voided = (partition: number, r: { sequence: number; attempt: number }, delayedTo: number) =>
    r.attempt === 0 && r.sequence <= delayedTo && ctx.stmt(ctx.waiting.cancelledAt).get(stream, partition, r.sequence) !== undefined;
  // Judged by maxAttempts as stored now, read only when an expired lease is a candidate (a change made by
  // any process decides at once: docs/adr/047-changing-a-group-in-place.md); the caller's copy otherwise.
  let maxAttempts: number | undefined;
  const storedMax = () => (maxAttempts ??= storedSettings(ctx, stream, group)?.maxAttempts ?? g.maxAttempts);
  const last = (r: { state: string; attempt: number }) => (r.state === 'leased' && r.attempt >= storedMax() ? r.attempt : undefined);
  // Candidates per partition, in sequence order: due deliveries, then fresh events from the cursor.
  const queues: Array<{ partition: number; cursor: number; seqs: Candidate[]; scan?: Candidate[] }> = [];
  let paused = false;
  for (const partition of partitions) {
    const pos = ctx.stmt(p.position).get(stream, group, partition);
    if (!pos) continue;
    if (pos.paused_to !== null && pos.paused_to > now) {
      paused = true;
      continue;
    }
    if (!flow && pos.flow !== null) {
      const opened = openFlow(ctx, stream, group, req.limit, now);
      if (!opened) return { leases: [], parked: 0, paused: false };
      if (opened.limit === 0) return { leases: [], parked: 0, paused: false, held: opened.held };
      return claimIn(ctx, req, g, partitions, start, partitionCount, opened.at, opened);
    }
    // The trim guard: nothing at or below the trim point is leased, and the cursor resumes after it.
    const tt = pos.trimmed_to;
    const cursor = Math.max(pos.cursor, tt + 1);
    const seqs: Candidate[] = [];
    let scan: Candidate[] | undefined;
    if (g.ordering === 'partition') {
      const busy = ctx.stmt(p.liveLeases).get(stream, group, partition, tt, now)!.n > 0;
      const head = ctx.stmt(p.firstOpen).get(stream, group, partition, tt);
      if (!busy && head && head.due_at <= now)
        seqs.push({ sequence: head.sequence, fresh: false, expiredOn: last(head), void: voided(partition, head, pos.delayed_to) });
      else if (!busy && !head && cursor <= pos.hwm) seqs.push({ sequence: cursor, fresh: true });
    } else if (flow?.places != null) {
      for (const r of ctx.stmt(ctx.flow.dueKeyed).all(stream, group, partition, tt, now, limit)) {
        seqs.push({ sequence: r.sequence, fresh: false, expiredOn: last(r), void: voided(partition, r, pos.delayed_to), key: r.key });
      }
      // Fresh events judged by their keys, delayed and cancelled ones marked by the scan itself.
      const at = { stream, group, partition, cursor, hwm: pos.hwm };
      scan = seqs.length < limit ? scanFresh(ctx, flow, at, limit - seqs.length, now, seqs) : undefined;
    } else {
      for (const r of ctx.stmt(p.due).all(stream, group, partition, tt, now, limit)) {
        seqs.push({ sequence: r.sequence, fresh: false, expiredOn: last(r), void: voided(partition, r, pos.delayed_to) });
      }
      for (let s = cursor; s <= pos.hwm && seqs.length < limit; s++) seqs.push({ sequence: s, fresh: true });
    }
    const fresh = seqs.filter((c) => c.fresh);
    if (!scan && fresh.length && cursor <= pos.delayed_to) {
      const delayed = ctx.stmt(p.delayedIn).all(stream, partition, cursor, fresh[fresh.length - 1].sequence, now);
      const found = new Map(delayed.map((d) => [d.sequence, d]));
      for (const c of fresh) {
        const d = found.get(c.sequence);
        if (d && d.cancelled_at !== null) c.passed = true;
        else if (d) c.parkAt = d.deliver_at;
      }
    }
    if (seqs.length || scan?.length) queues.push({ partition, cursor, seqs, scan });
  }
  // Round-robin across partitions, starting from a rotating partition so none starves.
  queues.sort(
    (a, b) => ((a.partition - start + partitionCount) % partitionCount) - ((b.partition - start + partitionCount) % partitionCount),
  );
  const picked = new Map<number, Candidate[]>();
  let taken = 0;
  for (let turn = 0; taken < limit; turn++) {
    let took = false;
    for (const q of queues) {
      if (taken >= limit) break;
      const c = q.seqs[turn];
      if (!c) continue;
      took = true;
      taken++;
      const list = picked.get(q.partition);
      if (list) list.push(c);
      else picked.set(q.partition, [c]);
    }
    if (!took) break;
  }
  // Claim per partition: due deliveries one by one (each has its own attempt), fresh events as one run.
  // One expiry Date for the round: the facade gives every lease its own copy (core's issueLease).
  const expires = new Date(expiresAt);
  const lease = (leaseId: string, attempt: number, event: RheoEvent): Lease => ({
    leaseId,
    receipt: leaseId,
    stream,
    group,
    consumerId: req.consumerId,
    attempt,
    leasedAt: new Date(now),
    expiresAt: expires,
    event,
  });
  let parked = 0;
  let deadLettered: ClaimDeadLetter[] | undefined;
  for (const q of queues) {
    const partition = q.partition;
    const cs = picked.get(partition) ?? [];
    const fresh = q.scan ? [] : cs.filter((c) => c.fresh);
    for (const c of cs) {
      if (c.fresh) continue;
      if (c.void) {
        if (flow?.places != null) endKeyed(ctx, flow, stream, group, partition, c.sequence);
        else ctx.stmt(p.ack).run(stream, group, partition, c.sequence);
        parked++;
        continue;
      }
      if (c.expiredOn !== undefined) {
        const key = [stream, group, partition, c.sequence] as const;
        const reason = leaseExpiredReason(c.expiredOn, storedMax());
        if (flow?.places != null) endKeyed(ctx, flow, ...key);
        else ctx.stmt(p.ack).run(...key);
        const filed = ctx.stmt(p.deadByClaim).get(...key, c.expiredOn, reason, now, stream, partition, c.sequence)!;
        (deadLettered ??= []).push({ eventId: filed.event_id, partition, sequence: c.sequence, attempt: c.expiredOn, reason });
        parked++;
        continue;
      }
      const leaseId = newId();
      const { attempt } = ctx.stmt(p.claimDue).get(leaseId, req.consumerId, now, expiresAt, stream, group, partition, c.sequence)!;
      const event = toEvent(stream, ctx.stmt(p.eventAt).get(stream, partition, c.sequence)!);
      c.lease = lease(leaseId, attempt, event);
    }
    if (fresh.length) {
      const first = fresh[0].sequence;
      const last = fresh[fresh.length - 1].sequence;
      const ids = fresh.map(() => newId());
      // Fresh events are leased in runs (one statement each; a single run without delayed events), delayed ones parked.
      let run = 0;
      fresh.forEach((c, i) => {
        const ends = i === fresh.length - 1 || fresh[i + 1].parkAt !== undefined || fresh[i + 1].passed === true;
        if (c.passed) {
          // Cancelled: taken as an ack would leave it (no row below the cursor), in its place of the limit.
          parked++;
          run = i + 1;
        } else if (c.parkAt !== undefined) {
          ctx.stmt(p.parkDelayed).run(stream, group, partition, c.sequence, c.parkAt);
          parked++;
          run = i + 1;
        } else if (ends) {
          const runIds = JSON.stringify(ids.slice(run, i + 1));
          ctx.stmt(p.claimFresh).run(stream, group, partition, fresh[run].sequence, req.consumerId, now, expiresAt, runIds);
          run = i + 1;
        }
      });
      for (const row of ctx.rawStmt(p.eventRunRaw).all(stream, partition, first, last)) {
        const i = (row as RawEventRow)[1] - first;
        if (fresh[i].parkAt === undefined && !fresh[i].passed) fresh[i].lease = lease(ids[i], 1, eventFromRaw(stream, partition, row));
      }
      ctx.stmt(p.moveCursor).run(last + 1, stream, group, partition);
    }
    if (q.scan) parked += passScan(ctx, flow!, req, { partition, seqs: q.seqs, scan: q.scan }, cs, now, lease);
  }
  // In round-robin order (a parked event has no lease).
  const leases: Lease[] = [];
  for (let turn = 0; ; turn++) {
    let any = false;
    for (const q of queues) {
      const cs = picked.get(q.partition);
      if (!cs || turn >= cs.length) continue;
      any = true;
      const leased = cs[turn].lease;
      if (leased) leases.push(leased);
    }
    if (!any) break;
  }
  if (flow) {
    const held = closeFlow(ctx, flow, stream, group, leases.length, now);
    // Events set waiting took no place of the limit: another round may reach further (../delays.ts).
    parked += flow.waited;
    const round: SqliteClaimRound = { leases, parked, paused, ...(held ? { held } : {}) };
    return deadLettered ? { ...round, deadLettered } : round;
  }
  return deadLettered ? { leases, parked, deadLettered, paused } : { leases, parked, paused };
}
