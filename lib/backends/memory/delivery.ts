import { backoffDelay } from '../../core/backoff';
import { RheoError, toRheoError } from '../../core/errors';
import { groupRoom, keyPlaces, rateLogAfter, rateNow } from '../../core/flow';
import { pausedAnswer } from '../../core/fetched';
import { newId } from '../../core/ids';
import { leaseExpiredReason } from '../../core/settle';
import type { Lease } from '../../core/types';
import type { FetchedLeases, FetchRequest, RenewResult, SettleOp, SettleResult } from '../backend';
import { claimPastDelays, type ClaimRound } from '../delays';
import {
  advance,
  groupOf,
  liveLeases,
  open,
  wake,
  type Delivery,
  type GroupPartition,
  type MemGroup,
  type MemoryContext,
  type MemStream,
} from './context';
import { admit, keyEnded, waitForKey } from './keys';
import { toEvent } from './partition-log';
import { activePause } from './pause';

// The delivery section: the claim (fetch), renew, settle and release. Every operation
// is an index lookup or a walk over a group's open deliveries only.

export async function fetch(ctx: MemoryContext, req: FetchRequest): Promise<FetchedLeases> {
  const { s, g } = groupOf(ctx, req.stream, req.group);
  const now = ctx.clock.now();
  if (activePause(g, now)) return pausedAnswer();
  // A rate-limited round is judged at no time before the log's newest start (core/flow.ts rateNow).
  return claimPastDelays(req.limit, async (limit) =>
    claimRound({ ...req, limit }, s, g, g.config.rateLimit ? rateNow(g.rateLog, now) : now),
  );
}

/** A fresh event a keyed claim looked at: claimed (`wait` false) or set waiting for its key when the claim passes it. */
interface Scanned {
  seq: number;
  key: string | null;
  wait: boolean;
}

/**
 * Most fresh events one claim round sets waiting for their key: a claim passes a
 * long run of one hot key's events (each set waiting once, never looked at again
 * until its turn) without taking places of its limit, up to this bound.
 */
export const KEY_SCAN = 1000;

/** One claim of up to `req.limit` events; a delayed event reached before its time is parked (see ../delays.ts). */
function claimRound(req: FetchRequest, s: MemStream, g: MemGroup, now: number): ClaimRound<Lease> {
  const room = groupRoom(g.config, req.limit, g.config.groupConcurrency === null ? 0 : liveLeases(g, now), g.rateLog, now);
  const limit = room.limit;
  if (limit === 0) return { leases: [], parked: 0, held: room.held };
  const partitions = req.partitions ?? s.log.map((_, p) => p);
  const strict = g.config.ordering === 'partition';
  const places = keyPlaces(g.config);
  // Candidates per partition, in sequence order: open deliveries that are claimable, then fresh events.
  const queues: Array<{ p: number; seqs: number[]; scan?: Scanned[]; passed: number; admitted: number; taken: number }> = [];
  let waitedAlone = 0;
  for (const p of partitions) {
    const part = g.parts[p];
    const hwm = s.log[p].hwm;
    const seqs: number[] = [];
    let scan: Scanned[] | undefined;
    if (strict) {
      const next = part.frontier + 1;
      const busy = [...part.open].some((q) => {
        const d = part.deliveries.get(q)!;
        return d.state === 'leased' && d.expiresAt > now;
      });
      if (!busy && next <= hwm) {
        const d = part.deliveries.get(next);
        if (d ? claimable(d, now) : next >= part.cursor) seqs.push(next);
      }
    } else {
      // Every open delivery is looked at (most are leased and not due), so no copies of the set on the way.
      for (const q of part.open) if (claimable(part.deliveries.get(q)!, now)) seqs.push(q);
      if (seqs.length > 1) seqs.sort((a, b) => a - b);
      if (seqs.length > limit) seqs.length = limit;
      if (places === null) for (let q = part.cursor; q <= hwm && seqs.length < limit; q++) seqs.push(q);
      else scan = scanFresh(s, part, p, hwm, limit - seqs.length, places, seqs);
    }
    if (seqs.length) queues.push({ p, seqs, scan, passed: 0, admitted: seqs.length, taken: 0 });
    else if (scan?.length) waitedAlone += passWaits(s, g, p, scan, Infinity, { passed: 0 });
  }
  // Round-robin over partitions, starting where the last fetch left off. A parked event takes its place too.
  const round: ClaimRound<Lease> = { leases: [], parked: 0 };
  let waited = waitedAlone;
  let taken = 0;
  const start = g.nextPartition++ % Math.max(1, queues.length);
  for (let turn = 0; taken < limit; turn++) {
    let took = false;
    for (let i = 0; i < queues.length && taken < limit; i++) {
      const q = queues[(start + i) % queues.length];
      if (turn < q.seqs.length) {
        const seq = q.seqs[turn];
        // A keyed claim passes the events before this one that wait for their key (they come first in the log).
        if (q.scan && seq >= g.parts[q.p].cursor) waited += passWaits(s, g, q.p, q.scan, seq, q);
        claim(req, s, g, q.p, seq, now, round);
        q.taken++;
        taken++;
        took = true;
      }
    }
    if (!took) break;
  }
  // A partition whose every candidate was taken passes the rest of its waiting run too.
  for (const q of queues) if (q.scan && q.taken === q.admitted) waited += passWaits(s, g, q.p, q.scan, Infinity, q);
  if (g.config.rateLimit && round.leases.length > 0)
    g.rateLog = rateLogAfter(g.rateLog, now, g.config.rateLimit.perMs, round.leases.length);
  if (waited > 0) round.parked += waited;
  const held = { ...room.held, ...(waited > 0 ? { waitingForKey: waited } : {}) };
  if (held.limit || held.waitingForKey) round.held = held;
  return round;
}

