import { backoffDelay } from '../../core/backoff';
import { Clock, systemClock } from '../../core/clock';
import { RheoError, toRheoError } from '../../core/errors';
import { checkPartition } from '../../core/requests';
import { checkKeys, checkObject, keySet } from '../../core/validate';
import { newId } from '../../core/ids';
import { leaseExpiredReason } from '../../core/settle';
import type {
  DeadLetter,
  EventMetadata,
  GroupConfig,
  GroupInfo,
  JsonValue,
  Lag,
  Lease,
  Retention,
  RheoEvent,
  StreamInfo,
  TrimResult,
} from '../../core/types';
import type {
  AppendedEvents,
  Backend,
  BackendDescription,
  CreateGroupRequest,
  FetchedLeases,
  FetchRequest,
  NewEvent,
  QueryRequest,
  ReadRequest,
  RenewResult,
  ReplayRequest,
  ResolvedStart,
  SettleOp,
  SettleResult,
  TrimRequest,
  WaitRequest,
} from '../backend';
import { appended } from '../../core/appended';
import { createCapabilities } from '../capabilities';
import { eventFilter, mergeByPosition, partitionRange, queryPartitions } from '../query';
import { copyGroupConfig, copyStreamInfo } from '../copies';
import { claimPastDelays, type ClaimRound } from '../delays';
import { PartitionLog, StoredEvent } from './partition-log';

/** Options of {@link memoryBackend}. */
export interface MemoryBackendOptions {
  clock?: Clock;
}

const OPTION_KEYS = keySet('a memoryBackend option', ['clock']);

type DeliveryState = 'available' | 'leased' | 'acked' | 'dead';

/** Per-group state of one event that has been delivered at least once. */
interface Delivery {
  sequence: number;
  state: DeliveryState;
  attempt: number;
  leaseId: string | null;
  consumerId: string | null;
  leasedAt: number;
  expiresAt: number;
  availableAt: number;
}

/**
 * One partition as seen by one group. Events from `cursor` up are fresh (never
 * delivered) and need no record; `deliveries` holds every delivered event above
 * the frontier, plus none below it: once the frontier passes a terminal event its
 * record is dropped (dead letters live on in the group's dead-letter index).
 */
interface GroupPartition {
  cursor: number;
  frontier: number;
  deliveries: Map<number, Delivery>;
  /** Sequences of `deliveries` that are not terminal: the only ones fetch scans. */
  open: Set<number>;
}

interface DeadEntry {
  partition: number;
  sequence: number;
  reason: string;
  attempt: number;
  at: number;
}

interface MemGroup {
  config: GroupConfig;
  parts: GroupPartition[];
  dead: Map<string, DeadEntry>;
  /** Event ids of `dead` in (partition, sequence) order, rebuilt on the first page read after a change. */
  deadOrder: string[] | null;
  /** Rotates the partition fetch starts from, so no partition starves. */
  nextPartition: number;
}

interface MemStream {
  info: StreamInfo;
  log: PartitionLog[];
  byId: Map<string, StoredEvent>;
  groups: Map<string, MemGroup>;
  waiters: Set<() => void>;
}

/** Events a trim frees between two yields to the event loop: a claim waits at most this much work. */
const TRIM_CHUNK = 1000;

/**
 * The in-process backend: ephemeral, single process, fast. Every operation is an
 * index lookup or a walk over open deliveries only; nothing scans the log except
 * `query`, which walks sequence ranges.
 */
export class MemoryBackend implements Backend {
  readonly name = 'memory';
  readonly capabilities = createCapabilities({
    guarantees: { durable: false, distributed: false, partitions: true, contiguousFrontier: true, replay: true, orderedPartitions: true },
    mechanisms: { notifications: true, batchWrites: true, secondaryIndexes: false, blockingReads: false, transactionalAppend: false },
  });
  readonly clock: Clock;
  private readonly streams = new Map<string, MemStream>();
  private readonly turns = new Map<string, { holder: string; until: number }>();
  private closed = false;

  constructor(options: MemoryBackendOptions = {}) {
    checkKeys('options', checkObject('options', options), OPTION_KEYS);
    this.clock = options.clock ?? systemClock;
  }

