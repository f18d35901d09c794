import { RheoError } from '../../core/errors';
import type { CancelDelayedRequest, RescheduleRequest, SettleResult, SkipRequest } from '../backend';
import { CANCELLED_REASON, notDelayed, notInStream, notOffered, settledAlready, waitsForKey, type WaitingOperation } from '../waiting';
import {
  advance,
  groupOf,
  streamOf,
  wake,
  type Delivery,
  type GroupPartition,
  type MemGroup,
  type MemoryContext,
  type MemStream,
} from './context';
import { keyEnded } from './keys';

// The waiting section (docs/adr/048-skip-reschedule-cancel.md): an operator skips or
// reschedules deliveries that wait in a group, or cancels a delayed event in every
// group. A delivery waits when it has a record (offered, or parked by a claim) that
// no live lease holds; one in flight is refused, never run beside.

export async function skip(ctx: MemoryContext, req: SkipRequest): Promise<SettleResult[]> {
  const { s, g } = groupOf(ctx, req.stream, req.group);
  const now = ctx.clock.now();
  let skipped = 0;
  const results = req.ids.map((id): SettleResult => {
    const found = waitingDelivery('skip', s, g, req.group, id, now);
    if ('error' in found) return { ok: false, error: found.error };
    keyEnded(s, g, found.part, found.p, found.d, now);
    end(found.part, found.d);
    skipped++;
    return { ok: true };
  });
  if (skipped > 0) {
    record(g, skipped, req.reason, now);
    wake(s);
  }
  return results;
}

export async function reschedule(ctx: MemoryContext, req: RescheduleRequest): Promise<SettleResult[]> {
  const { s, g } = groupOf(ctx, req.stream, req.group);
  const now = ctx.clock.now();
  const due = req.deliverAt ? req.deliverAt.getTime() : now + req.delayMs!;
  const results = req.ids.map((id): SettleResult => {
    const found = waitingDelivery('reschedule', s, g, req.group, id, now);
    if ('error' in found) return { ok: false, error: found.error };
    const d = found.d;
    if (d.state === 'waiting') return { ok: false, error: waitsForKey(id, req.group) };
    // The attempt stays: an expired lease's attempt was made (ADR 035), a parked event's is 0.
    d.state = 'available';
    d.leaseId = null;
    d.availableAt = due;
    return { ok: true };
  });
  if (due <= now && results.some((r) => r.ok)) wake(s);
  return results;
}

export async function cancelDelayed(ctx: MemoryContext, req: CancelDelayedRequest): Promise<number> {
  const s = streamOf(ctx, req.stream);
  const e = s.byId.get(req.id);
  if (!e || s.log[e.partition].get(e.sequence) !== e) throw notInStream('cancelDelayed', req.id, req.stream);
  if (e.deliverAt === undefined) throw notDelayed(req.id);
  if (e.cancelled) return 0;
  const now = ctx.clock.now();
  // Refused whole while any group runs it: nothing is changed before every group is looked at.
  const plan: Array<{ g: MemGroup; part: GroupPartition; d: Delivery | null }> = [];
  for (const [name, g] of s.groups) {
    const part = g.parts[e.partition];
    if (e.sequence >= part.cursor) {
      plan.push({ g, part, d: null }); // not reached: the claim passes it as done
      continue;
    }
    const d = part.deliveries.get(e.sequence);
    if (!d || d.state === 'acked' || d.state === 'dead') continue;
    if (d.state === 'leased' && d.expiresAt > now) throw RheoError.leaseHeld('cancelDelayed', req.id, name, new Date(d.expiresAt));
    plan.push({ g, part, d });
  }
  e.cancelled = true;
  for (const { g, part, d } of plan) {
    if (d) {
      keyEnded(s, g, part, e.partition, d, now);
      end(part, d);
    }
    record(g, 1, req.reason ?? CANCELLED_REASON, now);
  }
  if (plan.length > 0) wake(s);
  return plan.length;
}

/** The delivery of `id` waiting in the group (a record no live lease holds), or why there is none. */
function waitingDelivery(
  operation: WaitingOperation,
  s: MemStream,
  g: MemGroup,
  group: string,
  id: string,
  now: number,
): { part: GroupPartition; p: number; d: Delivery } | { error: RheoError } {
  const e = s.byId.get(id);
  if (!e || s.log[e.partition].get(e.sequence) !== e) return { error: notInStream(operation, id, s.info.name) };
  const part = g.parts[e.partition];
  if (e.sequence >= part.cursor) return { error: notOffered(operation, id, group) };
  const d = part.deliveries.get(e.sequence);
  if (!d || d.state === 'acked' || d.state === 'dead') return { error: settledAlready(operation, id, group) };
  if (d.state === 'leased' && d.expiresAt > now) return { error: RheoError.leaseHeld(operation, id, group, new Date(d.expiresAt)) };
  return { part, p: e.partition, d };
}

/** End a delivery as an ack does: terminal, the frontier walks past it. */
function end(part: GroupPartition, d: Delivery): void {
  d.state = 'acked';
  d.leaseId = null;
  part.open.delete(d.sequence);
  advance(part);
}

function record(g: MemGroup, n: number, reason: string | null, now: number): void {
  g.skips = { count: g.skips.count + n, lastReason: reason, lastAt: now };
}