/**
 * The fresh events of a keyed partition from its cursor: each claimable one (its
 * key has a place and none of its events waits) is added to `seqs`, up to `want`;
 * the others are listed to be set waiting, up to {@link KEY_SCAN}. Places are
 * counted as if every listed event were claimed, in order (the claim takes them so).
 */
function scanFresh(s: MemStream, part: GroupPartition, p: number, hwm: number, want: number, places: number, seqs: number[]): Scanned[] {
  const scan: Scanned[] = [];
  const taking = new Map<string, number>();
  const waitingNow = new Set<string>();
  let admitted = 0;
  let waits = 0;
  for (let q = part.cursor; q <= hwm && admitted < want && waits < KEY_SCAN; q++) {
    const key = s.log[p].get(q)!.key;
    let wait = false;
    if (key !== null) {
      const open = (part.keys?.open.get(key) ?? 0) + (taking.get(key) ?? 0);
      wait = waitingNow.has(key) || (part.keys?.waiting.has(key) ?? false) || open >= places;
      if (wait) waitingNow.add(key);
      else taking.set(key, (taking.get(key) ?? 0) + 1);
    }
    scan.push({ seq: q, key, wait });
    if (wait) waits++;
    else {
      admitted++;
      seqs.push(q);
    }
  }
  return scan;
}

/**
 * Set the listed waiting events below `before` waiting for their key (records in
 * state 'waiting', the cursor past them), from `progress.passed` on; how many.
 */
function passWaits(s: MemStream, g: MemGroup, p: number, scan: Scanned[], before: number, progress: { passed: number }): number {
  const part = g.parts[p];
  let n = 0;
  while (progress.passed < scan.length && scan[progress.passed].seq < before) {
    const e = scan[progress.passed++];
    if (!e.wait || e.seq < part.cursor) continue;
    const d: Delivery = {
      sequence: e.seq,
      state: 'waiting',
      attempt: 0,
      leaseId: null,
      consumerId: null,
      leasedAt: 0,
      expiresAt: 0,
      availableAt: 0,
      key: e.key,
    };
    if (s.log[p].get(e.seq)!.cancelled) {
      // Cancelled in every group (ADR 048): passed as done, it never waits.
      part.cursor = e.seq + 1;
      advance(part);
      n++;
      continue;
    }
    part.deliveries.set(e.seq, d);
    part.open.add(e.seq);
    waitForKey(part, d, e.key!);
    part.cursor = e.seq + 1;
    n++;
  }
  return n;
}

