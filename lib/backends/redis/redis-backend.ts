import type { Redis, RedisOptions } from 'ioredis';
import { backoffDelay } from '../../core/backoff';
import { Clock, systemClock } from '../../core/clock';
import { RheoError } from '../../core/errors';
import { newId } from '../../core/ids';
import type { DeadLetter, GroupConfig, GroupInfo, Lag, Lease, Ordering, RheoEvent, StreamInfo } from '../../core/types';
import type {
  Backend,
  CreateGroupRequest,
  FetchRequest,
  NewEvent,
  QueryRequest,
  ReadRequest,
  RenewResult,
  ReplayRequest,
  ResolvedStart,
  SettleOp,
  SettleResult,
  WaitRequest,
} from '../backend';
import { createCapabilities } from '../capabilities';
import { appendArgs, eventFromEntry, parseDeadRecord } from './codec';
import { BLOCKER_OVERRIDES, CREATED_CLIENT_DEFAULTS, disconnect, loadIoredis, ScriptRunner, sleep } from './connection';
import { CallKind, mapRedisError } from './errors';
import { checkPrefix, GroupKeys, registryKey, StreamKeys } from './keys';
import { type Entry, entryId, firstAtOrAfter, scanQuery, seqOf } from './log-scan';
import type { ScriptName } from './scripts';
import { WakeListener } from './wake-listener';

/** Options of {@link redisBackend}: `url` and/or `options` (the backend creates its client), or `client` (borrowed). Neither: localhost:6379. */
export interface RedisBackendOptions {
  /** `redis://[user:password@]host:port[/db]` or `rediss://...`; the backend creates (and later closes) its client. */
  url?: string;
  /**
   * A connected or lazy ioredis 6 client to borrow: it is never closed by the
   * backend, and its options (offline queue, retries) are left as they are.
   */
  client?: Redis;
  /** ioredis options for a client the backend creates (merged over the fail-fast defaults). */
  options?: RedisOptions;
  /** Key prefix, default `rheo`. No braces or whitespace. */
  prefix?: string;
  /** Time source for timestamps, lease expiry and retry delays. Default: the system clock. */
  clock?: Clock;
}


/**
 * The Redis Streams backend (ioredis 6). Each partition is a stream whose entry
 * ids are `0-<sequence>`; per-group delivery state lives in hashes and sorted
 * sets next to it, under the stream's hash tag. Every state change (append,
 * claim, renew, settle, frontier advance, replay, reset, redrive) is one Lua
 * script, so a fence check and the write it guards are atomic. Times come from
 * the backend's clock, never from Redis. See docs/redis.md.
 */
export class RedisBackend implements Backend {
  readonly name = 'redis';
  readonly capabilities = createCapabilities({
    guarantees: { durable: true, distributed: true, partitions: true, contiguousFrontier: true, replay: true, orderedPartitions: true },
    mechanisms: { notifications: false, blockingReads: true, batchWrites: true, secondaryIndexes: false, transactionalAppend: false },
  });
  readonly clock: Clock;
  /** The key prefix every key of this backend starts with. */
  readonly prefix: string;

  private readonly options: RedisBackendOptions;
  private readonly owned: boolean;
  private client?: Redis;
  private blocker?: Redis;
  private listener?: WakeListener;
  private readonly scripts = new ScriptRunner(() => this.redis());
  private ready?: Promise<void>;
  private closed = false;
  /** Partition counts and group configs never change once created, so they are cached. */
  private readonly streamInfos = new Map<string, StreamInfo>();
  private readonly groupConfigs = new Map<string, GroupConfig>();
  private readonly streamKeys = new Map<string, StreamKeys>();
  /** Wake id returned by the last fetch of each (stream, group): wait() blocks for anything newer. */
  private readonly lastWake = new Map<string, string>();

