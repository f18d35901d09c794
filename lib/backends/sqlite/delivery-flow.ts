// The claim of a group with flow limits on SQLite (docs/adr/049-flow-control.md),
// the parts delivery-claim.ts adds for it inside the same write transaction: the
// group-wide room (groupConcurrency, rateLimit) judged by the settings and rate log
// as stored, the scan of a keyed partition's fresh events (each claimed, or set
// waiting for its key), and what the round leaves behind (keys that lost a place,
// the rate log). A group without limits never comes here (its partition rows carry
// no `flow` gate).
import { groupRoom, rateLogAfter, rateNow, type RateLog } from '../../core/flow';
import { newId } from '../../core/ids';
import type { Lease, RheoEvent } from '../../core/types';
import type { FetchRequest, FlowHeld } from '../backend';
import { toEvent } from '../sql/rows';
import type { SqliteContext } from './context';
import { keyEnded, placesOf } from './keys';

/**
 * Most fresh events one claim round sets waiting for their key (as on memory): a claim
 * passes a long run of one hot key's events, each set waiting once and not looked at
 * again until its turn, without taking places of its limit, up to this bound.
 */
export const KEY_SCAN = 1000;
/** Fresh events read per statement of a keyed scan. */
const SCAN_CHUNK = 256;

/**
 * A claim's candidate. It carries its lease once claimed (a parked delayed event gets
 * none, nor one dead-lettered: `expiredOn`, the attempt its lease expired on, the
 * group's last: docs/adr/035-every-delivery-ends.md). `passed`: a fresh delayed event
 * cancelled in every group (cancelDelayed): the cursor passes it as done, no row;
 * `void`: a due offer of one at attempt 0 (re-opened since the cancel): ended as an
 * ack ends it. In a keyed group: `key`, and `wait` for a fresh event whose key has no
 * free place (it becomes a waiting row, not a candidate of the limit).
 */
export type Candidate = {
  sequence: number;
  fresh: boolean;
  parkAt?: number;
  passed?: boolean;
  void?: boolean;
  expiredOn?: number;
  lease?: Lease;
  key?: string | null;
  wait?: boolean;
};

/** What a flow claim round knows and gathers, from its settings to its end. */
export interface Flow {
  /** The round's limit after the group-wide limits. */
  limit: number;
  /** Key places (keyPlaces), null when keys are not limited. */
  places: number | null;
  /** The group-wide limit that held the round below the caller's limit. */
  held?: FlowHeld;
  rate: { perMs: number; log: RateLog } | null;
  /** Keys whose open delivery this round ended (an expired last attempt, a cancelled offer): handed on at its end. */
  ended: Array<{ partition: number; key: string }>;
  /** Fresh events set waiting for their key. */
  waited: number;
  /** The round's time: now, or the rate log's newest start when later (core/flow.ts rateNow). */
  at: number;
}

/** The group's flow settings as stored and the room they leave; null when the group is gone. */
export function openFlow(ctx: SqliteContext, stream: string, group: string, limit: number, now: number): Flow | null {
  const s = ctx.stmt(ctx.flow.flowSettings).get(stream, group);
  if (!s) return null;
  const groupConcurrency = s.group_concurrency === null ? null : Number(s.group_concurrency);
  const rateLimit = s.rate_max === null || s.rate_per_ms === null ? null : { max: Number(s.rate_max), perMs: Number(s.rate_per_ms) };
  const live = groupConcurrency === null ? 0 : ctx.stmt(ctx.flow.groupLive).get(stream, group, now)!.n;
  const log: RateLog = rateLimit && s.rate_log ? (JSON.parse(s.rate_log) as RateLog) : [];
  // Judged at, and stamped with, no time before the log's newest start: another process may have read a later now.
  const at = rateLimit ? rateNow(log, now) : now;
  const room = groupRoom({ groupConcurrency, rateLimit }, limit, live, log, at);
  // This process's copy follows the store (the settle's wake-ups read it).
  const keyConcurrency = s.key_concurrency === null ? null : Number(s.key_concurrency);
  const known = ctx.base.cachedGroup(stream, group);
  const same =
    known?.keyConcurrency === keyConcurrency &&
    known.groupConcurrency === groupConcurrency &&
    known.rateLimit?.max === rateLimit?.max &&
    known.rateLimit?.perMs === rateLimit?.perMs;
  if (known && !same) ctx.base.rememberGroup({ ...known, keyConcurrency, groupConcurrency, rateLimit });
  return {
    limit: room.limit,
    places: placesOf(s),
    held: room.held,
    rate: rateLimit && { perMs: rateLimit.perMs, log },
    ended: [],
    waited: 0,
    at,
  };
}

/**
 * The fresh events of a keyed partition from its cursor: each claimable one (keyless,
 * or its key has a free place and none of its events waits) is added to `seqs`, up to
 * `want`; the others are listed to be set waiting, up to {@link KEY_SCAN}. Places are
 * counted as if every listed event were claimed in order (the claim takes them so).
 * Returns the whole scan, in sequence order.
 */