/**
 * Lease one event into `round`; a delayed event reached before its time is parked instead, and one whose
 * lease expired on the group's last attempt is dead-lettered (docs/adr/035-every-delivery-ends.md): each
 * takes its place of the limit (`round.parked`), the dead letter is named in `round.deadLettered`.
 */
function claim(req: FetchRequest, s: MemStream, g: MemGroup, p: number, seq: number, now: number, round: ClaimRound<Lease>): void {
  const part = g.parts[p];
  let d = part.deliveries.get(seq);
  if (d && d.state === 'leased' && d.attempt >= g.config.maxAttempts) {
    const eventId = s.log[p].get(seq)!.id;
    const reason = leaseExpiredReason(d.attempt, g.config.maxAttempts);
    bury(s, g, part, eventId, p, d, reason, now);
    (round.deadLettered ??= []).push({ eventId, partition: p, sequence: seq, attempt: d.attempt, reason });
    round.parked++;
    return;
  }
  if (d && d.state === 'available' && d.attempt === 0 && s.log[p].get(seq)!.cancelled) {
    // An offer, re-opened since, of an event cancelled in every group (ADR 048): ended, never leased.
    keyEnded(s, g, part, p, d, now);
    d.state = 'acked';
    part.open.delete(seq);
    advance(part);
    round.parked++;
    return;
  }
  if (!d) {
    const stored = s.log[p].get(seq)!;
    const key = keyPlaces(g.config) === null ? null : stored.key;
    d = { sequence: seq, state: 'available', attempt: 0, leaseId: null, consumerId: null, leasedAt: 0, expiresAt: 0, availableAt: 0, key };
    part.deliveries.set(seq, d);
    part.open.add(seq);
    if (seq >= part.cursor) part.cursor = seq + 1;
    if (!stored.cancelled && !admit(g, part, key)) {
      // Its key has no place (the scan counts places as the claim takes them: a guard only).
      waitForKey(part, d, key!);
      round.parked++;
      return;
    }
    if (stored.cancelled) {
      // A delayed event cancelled in every group (cancelDelayed, ADR 048): passed as done, never leased.
      d.state = 'acked';
      part.open.delete(seq);
      advance(part);
      round.parked++;
      return;
    }
    const deliverAt = stored.deliverAt;
    if (deliverAt !== undefined && deliverAt > now) {
      // Parked: due at its deliverAt like a nack's delay, holding the frontier until it is settled.
      d.availableAt = deliverAt;
      round.parked++;
      return;
    }
  }
  d.state = 'leased';
  d.attempt += 1;
  d.leaseId = newId();
  d.consumerId = req.consumerId;
  d.leasedAt = now;
  d.expiresAt = now + req.leaseMs;
  round.leases.push({
    leaseId: d.leaseId,
    receipt: d.leaseId,
    stream: req.stream,
    group: req.group,
    consumerId: req.consumerId,
    attempt: d.attempt,
    leasedAt: new Date(now),
    expiresAt: new Date(d.expiresAt),
    event: toEvent(req.stream, s.log[p].get(seq)!),
  });
}

function claimable(d: Delivery, now: number): boolean {
  return (d.state === 'available' && d.availableAt <= now) || (d.state === 'leased' && d.expiresAt <= now);
}

/** The live delivery a lease refers to, or the portable reason it is not live. */
function held(ctx: MemoryContext, lease: Lease<unknown>, now: number, what: string): { g: MemGroup; part: GroupPartition; d: Delivery } {
  const { g } = groupOf(ctx, lease.stream, lease.group);
  const part = g.parts[lease.event.partition];
  const d = part?.deliveries.get(lease.event.sequence);
  if (!d || d.leaseId !== lease.leaseId || d.state !== 'leased' || d.expiresAt <= now) throw RheoError.staleLease(what);
  if (lease.receipt !== d.leaseId) throw RheoError.receiptMismatch(what);
  return { g, part, d };
}