  async init(): Promise<void> {
    this.open();
  }

  /** In this process's memory: nothing survives a restart. */
  describe(): BackendDescription {
    return { target: 'in-process memory (not durable)' };
  }

  async ping(): Promise<void> {
    this.open();
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const s of this.streams.values()) this.wake(s);
  }

  private open(): void {
    if (this.closed) throw new RheoError('backend_unavailable', 'the memory backend is closed');
  }

  private stream(name: string): MemStream {
    this.open();
    const s = this.streams.get(name);
    if (!s) throw RheoError.streamNotFound(name);
    return s;
  }

  private group(stream: string, group: string): { s: MemStream; g: MemGroup } {
    const s = this.stream(stream);
    const g = s.groups.get(group);
    if (!g) throw RheoError.groupNotFound(stream, group);
    return { s, g };
  }

  private wake(s: MemStream): void {
    const waiters = [...s.waiters];
    s.waiters.clear();
    for (const w of waiters) w();
  }

  // ------------------------------------------------------------ streams and groups

  async createStream(stream: string, partitions: number, retention?: Retention): Promise<StreamInfo> {
    this.open();
    if (this.streams.has(stream)) throw new RheoError('already_exists', `stream "${stream}" already exists`);
    const info: StreamInfo = { name: stream, partitions, createdAt: new Date(this.clock.now()) };
    if (retention) info.retention = { ...retention };
    this.streams.set(stream, {
      info,
      log: Array.from({ length: partitions }, () => new PartitionLog()),
      byId: new Map(),
      groups: new Map(),
      waiters: new Set(),
    });
    return copyStreamInfo(info);
  }

  async getStream(stream: string): Promise<StreamInfo | null> {
    this.open();
    const s = this.streams.get(stream);
    return s ? copyStreamInfo(s.info) : null;
  }

  async listStreams(): Promise<StreamInfo[]> {
    this.open();
    return [...this.streams.values()].map((s) => copyStreamInfo(s.info)).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  async setRetention(stream: string, retention: Retention): Promise<StreamInfo> {
    const s = this.stream(stream);
    if (Object.keys(retention).length > 0) s.info.retention = { ...retention };
    else delete s.info.retention;
    return copyStreamInfo(s.info);
  }

  async createGroup(req: CreateGroupRequest): Promise<GroupConfig> {
    const s = this.stream(req.stream);
    if (s.groups.has(req.group)) throw new RheoError('already_exists', `group "${req.group}" already exists on stream "${req.stream}"`);
    const config: GroupConfig = {
      stream: req.stream,
      group: req.group,
      maxAttempts: req.maxAttempts,
      retry: { ...req.retry },
      ordering: req.ordering,
      createdAt: new Date(this.clock.now()),
    };
    s.groups.set(req.group, { config, parts: this.startParts(s, req.start), dead: new Map(), deadOrder: null, nextPartition: 0 });
    return copyGroupConfig(config);
  }

  private startParts(s: MemStream, start: ResolvedStart): GroupPartition[] {
    return s.log.map((log, p) => {
      let after = 0;
      if (start.kind === 'end') after = log.hwm;
      else if (start.kind === 'after') after = typeof start.sequences === 'number' ? start.sequences : (start.sequences[p] ?? 0);
      else if (start.kind === 'at') after = log.firstAtOrAfter(start.time.getTime()) - 1;
      // Nothing at or below the trim point exists any more: start after it.
      after = Math.max(after, log.trimmedTo);
      return { cursor: after + 1, frontier: after, deliveries: new Map(), open: new Set() };
    });
  }

  async getGroup(stream: string, group: string): Promise<GroupConfig | null> {
    this.open();
    const g = this.streams.get(stream)?.groups.get(group);
    return g ? copyGroupConfig(g.config) : null;
  }

  async listGroups(stream: string): Promise<GroupConfig[]> {
    const s = this.stream(stream);
    return [...s.groups.values()]
      .map((g) => copyGroupConfig(g.config))
      .sort((a, b) => (a.group < b.group ? -1 : a.group > b.group ? 1 : 0));
  }

  async deleteGroup(stream: string, group: string): Promise<void> {
    const { s } = this.group(stream, group);
    // Every lease, delivery and dead letter lives in the group's record: dropping it drops them all.
    s.groups.delete(group);
    // A waiting consumer of the group looks again now, and learns it is gone.
    this.wake(s);
  }

  // ------------------------------------------------------------ the log

  async append(stream: string, events: NewEvent[]): Promise<AppendedEvents> {
    const s = this.stream(stream);
    // Validate the whole batch before writing anything, so a batch is all or nothing.
    for (const e of events) checkPartition('partition', e.partition, s.info.partitions);
    const out: RheoEvent[] = [];
    let written = 0;
    for (const e of events) {
      // Also finds an id written earlier in this batch: each stored event enters the index at once.
      const known = s.byId.get(e.id);
      // An id whose event was trimmed is free again (its memory may not be freed yet).
      if (known && s.log[known.partition].get(known.sequence) === known) {
        out.push(toEvent(stream, known));
        continue;
      }
      const log = s.log[e.partition];
      const stored: StoredEvent = {
        id: e.id,
        partition: e.partition,
        sequence: log.hwm + 1,
        timestamp: e.timestamp.getTime(),
        key: e.key,
        type: e.type,
        metadata: e.metadataJson,
        payload: e.payloadJson,
      };
      if (e.deliverAt !== undefined) stored.deliverAt = e.deliverAt.getTime();
      log.push(stored);
      written++;
      s.byId.set(e.id, stored);
      out.push(toEvent(stream, stored));
    }
    if (written > 0) this.wake(s);
    return appended(out, events.length - written);
  }

  async read(req: ReadRequest): Promise<RheoEvent[]> {
    const s = this.stream(req.stream);
    const log = s.log[req.partition];
    const out: RheoEvent[] = [];
    for (let seq = Math.max(req.afterSequence, log.trimmedTo) + 1; seq <= log.hwm && out.length < req.limit; seq++) {
      out.push(toEvent(req.stream, log.get(seq)!));
    }
    return out;
  }

  async query(req: QueryRequest): Promise<RheoEvent[]> {
    const s = this.stream(req.stream);
    const asc = req.order === 'asc';
    const matches = eventFilter(req);
    const found: RheoEvent[] = [];
    for (const p of queryPartitions(req, s.log.length)) {
      const log = s.log[p];
      const range = partitionRange(req, p, log.hwm);
      const lo = Math.max(range.lo, log.trimmedTo + 1);
      const hi = range.hi;
      let taken = 0;
      for (let seq = asc ? lo : hi; asc ? seq <= hi : seq >= lo; seq += asc ? 1 : -1) {
        const e = toEvent(req.stream, log.get(seq)!);
        if (matches(e)) {
          found.push(e);
          if (++taken >= req.limit) break;
        }
      }
    }
    return mergeByPosition(found, req);
  }

  // ------------------------------------------------------------ leases

  async fetch(req: FetchRequest): Promise<FetchedLeases> {
    const { s, g } = this.group(req.stream, req.group);
    const now = this.clock.now();
    return claimPastDelays(req.limit, async (limit) => this.claimRound({ ...req, limit }, s, g, now));
  }

  /** One claim of up to `req.limit` events; a delayed event reached before its time is parked (see ../delays.ts). */
  private claimRound(req: FetchRequest, s: MemStream, g: MemGroup, now: number): ClaimRound<Lease> {
    const partitions = req.partitions ?? s.log.map((_, p) => p);
    const strict = g.config.ordering === 'partition';
    // Candidates per partition, in sequence order: open deliveries that are claimable, then fresh events.
    const queues: Array<{ p: number; seqs: number[] }> = [];
    for (const p of partitions) {
      const part = g.parts[p];
      const hwm = s.log[p].hwm;
      const seqs: number[] = [];
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
        if (seqs.length > req.limit) seqs.length = req.limit;
        for (let q = part.cursor; q <= hwm && seqs.length < req.limit; q++) seqs.push(q);
      }
      if (seqs.length) queues.push({ p, seqs });
    }
    // Round-robin over partitions, starting where the last fetch left off. A parked event takes its place too.
    const round: ClaimRound<Lease> = { leases: [], parked: 0 };
    let taken = 0;
    const start = g.nextPartition++ % Math.max(1, queues.length);
    for (let turn = 0; taken < req.limit; turn++) {
      let took = false;
      for (let i = 0; i < queues.length && taken < req.limit; i++) {
        const q = queues[(start + i) % queues.length];
        if (turn < q.seqs.length) {
          this.claim(req, s, g, q.p, q.seqs[turn], now, round);
          taken++;
          took = true;
        }
      }
      if (!took) break;
    }
    return round;
  }

  /**
   * Lease one event into `round`; a delayed event reached before its time is parked instead, and one whose
   * lease expired on the group's last attempt is dead-lettered (docs/adr/035-every-delivery-ends.md): each
   * takes its place of the limit (`round.parked`), the dead letter is named in `round.deadLettered`.
   */
  private claim(req: FetchRequest, s: MemStream, g: MemGroup, p: number, seq: number, now: number, round: ClaimRound<Lease>): void {
    const part = g.parts[p];
    let d = part.deliveries.get(seq);
    if (d && d.state === 'leased' && d.attempt >= g.config.maxAttempts) {
      const eventId = s.log[p].get(seq)!.id;
      const reason = leaseExpiredReason(d.attempt, g.config.maxAttempts);
      this.bury(g, part, eventId, p, d, reason, now);
      (round.deadLettered ??= []).push({ eventId, partition: p, sequence: seq, attempt: d.attempt, reason });
      round.parked++;
      return;
    }
    if (!d) {
      d = { sequence: seq, state: 'available', attempt: 0, leaseId: null, consumerId: null, leasedAt: 0, expiresAt: 0, availableAt: 0 };
      part.deliveries.set(seq, d);
      part.open.add(seq);
      if (seq >= part.cursor) part.cursor = seq + 1;
      const deliverAt = s.log[p].get(seq)!.deliverAt;
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

  /** The live delivery a lease refers to, or the portable reason it is not live. */
  private held(lease: Lease<unknown>, now: number, what: string): { g: MemGroup; part: GroupPartition; d: Delivery } {
    const { g } = this.group(lease.stream, lease.group);
    const part = g.parts[lease.event.partition];
    const d = part?.deliveries.get(lease.event.sequence);
    if (!d || d.leaseId !== lease.leaseId || d.state !== 'leased' || d.expiresAt <= now) throw RheoError.staleLease(what);
    if (lease.receipt !== d.leaseId) throw RheoError.receiptMismatch(what);
    return { g, part, d };
  }

  async renew(leases: Lease<unknown>[], leaseMs: number): Promise<RenewResult[]> {
    this.open();
    const now = this.clock.now();
    return leases.map((lease) => {
      try {
        const { d } = this.held(lease, now, 'renew');
        d.expiresAt = now + leaseMs;
        return { ok: true, expiresAt: new Date(d.expiresAt) };
      } catch (err) {
        return { ok: false, error: err as RheoError };
      }
    });
  }

  async settle(ops: SettleOp[]): Promise<SettleResult[]> {
    this.open();
    const now = this.clock.now();
    const woken = new Set<MemStream>();
    const results = ops.map((op): SettleResult => {
      try {
        const { g, part, d } = this.held(op.lease, now, op.kind);
        const seq = d.sequence;
        if (op.kind === 'ack') {
          d.state = 'acked';
        } else if (op.kind === 'reject' || d.attempt >= g.config.maxAttempts) {
          // The stored delivery is the truth, never the caller's copy of the lease.
          const p = op.lease.event.partition;
          this.bury(g, part, this.streams.get(op.lease.stream)!.log[p].get(seq)!.id, p, d, op.reason, now);
          if (g.config.ordering === 'partition') woken.add(this.streams.get(op.lease.stream)!);
          return { ok: true };
        } else {
          d.state = 'available';
          d.leaseId = null;
          d.availableAt = now + (op.delayMs ?? backoffDelay(g.config.retry, d.attempt));
          woken.add(this.streams.get(op.lease.stream)!);
          return { ok: true };
        }
        part.open.delete(seq);
        advance(part);
        // In a partition-ordered group, settling the head makes the next event claimable.
        if (g.config.ordering === 'partition') woken.add(this.streams.get(op.lease.stream)!);
        return { ok: true };
      } catch (err) {
        return { ok: false, error: err as RheoError };
      }
    });
    for (const s of woken) this.wake(s);
    return results;
  }

  /** Dead-letter a delivery and walk the frontier past it. */
  private bury(g: MemGroup, part: GroupPartition, eventId: string, p: number, d: Delivery, reason: string, now: number): void {
    d.state = 'dead';
    g.deadOrder = null;
    g.dead.set(eventId, { partition: p, sequence: d.sequence, reason, attempt: d.attempt, at: now });
    part.open.delete(d.sequence);
    advance(part);
  }

  async release(leases: Lease<unknown>[]): Promise<SettleResult[]> {
    this.open();
    const now = this.clock.now();
    const woken = new Set<MemStream>();
    const results = leases.map((lease): SettleResult => {
      try {
        const { s, g } = this.group(lease.stream, lease.group);
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
    for (const s of woken) this.wake(s);
    return results;
  }

  // ------------------------------------------------------------ replay, reset, redrive

  async replay(req: ReplayRequest): Promise<number> {
    const { s, g } = this.group(req.stream, req.group);
    let reopened = 0;
    if (req.kind === 'events') {
      for (const e of req.events) reopened += this.reopen(g, e.id, e.partition, e.sequence) ? 1 : 0;
    } else {
      for (const p of req.partitions ?? s.log.map((_, i) => i)) {
        const log = s.log[p];
        const wanted = req.kind === 'sequence' ? Math.min(req.afterSequence, log.hwm) : log.firstAtOrAfter(req.from.getTime()) - 1;
        const after = Math.max(wanted, log.trimmedTo);
        const part = g.parts[p];
        for (const seq of [...part.deliveries.keys()]) {
          if (seq > after) {
            part.deliveries.delete(seq);
            part.open.delete(seq);
          }
        }
        for (const [id, dl] of g.dead) if (dl.partition === p && dl.sequence > after) g.dead.delete(id);
        g.deadOrder = null;
        part.cursor = after + 1;
        part.frontier = Math.min(part.frontier, after);
        reopened += log.hwm - after;
      }
    }
    this.wake(s);
    return reopened;
  }

  /** Make one delivered event available again and pull the frontier back before it. */
  private reopen(g: MemGroup, eventId: string, p: number, seq: number): boolean {
    const part = g.parts[p];
    g.dead.delete(eventId);
    g.deadOrder = null;
    if (seq >= part.cursor) return false; // never delivered: already pending
    const before = part.deliveries.get(seq);
    const d: Delivery = {
      sequence: seq,
      state: 'available',
      attempt: 0,
      leaseId: null,
      consumerId: null,
      leasedAt: 0,
      expiresAt: 0,
      // A delayed event never offered yet (parked: available at attempt 0) keeps its time (ADR 028).
      availableAt: before && before.state === 'available' && before.attempt === 0 ? before.availableAt : 0,
    };
    part.deliveries.set(seq, d);
    part.open.add(seq);
    part.frontier = Math.min(part.frontier, seq - 1);
    return true;
  }

  async reset(stream: string, group: string, start: ResolvedStart): Promise<void> {
    const { s, g } = this.group(stream, group);
    g.parts = this.startParts(s, start);
    g.dead.clear();
    g.deadOrder = null;
    this.wake(s);
  }

  async redrive(stream: string, group: string, eventIds: string[] | 'all'): Promise<number> {
    const { s, g } = this.group(stream, group);
    // A dead letter whose event was trimmed has nothing left to deliver: it stays listed until purged.
    const live = (id: string) => {
      const dl = g.dead.get(id);
      return dl !== undefined && dl.sequence > s.log[dl.partition].trimmedTo;
    };
    const ids = eventIds === 'all' ? [...g.dead.keys()].filter(live) : eventIds.filter(live);
    for (const id of ids) {
      const dl = g.dead.get(id)!;
      this.reopen(g, id, dl.partition, dl.sequence);
    }
    if (ids.length) this.wake(s);
    return ids.length;
  }

  // ------------------------------------------------------------ inspection

  async lag(stream: string, group: string): Promise<Lag> {
    const { s, g } = this.group(stream, group);
    const partitions = g.parts.map((part, p) => {
      const highWatermark = s.log[p].hwm;
      return { partition: p, frontier: part.frontier, highWatermark, lag: Math.max(0, highWatermark - part.frontier) };
    });
    return { stream, group, lag: partitions.reduce((n, x) => n + x.lag, 0), partitions };
  }

  async groupInfo(stream: string, group: string): Promise<GroupInfo> {
    const { s, g } = this.group(stream, group);
    const now = this.clock.now();
    let inflight = 0;
    let oldest: number | null = null;
    g.parts.forEach((part, p) => {
      for (const q of part.open) {
        const d = part.deliveries.get(q)!;
        if (d.state === 'leased' && d.expiresAt > now) inflight++;
      }
      const next = s.log[p].get(part.frontier + 1);
      // A delayed event is unsettled from its deliverAt on (before, it is not due: age 0).
      const since = next ? Math.max(next.timestamp, next.deliverAt ?? next.timestamp) : null;
      if (since !== null && (oldest === null || since < oldest)) oldest = since;
    });
    return {
      stream,
      group,
      lag: await this.lag(stream, group),
      inflight,
      deadLetters: g.dead.size,
      oldestUnsettledAgeMs: oldest === null ? null : Math.max(0, now - oldest),
      config: copyGroupConfig(g.config),
    };
  }

  async deadLetters(stream: string, group: string, limit: number, after?: string): Promise<DeadLetter[]> {
    const { s, g } = this.group(stream, group);
    g.deadOrder ??= [...g.dead.entries()].sort(([, a], [, b]) => a.partition - b.partition || a.sequence - b.sequence).map(([id]) => id);
    const order = g.deadOrder;
    let from = 0;
    if (after !== undefined) {
      const cut = g.dead.get(after);
      if (!cut) throw RheoError.invalid('after', `is not a dead-lettered event id of group "${group}"`);
      from = lowerBound(order, (id) => comparePosition(g.dead.get(id)!, cut) <= 0);
    }
    return order
      .slice(from, from + limit)
      .map((id) => [id, g.dead.get(id)!] as const)
      .map(([id, dl]) => ({
        stream,
        group,
        eventId: id,
        partition: dl.partition,
        sequence: dl.sequence,
        reason: dl.reason,
        attempt: dl.attempt,
        deadLetteredAt: new Date(dl.at),
        event: eventOrNull(stream, s.log[dl.partition].get(dl.sequence)),
      }));
  }

  // ------------------------------------------------------------ retention

  async trim(req: TrimRequest): Promise<TrimResult> {
    const s = this.stream(req.stream);
    const skipped: Record<string, number> = {};
    for (const name of s.groups.keys()) skipped[name] = 0;
    // Decide and move every trim point at once (nothing awaits in between), then free memory in chunks.
    s.log.forEach((log, p) => {
      let point = log.trimmedTo;
      if (req.maxEvents !== undefined) point = Math.max(point, log.hwm - req.maxEvents);
      if (req.before !== undefined) point = Math.max(point, log.firstAtOrAfter(req.before.getTime()) - 1);
      point = Math.min(point, log.hwm);
      for (const [name, g] of s.groups) {
        const part = g.parts[p];
        if (part.frontier >= point) continue;
        if (!req.force) point = part.frontier;
        else skipped[name] += skipTo(part, point);
      }
      log.trimmedTo = Math.max(log.trimmedTo, point);
    });
    let removed = 0;
    for (const log of s.log) {
      for (;;) {
        const n = log.dropTrimmed(TRIM_CHUNK, (e) => {
          if (s.byId.get(e.id) === e) s.byId.delete(e.id);
        });
        removed += n;
        if (n < TRIM_CHUNK) break;
        await new Promise((resolve) => setImmediate(resolve));
      }
    }
    return { stream: req.stream, removed, partitions: s.log.map((log, partition) => ({ partition, trimmedTo: log.trimmedTo })), skipped };
  }

  async purgeDeadLetters(stream: string, group: string, before: Date | null): Promise<number> {
    const { g } = this.group(stream, group);
    let n = 0;
    for (const [id, dl] of g.dead) {
      if (before === null || dl.at < before.getTime()) {
        g.dead.delete(id);
        n++;
      }
    }
    if (n > 0) g.deadOrder = null;
    return n;
  }

  async countDeadLetters(stream: string, group: string, since: Date | null): Promise<number> {
    const { g } = this.group(stream, group);
    if (since === null) return g.dead.size;
    const from = since.getTime();
    let n = 0;
    for (const dl of g.dead.values()) if (dl.at >= from) n++;
    return n;
  }

  async claimTurn(job: string, holder: string, ttlMs: number): Promise<boolean> {
    this.open();
    const now = this.clock.now();
    const turn = this.turns.get(job);
    if (turn && turn.holder !== holder && turn.until > now) return false;
    this.turns.set(job, { holder, until: now + ttlMs });
    return true;
  }

  async releaseTurn(job: string, holder: string): Promise<boolean> {
    this.open();
    if (this.turns.get(job)?.holder !== holder) return false;
    this.turns.delete(job);
    return true;
  }

  // ------------------------------------------------------------ wake-ups

  wait(req: WaitRequest): Promise<void> {
    const s = this.streams.get(req.stream);
    if (!s || this.closed || req.signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        req.signal.removeEventListener('abort', done);
        s.waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, req.timeoutMs);
      req.signal.addEventListener('abort', done);
      s.waiters.add(done);
    });
  }
}

function claimable(d: Delivery, now: number): boolean {
  return (d.state === 'available' && d.availableAt <= now) || (d.state === 'leased' && d.expiresAt <= now);
}

/**
 * Walk the frontier forward over terminal deliveries, dropping their records.
 * A sequence below the cursor with no record was terminal and already dropped.
 */
function advance(part: GroupPartition): void {
  for (;;) {
    const next = part.frontier + 1;
    if (next >= part.cursor) return;
    const d = part.deliveries.get(next);
    if (d && d.state !== 'acked' && d.state !== 'dead') return;
    if (d) part.deliveries.delete(next);
    part.frontier = next;
  }
}

/**
 * A forced trim moves a lagging group's partition to `point`: its records at or
 * below it go (a live lease there turns stale), and the frontier jumps there.
 * Returns how many events up to `point` it had not finished.
 */
function skipTo(part: GroupPartition, point: number): number {
  // Never offered: everything from the cursor (or just past the frontier) up to the point.
  let unfinished = Math.max(0, point - Math.max(part.cursor - 1, part.frontier));
  for (const [seq, d] of part.deliveries) {
    if (seq > point) continue;
    if (d.state !== 'acked' && d.state !== 'dead') unfinished++;
    part.deliveries.delete(seq);
    part.open.delete(seq);
  }
  part.cursor = Math.max(part.cursor, point + 1);
  part.frontier = point;
  advance(part);
  return unfinished;
}

function comparePosition(a: { partition: number; sequence: number }, b: { partition: number; sequence: number }): number {
  return a.partition - b.partition || a.sequence - b.sequence;
}

/** First index of `sorted` for which `before` is false (`before` holds for a prefix). */
function lowerBound<T>(sorted: T[], before: (item: T) => boolean): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (before(sorted[mid])) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function eventOrNull(stream: string, e: StoredEvent | undefined): RheoEvent | null {
  return e ? toEvent(stream, e) : null;
}

// Records leave as deep copies (Dates included), so a caller can never change the store through them.

function toEvent(stream: string, e: StoredEvent): RheoEvent {
  const event: RheoEvent = {
    id: e.id,
    stream,
    partition: e.partition,
    sequence: e.sequence,
    timestamp: new Date(e.timestamp),
    key: e.key,
    type: e.type,
    // Most events carry no metadata: a new empty object is the same copy without a parse.
    metadata: e.metadata === '{}' ? {} : (JSON.parse(e.metadata) as EventMetadata),
    payload: JSON.parse(e.payload) as JsonValue,
  };
  if (e.deliverAt !== undefined) event.deliverAt = new Date(e.deliverAt);
  return event;
}

/** An in-process backend for tests, demos and single-process apps that need no durability. */
export function memoryBackend(options: MemoryBackendOptions = {}): MemoryBackend {
  return new MemoryBackend(options);
}