export function scanFresh(
  ctx: SqliteContext,
  flow: Flow,
  at: { stream: string; group: string; partition: number; cursor: number; hwm: number },
  want: number,
  now: number,
  seqs: Candidate[],
): Candidate[] {
  const { stream, group, partition, hwm } = at;
  const places = flow.places!;
  const scan: Candidate[] = [];
  const keys = new Map<string, { open: number; waiting: number }>();
  let admitted = 0;
  let waits = 0;
  for (let from = at.cursor; from <= hwm && admitted < want && waits < KEY_SCAN;) {
    const rows = ctx.stmt(ctx.flow.scan).all(stream, partition, from, hwm, SCAN_CHUNK);
    if (rows.length === 0) break;
    for (const r of rows) {
      if (admitted >= want || waits >= KEY_SCAN) break;
      from = r.sequence + 1;
      const c: Candidate = { sequence: r.sequence, fresh: true, key: r.key };
      if (r.cancelled_at !== null) c.passed = true;
      else if (r.key !== null) {
        let k = keys.get(r.key);
        if (!k) {
          const n = ctx.stmt(ctx.flow.keyCount).get(stream, group, partition, r.key)!;
          k = { open: Number(n.open), waiting: Number(n.waiting) };
          keys.set(r.key, k);
        }
        if (k.waiting > 0 || k.open >= places) {
          k.waiting++;
          c.wait = true;
        } else k.open++;
      }
      if (!c.passed && r.deliver_at !== null && r.deliver_at > now) c.parkAt = r.deliver_at;
      scan.push(c);
      if (c.wait) waits++;
      else {
        admitted++;
        seqs.push(c);
      }
    }
    if (rows.length < SCAN_CHUNK) break;
  }
  return scan;
}

/**
 * Write what a keyed partition's round took of its scan: the prefix up to its last
 * claimed fresh event (all of it when every candidate of the partition was taken),
 * each event leased, parked, passed or set waiting, the cursor moved past it. The
 * leases go on their candidates; returns how many took a place of the limit without
 * a lease (parked or passed).
 */
export function passScan(
  ctx: SqliteContext,
  flow: Flow,
  req: FetchRequest,
  q: { partition: number; seqs: Candidate[]; scan: Candidate[] },
  taken: Candidate[],
  now: number,
  lease: (leaseId: string, attempt: number, event: RheoEvent) => Lease,
): number {
  const { stream, group } = req;
  const f = ctx.flow;
  let end = 0;
  if (taken.length === q.seqs.length) end = q.scan.length;
  else {
    const last = taken.filter((c) => c.fresh).pop();
    if (last) end = q.scan.indexOf(last) + 1;
  }
  let parked = 0;
  for (let i = 0; i < end; i++) {
    const c = q.scan[i];
    const key = c.key ?? null;
    if (c.passed) parked++;
    else if (c.wait) {
      ctx.stmt(f.insertWaiting).run(stream, group, q.partition, c.sequence, key);
      flow.waited++;
    } else if (c.parkAt !== undefined) {
      ctx.stmt(f.insertParked).run(stream, group, q.partition, c.sequence, c.parkAt, key);
      parked++;
    } else {
      const leaseId = newId();
      ctx.stmt(f.insertLeased).run(stream, group, q.partition, c.sequence, leaseId, req.consumerId, now, now + req.leaseMs, key);
      c.lease = lease(leaseId, 1, toEvent(stream, ctx.stmt(ctx.plans.eventAt).get(stream, q.partition, c.sequence)!));
    }
  }
  if (end > 0) ctx.stmt(ctx.plans.moveCursor).run(q.scan[end - 1].sequence + 1, stream, group, q.partition);
  return parked;
}

/** End a due delivery of a keyed group as an ack does (`ack` telling its key), its key handed on at the round's end. */
export function endKeyed(ctx: SqliteContext, flow: Flow, stream: string, group: string, partition: number, sequence: number): void {
  const ended = ctx.stmt(ctx.flow.ackKeyed).get(stream, group, partition, sequence);
  if (ended?.key != null) flow.ended.push({ partition, key: ended.key });
}

/**
 * The round's end: keys that lost a place get it filled (after the round's waiting
 * rows are written, so none of them is left behind a free place), the rate log takes
 * the round's starts, and what held the round is told.
 */
export function closeFlow(
  ctx: SqliteContext,
  flow: Flow,
  stream: string,
  group: string,
  leases: number,
  now: number,
): FlowHeld | undefined {
  for (const { partition, key } of flow.ended) keyEnded(ctx, stream, group, partition, key, now, flow.places);
  if (flow.rate && leases > 0) {
    ctx.stmt(ctx.flow.setRateLog).run(JSON.stringify(rateLogAfter(flow.rate.log, now, flow.rate.perMs, leases)), stream, group);
  }
  const held: FlowHeld = { ...flow.held, ...(flow.waited > 0 ? { waitingForKey: flow.waited } : {}) };
  return held.limit || held.waitingForKey ? held : undefined;
}