  constructor(options: RedisBackendOptions = {}) {
    if (typeof options !== 'object' || options === null) throw RheoError.invalid('options', 'must be an object');
    if (options.client !== undefined) {
      const other = (['url', 'options'] as const).find((k) => options[k] !== undefined);
      if (other) throw RheoError.invalid(other, 'cannot be combined with client: a borrowed client is used as it is');
    }
    if (options.url !== undefined && (typeof options.url !== 'string' || !/^rediss?:\/\//.test(options.url))) {
      throw RheoError.invalid('url', 'must be a redis:// or rediss:// URL');
    }
    if (options.client !== undefined && typeof (options.client as { evalsha?: unknown }).evalsha !== 'function') {
      throw RheoError.invalid('client', 'must be an ioredis client');
    }
    this.options = options;
    this.prefix = checkPrefix(options.prefix ?? 'rheo');
    this.clock = options.clock ?? systemClock;
    this.owned = options.client === undefined;
    this.client = options.client;
  }

  // ------------------------------------------------------------ connection

  private redis(): Redis {
    if (this.closed) throw new RheoError('backend_unavailable', 'the redis backend is closed');
    if (!this.client) {
      const IORedis = loadIoredis();
      const opts = { ...CREATED_CLIENT_DEFAULTS, ...this.options.options };
      this.client = this.options.url ? new IORedis(this.options.url, opts) : new IORedis(opts);
      // Failures surface through each call as RheoError; this keeps ioredis from logging them as unhandled.
      this.client.on('error', () => undefined);
    }
    return this.client;
  }

  async init(): Promise<void> {
    if (this.closed) throw new RheoError('backend_unavailable', 'the redis backend is closed');
    if (!this.ready) {
      this.ready = this.connect().catch((err) => {
        this.ready = undefined;
        throw mapRedisError(err, 'read');
      });
    }
    return this.ready;
  }

  private async connect(): Promise<void> {
    const client = this.redis();
    if (client.status === 'wait') {
      try {
        await client.connect();
      } catch (err) {
        // A client we own that never came up is dropped (its reconnect loop stopped);
        // the next init() starts over with a fresh one.
        if (this.owned) {
          client.disconnect();
          this.client = undefined;
        }
        throw err;
      }
    }
    await this.scripts.loadAll();
  }

  async ping(): Promise<void> {
    if (!this.ready) await this.init();
    try {
      await this.redis().ping();
    } catch (err) {
      throw new RheoError('backend_unavailable', `redis did not answer: ${(err as Error).message}`, { cause: err });
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.listener?.close();
    const closing: Array<Promise<void>> = [];
    if (this.blocker) closing.push(disconnect(this.blocker));
    if (this.owned && this.client) closing.push(disconnect(this.client));
    await Promise.all(closing);
  }

  /** Run `fn`, turning whatever ioredis throws into a RheoError. */
  private async call<T>(kind: CallKind, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      throw mapRedisError(err, kind);
    }
  }

  private run(kind: CallKind, name: ScriptName, keys: string[], args: Array<string | number>): Promise<unknown> {
    return this.call(kind, () => this.scripts.run(name, keys, args));
  }

  private keys(stream: string): StreamKeys {
    let k = this.streamKeys.get(stream);
    if (!k) {
      k = new StreamKeys(this.prefix, stream);
      this.streamKeys.set(stream, k);
    }
    return k;
  }

  private remember(info: StreamInfo): void {
    this.streamInfos.set(info.name, info);
  }

  private async partitions(stream: string): Promise<number> {
    const cached = this.streamInfos.get(stream);
    if (cached) return cached.partitions;
    const info = await this.getStream(stream);
    if (!info) throw new RheoError('stream_not_found', `stream "${stream}" does not exist`);
    return info.partitions;
  }

  private async config(stream: string, group: string): Promise<GroupConfig> {
    const cached = this.groupConfigs.get(`${stream}\u0000${group}`);
    if (cached) return cached;
    const cfg = await this.getGroup(stream, group);
    if (!cfg) throw new RheoError('group_not_found', `group "${group}" does not exist on stream "${stream}"`);
    return cfg;
  }

  // ------------------------------------------------------------ streams and groups

  async createStream(stream: string, partitions: number): Promise<StreamInfo> {
    const createdAt = this.clock.now();
    const k = this.keys(stream);
    // The registry is an index in another slot, written after the creation (see keys.ts). It is
    // written on already_exists too, so a creation whose registry write was lost is repaired by a retry.
    const registered = () => this.call('write', () => this.redis().sadd(registryKey(this.prefix), stream));
    try {
      await this.run('write', 'createStream', [k.meta], [partitions, createdAt]);
    } catch (err) {
      if ((err as RheoError).code !== 'already_exists') throw err;
      await registered();
      throw new RheoError('already_exists', `stream "${stream}" already exists`);
    }
    await registered();
    this.remember({ name: stream, partitions, createdAt: new Date(createdAt) });
    return { name: stream, partitions, createdAt: new Date(createdAt) };
  }

  async getStream(stream: string): Promise<StreamInfo | null> {
    // A registration never changes and streams are never deleted, so a known one is answered from memory
    // (the facade asks on every call: this saves a round trip per fetch and append).
    const known = this.streamInfos.get(stream);
    if (known) return { ...known, createdAt: new Date(known.createdAt.getTime()) };
    const [partitions, createdAt] = await this.call('read', () => this.redis().hmget(this.keys(stream).meta, 'partitions', 'createdAt'));
    if (partitions === null) return null;
    const info = { name: stream, partitions: Number(partitions), createdAt: new Date(Number(createdAt)) };
    this.remember(info);
    return { ...info, createdAt: new Date(info.createdAt.getTime()) };
  }

  async listStreams(): Promise<StreamInfo[]> {
    const names = await this.call('read', () => this.redis().smembers(registryKey(this.prefix)));
    const infos = await Promise.all(names.map((n) => this.getStream(n)));
    return infos.filter((i): i is StreamInfo => i !== null).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  async createGroup(req: CreateGroupRequest): Promise<GroupConfig> {
    const P = await this.partitions(req.stream);
    const k = this.keys(req.stream);
    const g = k.group(req.group);
    const createdAt = this.clock.now();
    const { mode, after } = await this.startArgs(req.stream, P, req.start);
    await this.run('write', 'createGroup', [k.meta, g.cfg, k.groups], [
      req.group,
      req.maxAttempts,
      req.retry.initialMs,
      req.retry.factor,
      req.retry.maxMs,
      req.ordering,
      createdAt,
      mode,
      ...after,
    ]).catch((err: RheoError) => {
      throw err.code === 'already_exists' ? new RheoError('already_exists', `group "${req.group}" already exists on stream "${req.stream}"`) : err;
    });
    const config: GroupConfig = {
      stream: req.stream,
      group: req.group,
      maxAttempts: req.maxAttempts,
      retry: { ...req.retry },
      ordering: req.ordering,
      createdAt: new Date(createdAt),
    };
    this.groupConfigs.set(`${req.stream}\u0000${req.group}`, config);
    return copyConfig(config);
  }

  /** A start position as script arguments: 'end' is resolved inside the script (atomic with appends), the rest here. */
  private async startArgs(stream: string, P: number, start: ResolvedStart): Promise<{ mode: 'end' | 'after'; after: number[] }> {
    if (start.kind === 'end') return { mode: 'end', after: [] };
    const after: number[] = [];
    for (let p = 0; p < P; p++) {
      if (start.kind === 'beginning') after.push(0);
      else if (start.kind === 'after') after.push(typeof start.sequences === 'number' ? start.sequences : start.sequences[p] ?? 0);
      else after.push((await this.call('read', () => firstAtOrAfter(this.redis(), this.keys(stream).log(p), start.time.getTime()))) - 1);
    }
    return { mode: 'after', after };
  }

  async getGroup(stream: string, group: string): Promise<GroupConfig | null> {
    const g = this.keys(stream).group(group);
    const [maxAttempts, ri, rf, rm, ord, createdAt] = await this.call('read', () =>
      this.redis().hmget(g.cfg, 'maxAttempts', 'ri', 'rf', 'rm', 'ord', 'createdAt'),
    );
    if (maxAttempts === null) return null;
    const config: GroupConfig = {
      stream,
      group,
      maxAttempts: Number(maxAttempts),
      retry: { initialMs: Number(ri), factor: Number(rf), maxMs: Number(rm) },
      ordering: ord as Ordering,
      createdAt: new Date(Number(createdAt)),
    };
    this.groupConfigs.set(`${stream}\u0000${group}`, config);
    return copyConfig(config);
  }

  async listGroups(stream: string): Promise<GroupConfig[]> {
    await this.partitions(stream);
    const names = await this.call('read', () => this.redis().smembers(this.keys(stream).groups));
    const configs = await Promise.all(names.map((n) => this.getGroup(stream, n)));
    return configs.filter((c): c is GroupConfig => c !== null).sort((a, b) => (a.group < b.group ? -1 : a.group > b.group ? 1 : 0));
  }

  // ------------------------------------------------------------ the log

  async append(stream: string, events: NewEvent[]): Promise<RheoEvent[]> {
    const P = await this.partitions(stream);
    // Validate the whole batch before writing anything, so a batch is all or nothing.
    for (const e of events) {
      if (!Number.isInteger(e.partition) || e.partition < 0 || e.partition >= P) throw RheoError.invalid('partition', `must be between 0 and ${P - 1}`);
    }
    if (events.length === 0) return [];
    const k = this.keys(stream);
    const slots = new Map<number, number>();
    const args: string[] = [String(events.length)];
    for (const e of events) {
      if (!slots.has(e.partition)) slots.set(e.partition, slots.size);
      args.push(...appendArgs(e, slots.get(e.partition)!));
    }
    const keys = [k.meta, k.ids, k.wake, ...[...slots.keys()].map((p) => k.log(p))];
    const result = (await this.run('write', 'append', keys, args)) as Array<number | string>;
    const known = new Map<string, RheoEvent>();
    const lookups = result.filter((r): r is string => typeof r === 'string' && !known.has(r));
    if (lookups.length) {
      const p = this.redis().pipeline();
      const unique = [...new Set(lookups)];
      for (const ref of unique) {
        const [part, seq] = ref.split(':').map(Number);
        p.xrange(k.log(part), entryId(seq), entryId(seq));
      }
      const rows = await this.call('read', async () => (await p.exec()) ?? []);
      unique.forEach((ref, i) => {
        const [err, entries] = rows[i] as [Error | null, Entry[]];
        if (err || !entries?.[0]) throw new RheoError('failed', `redis: event ${ref} is indexed but missing from the log`);
        const [part, seq] = ref.split(':').map(Number);
        known.set(ref, eventFromEntry(stream, part, seq, entries[0][1]));
      });
    }
    return events.map((e, i) => {
      const r = result[i];
      if (typeof r === 'string') return { ...known.get(r)!, metadata: { ...known.get(r)!.metadata }, payload: structuredClone(known.get(r)!.payload) };
      return {
        id: e.id,
        stream,
        partition: e.partition,
        sequence: Number(r),
        timestamp: new Date(e.timestamp.getTime()),
        key: e.key,
        type: e.type,
        metadata: structuredClone(e.metadata),
        payload: structuredClone(e.payload),
      };
    });
  }

  async read(req: ReadRequest): Promise<RheoEvent[]> {
    const entries = (await this.call('read', () =>
      this.redis().xrange(this.keys(req.stream).log(req.partition), entryId(req.afterSequence + 1), '+', 'COUNT', req.limit),
    )) as Entry[];
    return entries.map(([id, fields]) => eventFromEntry(req.stream, req.partition, seqOf(id), fields));
  }

  async query(req: QueryRequest): Promise<RheoEvent[]> {
    const P = await this.partitions(req.stream);
    return this.call('read', () => scanQuery(this.redis(), this.keys(req.stream), req, P));
  }

  // ------------------------------------------------------------ leases

  async fetch(req: FetchRequest): Promise<Lease[]> {
    const P = await this.partitions(req.stream);
    const k = this.keys(req.stream);
    const g = k.group(req.group);
    const parts = req.partitions ?? Array.from({ length: P }, (_, p) => p);
    const keys = [k.meta, g.cfg, g.deliveries, k.wake];
    for (const p of parts) keys.push(k.log(p), g.leased(p), g.available(p));
    const now = this.clock.now();
    const out = (await this.run('write', 'fetch', keys, [now, req.limit, req.leaseMs, newId(), ...parts])) as unknown[];
    this.lastWake.set(`${req.stream}\u0000${req.group}`, String(out[0]));
    const leases: Lease[] = [];
    for (let i = 1; i + 4 < out.length; i += 5) {
      const partition = Number(out[i]);
      const sequence = Number(out[i + 1]);
      leases.push({
        leaseId: String(out[i + 2]),
        receipt: entryId(sequence),
        stream: req.stream,
        group: req.group,
        consumerId: req.consumerId,
        attempt: Number(out[i + 3]),
        leasedAt: new Date(now),
        expiresAt: new Date(now + req.leaseMs),
        event: eventFromEntry(req.stream, partition, sequence, out[i + 4]),
      });
    }
    return leases;
  }

  /**
   * Group bulk ops by (stream, group), build one script call per group, send them
   * all in one pipeline (one round trip) and map the per-op answers back.
   * `build` returns the script's extra args for an op, or a RheoError for that op alone.
   */
  private async bulk<T extends { lease: Lease<unknown> }, R>(
    items: T[],
    name: 'renew' | 'settle',
    head: (now: number, cfg: GroupConfig) => Array<string | number>,
    build: (item: T, slot: number) => Array<string | number>,
    ok: (now: number) => R,
    fail: (error: RheoError) => R,
  ): Promise<R[]> {
    const now = this.clock.now();
    const results: R[] = new Array(items.length);
    const byGroup = new Map<string, number[]>();
    items.forEach((it, i) => {
      const key = `${it.lease.stream}\u0000${it.lease.group}`;
      const list = byGroup.get(key);
      if (list) list.push(i);
      else byGroup.set(key, [i]);
    });
    const calls: Array<{ name: ScriptName; keys: string[]; args: Array<string | number>; index: number[] }> = [];
    for (const indexes of byGroup.values()) {
      const { stream, group } = items[indexes[0]].lease;
      let P: number;
      let cfg: GroupConfig;
      try {
        P = await this.partitions(stream);
        cfg = await this.config(stream, group);
      } catch (err) {
        for (const i of indexes) results[i] = fail(mapRedisError(err, 'read'));
        continue;
      }
      const k = this.keys(stream);
      const g = k.group(group);
      const slots = new Map<number, number>();
      const args = head(now, cfg);
      const index: number[] = [];
      for (const i of indexes) {
        const { partition, sequence } = items[i].lease.event;
        if (!Number.isInteger(partition) || partition < 0 || partition >= P || !Number.isInteger(sequence) || sequence < 1) {
          results[i] = fail(new RheoError('stale_lease', `${name}: the lease does not name a delivery of this group`));
          continue;
        }
        if (!slots.has(partition)) slots.set(partition, slots.size);
        args.push(...build(items[i], slots.get(partition)!));
        index.push(i);
      }
      if (index.length === 0) continue;
      const keys = name === 'renew' ? [g.cfg, g.deliveries] : [g.cfg, g.deliveries, g.dead, g.deadOrder, k.wake];
      for (const p of slots.keys()) {
        keys.push(g.leased(p));
        if (name === 'settle') keys.push(g.available(p), k.log(p));
      }
      calls.push({ name, keys, args, index });
    }
    if (calls.length > 0) {
      let answers: Array<[Error | null, unknown]>;
      try {
        answers = await this.call('write', async () => {
          const p = this.redis().pipeline();
          for (const c of calls) this.scripts.queue(p, c.name, c.keys, c.args);
          return this.scripts.execPipeline(p, calls);
        });
      } catch (err) {
        answers = calls.map(() => [err as Error, null]);
      }
      calls.forEach((c, n) => {
        const [err, codes] = answers[n];
        c.index.forEach((i, j) => {
          if (err) results[i] = fail(mapRedisError(err, 'write'));
          else {
            const code = (codes as string[])[j];
            results[i] = code === 'ok' ? ok(now) : fail(new RheoError(code as 'stale_lease', leaseProblem(name, code)));
          }
        });
      });
    }
    return results;
  }

  async renew(leases: Lease<unknown>[], leaseMs: number): Promise<RenewResult[]> {
    return this.bulk<{ lease: Lease<unknown> }, RenewResult>(
      leases.map((lease) => ({ lease })),
      'renew',
      (now) => [now, leaseMs],
      ({ lease }, slot) => [slot, lease.event.partition, lease.event.sequence, lease.leaseId, lease.receipt],
      (now) => ({ ok: true, expiresAt: new Date(now + leaseMs) }),
      (error) => ({ ok: false, error }),
    );
  }

  async settle(ops: SettleOp[]): Promise<SettleResult[]> {
    return this.bulk<SettleOp, SettleResult>(
      ops,
      'settle',
      // The delay after each attempt comes from core's one backoff; the script picks it by the stored attempt.
      (now, cfg) => {
        const delays = Array.from({ length: cfg.maxAttempts }, (_, i) => backoffDelay(cfg.retry, i + 1));
        return [now, delays.length, ...delays];
      },
      (op, slot) => [
        op.kind === 'ack' ? 'a' : op.kind === 'nack' ? 'n' : 'r',
        slot,
        op.lease.event.partition,
        op.lease.event.sequence,
        op.lease.leaseId,
        op.lease.receipt,
        op.kind === 'ack' ? '' : op.reason,
        op.kind === 'nack' && op.delayMs !== undefined ? op.delayMs : '',
      ],
      () => ({ ok: true }),
      (error) => ({ ok: false, error }),
    );
  }

  // ------------------------------------------------------------ replay, reset, redrive

  /** KEYS shared by REPLAY / REOPEN / RESET: per partition slot, leased then available. */
  private slotKeys(g: GroupKeys, parts: number[]): string[] {
    return parts.flatMap((p) => [g.leased(p), g.available(p)]);
  }

  async replay(req: ReplayRequest): Promise<number> {
    const P = await this.partitions(req.stream);
    await this.config(req.stream, req.group);
    const k = this.keys(req.stream);
    const g = k.group(req.group);
    if (req.kind === 'events') {
      return this.reopen(req.stream, req.group, 'events', req.events);
    }
    const parts = req.partitions ?? Array.from({ length: P }, (_, p) => p);
    const args: Array<string | number> = [req.kind === 'sequence' ? 'sequence' : 'after'];
    for (const p of parts) {
      args.push(p, req.kind === 'sequence' ? req.afterSequence : (await this.call('read', () => firstAtOrAfter(this.redis(), k.log(p), req.from.getTime()))) - 1);
    }
    const keys = [k.meta, g.cfg, g.deliveries, g.dead, g.deadOrder, k.wake, ...this.slotKeys(g, parts)];
    return Number(await this.run('write', 'replay', keys, args));
  }

  private async reopen(stream: string, group: string, mode: 'events' | 'redrive', events: Array<{ id: string; partition: number; sequence: number }>): Promise<number> {
    if (events.length === 0) return 0;
    const k = this.keys(stream);
    const g = k.group(group);
    const slots = new Map<number, number>();
    const args: Array<string | number> = [mode, this.clock.now()];
    for (const e of events) {
      if (!slots.has(e.partition)) slots.set(e.partition, slots.size);
      args.push(slots.get(e.partition)!, e.partition, e.sequence, e.id);
    }
    const keys = [g.cfg, g.deliveries, g.dead, g.deadOrder, k.wake, ...this.slotKeys(g, [...slots.keys()])];
    return Number(await this.run('write', 'reopen', keys, args));
  }

  async reset(stream: string, group: string, start: ResolvedStart): Promise<void> {
    const P = await this.partitions(stream);
    await this.config(stream, group);
    const k = this.keys(stream);
    const g = k.group(group);
    const { mode, after } = await this.startArgs(stream, P, start);
    const all = Array.from({ length: P }, (_, p) => p);
    await this.run('write', 'reset', [k.meta, g.cfg, g.deliveries, g.dead, g.deadOrder, k.wake, ...this.slotKeys(g, all)], [mode, ...after]);
  }

  async redrive(stream: string, group: string, eventIds: string[] | 'all'): Promise<number> {
    await this.config(stream, group);
    const g = this.keys(stream).group(group);
    let records: Array<[string, string | null]>;
    if (eventIds === 'all') {
      records = Object.entries(await this.call('read', () => this.redis().hgetall(g.dead)));
    } else {
      const ids = [...new Set(eventIds)];
      const recs = await this.call('read', () => this.redis().hmget(g.dead, ...ids));
      records = ids.map((id, i) => [id, recs[i]]);
    }
    const events = records
      .filter((r): r is [string, string] => r[1] !== null)
      .map(([id, rec]) => {
        const d = parseDeadRecord(rec);
        return { id, partition: d.partition, sequence: d.sequence };
      });
    return this.reopen(stream, group, 'redrive', events);
  }

  // ------------------------------------------------------------ inspection

  private async inspect(stream: string, group: string): Promise<{ lag: Lag; inflight: number; dead: number; oldest: number | null; now: number }> {
    const P = await this.partitions(stream);
    const k = this.keys(stream);
    const g = k.group(group);
    const keys = [k.meta, g.cfg, g.dead];
    for (let p = 0; p < P; p++) keys.push(g.leased(p), k.log(p));
    const now = this.clock.now();
    const out = (await this.run('read', 'inspect', keys, [now])) as Array<number | string>;
    const partitions = [];
    let inflight = 0;
    let oldest: number | null = null;
    for (let p = 0; p < P; p++) {
      const [hw, f, live, ts] = out.slice(1 + 4 * p, 5 + 4 * p);
      const highWatermark = Number(hw);
      const frontier = Number(f);
      partitions.push({ partition: p, frontier, highWatermark, lag: Math.max(0, highWatermark - frontier) });
      inflight += Number(live);
      if (ts !== '' && (oldest === null || Number(ts) < oldest)) oldest = Number(ts);
    }
    const lag: Lag = { stream, group, lag: partitions.reduce((n, x) => n + x.lag, 0), partitions };
    return { lag, inflight, dead: Number(out[0]), oldest, now };
  }

  async lag(stream: string, group: string): Promise<Lag> {
    return (await this.inspect(stream, group)).lag;
  }

  async groupInfo(stream: string, group: string): Promise<GroupInfo> {
    const config = await this.config(stream, group);
    const { lag, inflight, dead, oldest, now } = await this.inspect(stream, group);
    return {
      stream,
      group,
      lag,
      inflight,
      deadLetters: dead,
      oldestUnsettledAgeMs: oldest === null ? null : Math.max(0, now - oldest),
      config: copyConfig(config),
    };
  }

  async deadLetters(stream: string, group: string, limit: number, after?: string): Promise<DeadLetter[]> {
    const P = await this.partitions(stream);
    const k = this.keys(stream);
    const g = k.group(group);
    const keys = [g.cfg, g.dead, g.deadOrder, ...Array.from({ length: P }, (_, p) => k.log(p))];
    const out = (await this.run('read', 'deadLetters', keys, [limit, after ?? '']).catch((err: RheoError) => {
      throw err.code === 'invalid_argument' ? RheoError.invalid('after', `is not a dead-lettered event id of group "${group}"`) : err;
    })) as unknown[];
    const letters: DeadLetter[] = [];
    for (let i = 0; i + 2 < out.length; i += 3) {
      const d = parseDeadRecord(String(out[i + 1]));
      const fields = out[i + 2] as string[];
      letters.push({
        stream,
        group,
        eventId: String(out[i]),
        partition: d.partition,
        sequence: d.sequence,
        reason: d.reason,
        attempt: d.attempt,
        deadLetteredAt: new Date(d.at),
        event: fields.length ? eventFromEntry(stream, d.partition, d.sequence, fields) : null,
      });
    }
    return letters;
  }

  // ------------------------------------------------------------ wake-ups

  /**
   * Blocks (XREAD BLOCK on the stream's wake key, on the dedicated connection)
   * until a write that may create work for the group happens after its last
   * fetch, `timeoutMs` passes, or `signal` aborts. Never throws: a failure only
   * turns the wait into a plain sleep.
   */
  async wait(req: WaitRequest): Promise<void> {
    if (this.closed || req.signal.aborted) return;
    const key = this.keys(req.stream).wake;
    try {
      let lastId = this.lastWake.get(`${req.stream}\u0000${req.group}`);
      if (lastId === undefined) {
        const last = (await this.redis().xrevrange(key, '+', '-', 'COUNT', 1)) as Entry[];
        lastId = last[0]?.[0] ?? '0-0';
      }
      await this.wakeListener().wait(key, lastId, req.timeoutMs, req.signal);
    } catch {
      await sleep(req.timeoutMs, req.signal);
    }
  }

  private wakeListener(): WakeListener {
    if (!this.listener) {
      this.blocker = this.redis().duplicate(BLOCKER_OVERRIDES);
      this.listener = new WakeListener(this.blocker, (id) => this.redis().client('UNBLOCK', id));
    }
    return this.listener;
  }
}

/** A caller's copy of a (cached) group config: nothing shared with the cache. */
function copyConfig(c: GroupConfig): GroupConfig {
  return { ...c, retry: { ...c.retry }, createdAt: new Date(c.createdAt.getTime()) };
}

function leaseProblem(op: string, code: string): string {
  switch (code) {
    case 'stale_lease':
      return `${op}: the lease is no longer held (expired, settled or replaced)`;
    case 'receipt_mismatch':
      return `${op}: the receipt does not match the delivery`;
    case 'group_not_found':
      return `${op}: the lease's group does not exist`;
    default:
      return `${op}: ${code}`;
  }
}

/**
 * A backend on Redis Streams (Redis >= 6.2, ioredis 6). Give `url`, `options`
 * (the backend creates and closes its client) or `client` (borrowed, never
 * closed). A second connection, created with `duplicate()`, serves the blocking
 * reads behind `wait()`.
 */
export function redisBackend(options: RedisBackendOptions = {}): RedisBackend {
  return new RedisBackend(options);
}