export async function renew(ctx: MemoryContext, leases: Lease<unknown>[], leaseMs: number): Promise<RenewResult[]> {
  open(ctx);
  const now = ctx.clock.now();
  return leases.map((lease) => {
    try {
      const { d } = held(ctx, lease, now, 'renew');
      d.expiresAt = now + leaseMs;
      return { ok: true, expiresAt: new Date(d.expiresAt) };
    } catch (err) {
      return { ok: false, error: err as RheoError };
    }
  });
}

export async function settle(ctx: MemoryContext, ops: SettleOp[]): Promise<SettleResult[]> {
  open(ctx);
  const now = ctx.clock.now();
  const woken = new Set<MemStream>();
  const results = ops.map((op): SettleResult => {
    try {
      const { g, part, d } = held(ctx, op.lease, now, op.kind);
      const seq = d.sequence;
      if (op.kind === 'ack') {
        if (keyEnded(ctx.streams.get(op.lease.stream)!, g, part, op.lease.event.partition, d, now))
          woken.add(ctx.streams.get(op.lease.stream)!);
        d.state = 'acked';
      } else if (op.kind === 'reject' || d.attempt >= g.config.maxAttempts) {
        // The stored delivery is the truth, never the caller's copy of the lease.
        const p = op.lease.event.partition;
        const st = ctx.streams.get(op.lease.stream)!;
        if (
          bury(st, g, part, st.log[p].get(seq)!.id, p, d, op.reason, now) ||
          g.config.ordering === 'partition' ||
          g.config.groupConcurrency !== null
        )
          woken.add(st);
        // What was written, by the stored config (another process may have changed it).
        return op.kind === 'reject'
          ? { ok: true, outcome: 'reject' }
          : { ok: true, outcome: 'dead_letter', maxAttempts: g.config.maxAttempts };
      } else {
        const delayMs = op.delayMs ?? backoffDelay(g.config.retry, d.attempt);
        d.state = 'available';
        d.leaseId = null;
        d.availableAt = now + delayMs;
        woken.add(ctx.streams.get(op.lease.stream)!);
        return { ok: true, outcome: 'retry', maxAttempts: g.config.maxAttempts, delayMs };
      }
      part.open.delete(seq);
      advance(part);
      // In a partition-ordered group, settling the head makes the next event claimable; under a group-wide
      // concurrency, any settle frees a place.
      if (g.config.ordering === 'partition' || g.config.groupConcurrency !== null) woken.add(ctx.streams.get(op.lease.stream)!);
      return { ok: true };
    } catch (err) {
      return { ok: false, error: err as RheoError };
    }
  });
  for (const s of woken) wake(s);
  return results;
}

/** Dead-letter a delivery and walk the frontier past it; true when its key's place went to a waiting event. */
function bury(
  s: MemStream,
  g: MemGroup,
  part: GroupPartition,
  eventId: string,
  p: number,
  d: Delivery,
  reason: string,
  now: number,
): boolean {
  const promoted = keyEnded(s, g, part, p, d, now);
  d.state = 'dead';
  g.deadOrder = null;
  g.dead.set(eventId, { partition: p, sequence: d.sequence, reason, attempt: d.attempt, at: now });
  part.open.delete(d.sequence);
  advance(part);
  return promoted;
}

export async function release(ctx: MemoryContext, leases: Lease<unknown>[]): Promise<SettleResult[]> {
  open(ctx);
  const now = ctx.clock.now();
  const woken = new Set<MemStream>();
  const results = leases.map((lease): SettleResult => {
    try {
      const { s, g } = groupOf(ctx, lease.stream, lease.group);
      const d = g.parts[lease.event.partition]?.deliveries.get(lease.event.sequence);
      // Expiry does not matter: while nobody claimed it since, the lease id is still ours.
      if (!d || d.leaseId !== lease.leaseId || d.state !== 'leased') throw RheoError.staleLease('release');
      if (lease.receipt !== d.leaseId) throw RheoError.receiptMismatch('release');
      d.state = 'available';
      d.leaseId = null;
      d.attempt = Math.max(0, d.attempt - 1);
      d.availableAt = now;
      woken.add(s);
      return { ok: true };
    } catch (err) {
      return { ok: false, error: toRheoError(err) };
    }
  });
  for (const s of woken) wake(s);
  return results;
}
