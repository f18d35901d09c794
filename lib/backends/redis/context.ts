import type { Clock } from '../../core/clock';
import { RheoError } from '../../core/errors';
import { Registrations } from '../../core/registrations';
import { type ClusterWakeListeners, isCluster } from './cluster';
import { type CallKind, mapRedisError, scriptDetail } from './errors';
import type { RedisClient, RedisCluster, RedisCommands } from './external';
import { KeyCache, type StreamKeys } from './keys';
import type { RedisConnection } from './lifecycle';
import type { RedisDurability, RedisSettings } from './options';
import { ScriptRunner } from './script-runner';
import type { ScriptName } from './scripts';
import type { WakeListener } from './wake-listener';

/** The stream (and group) a script call is about, so a missing one is told in its terms ({@link RedisContext.explain}). */
export interface ScriptSubject {
  stream: string;
  group?: string;
}

/** What wait() keeps between calls (coordination.ts). */
export interface WakeState {
  /** Wake id returned by the last fetch of each (stream, group), by groupKey: wait() blocks for anything newer. */
  readonly lastIds: Map<string, string>;
  /** On one server: the dedicated blocking connection, and the listener that reads on it. */
  blocker?: RedisClient;
  listener?: WakeListener;
  /** On a cluster: one blocking connection per waited slot, to the node that owns it (cluster.ts). */
  cluster?: ClusterWakeListeners;
}

/**
 * What every section of the Redis backend works through (registry.ts, log.ts,
 * delivery.ts, recovery.ts, retention.ts, coordination.ts): script and plain
 * ioredis calls with their errors mapped to RheoError (errors.ts), the stream's
 * keys, the clock, the registrations this process remembers (shared with the
 * facade, ADR 044), and the little state the sections keep between calls.
 */
export class RedisContext {
  readonly prefix: string;
  readonly clock: Clock;
  /** Log entries one query call may read (RedisBackendOptions.queryScanLimit). */
  readonly queryScanLimit: number;
  /** Replicas each append waits for, and for how long (RedisBackendOptions.durability); undefined: none. */
  readonly durability?: Readonly<Required<RedisDurability>>;
  /**
   * Partition counts and creation times never change once created, and group configs
   * only by deletion, so they are remembered. A stream's retention can change
   * (setRetention, from any process): it is never taken from here, getStream reads it
   * every time.
   */
  readonly registrations = new Registrations();
  /** Scripts are loaded on every master of a cluster, on the client otherwise. */
  readonly scripts: ScriptRunner;
  readonly wake: WakeState = { lastIds: new Map() };
  /** Layout 3 is recorded under the prefix (recordDelayedLayout): this process may write delayed events. */
  delayedLayout = false;
  /** Layout 4 (flow limits) recorded by this process (lifecycle.ts recordFlowLayout). */
  flowLayout = false;
  /** What init found wrong with the server's durability settings (durability.ts), told by every groupInfo. */
  durabilityWarnings: string[] = [];
  /** The process warning about them was emitted (once per backend). */
  durabilityWarned = false;
  /** Bounded: names come from callers, unknown ones included (see KeyCache). */
  private readonly streamKeys: KeyCache;

  constructor(
    readonly connection: RedisConnection,
    settings: RedisSettings,
  ) {
    this.prefix = settings.prefix;
    this.clock = settings.clock;
    this.queryScanLimit = settings.queryScanLimit;
    this.durability = settings.durability;
    this.streamKeys = new KeyCache(this.prefix);
    this.scripts = new ScriptRunner(
      () => this.redis(),
      () => {
        const c = this.redis();
        const masters = isCluster(c) ? c.nodes('master') : [];
        return masters.length > 0 ? masters : [c];
      },
    );
  }

  /** The client or cluster (created on first use); `backend_unavailable` once the backend is closed. */
  redis(): RedisClient | RedisCluster {
    return this.connection.client();
  }

  keys(stream: string): StreamKeys {
    return this.streamKeys.get(stream);
  }

  /** Entries in the key-object cache: bounded by its capacity whatever names are looked up. */
  get keyCacheSize(): number {
    return this.streamKeys.size;
  }

  /** Run `fn` (ioredis calls), turning whatever ioredis throws into a RheoError. */
  async call<T>(kind: CallKind, fn: (redis: RedisCommands) => Promise<T>): Promise<T> {
    try {
      return await fn(this.redis());
    } catch (err) {
      throw this.mapError(err, kind);
    }
  }

  /** Whatever ioredis (or a script) threw, as a RheoError naming the server when the connection is down. */
  mapError(err: unknown, kind: CallKind): RheoError {
    return mapRedisError(err, kind, this.connection);
  }

  /** Run a script, errors mapped; with `on`, a missing stream or group is explained in its terms (see {@link explain}). */
  async script(kind: CallKind, name: ScriptName, keys: string[], args: Array<string | number>, on?: ScriptSubject): Promise<unknown> {
    try {
      return await this.call(kind, () => this.scripts.callScript(name, keys, args));
    } catch (err) {
      throw on ? this.explain(err as RheoError, on.stream, on.group) : err;
    }
  }

  /**
   * A script's `stream_not_found` / `group_not_found` / missing log entry, in words.
   * Streams and groups are never deleted through the API, so a stream or group this
   * process has seen whose keys are now missing was flushed, evicted or deleted
   * behind our back: that is said plainly, and nothing is recreated (the group
   * scripts check before they write).
   */
  explain(err: RheoError, stream: string, group?: string): RheoError {
    const k = this.keys(stream);
    const lost = 'possibly flushed (FLUSHDB/FLUSHALL), evicted (maxmemory-policy) or deleted; nothing is recreated automatically';
    if (err.code === 'stream_not_found') {
      if (this.registrations.stream(stream) === undefined) return RheoError.streamNotFound(stream, err);
      return new RheoError(
        'stream_not_found',
        `stream "${stream}": its keys are gone from Redis (${k.meta} no longer exists), ${lost}: restore the data, or recreate the stream and its groups`,
        { cause: err },
      );
    }
    if (err.code === 'group_not_found' && group !== undefined) {
      if (this.registrations.group(stream, group) === undefined) return RheoError.groupNotFound(stream, group, err);
      return new RheoError(
        'group_not_found',
        `group "${group}" of stream "${stream}": its keys are gone from Redis (${k.group(group).cfg} no longer exists), ${lost}: restore the data, or recreate the group`,
        { cause: err },
      );
    }
    const missing = err.code === 'failed' ? /^log:(\d+):(\d+)$/.exec(scriptDetail(err) ?? '') : null;
    if (missing) {
      return new RheoError(
        'failed',
        `stream "${stream}": event ${missing[2]} of partition ${missing[1]} is missing from ${k.log(Number(missing[1]))} below the high watermark: the stream's keys are gone from Redis, possibly evicted (maxmemory-policy) or deleted`,
        { cause: err },
      );
    }
    return err;
  }

  /** The error of one op of a bulk call (delivery.ts), from the code its script answered. */
  opError(op: string, code: string, stream: string, group: string): RheoError {
    switch (code) {
      case 'stream_not_found':
        return this.explain(RheoError.streamNotFound(stream), stream, group);
      case 'group_not_found':
        return this.explain(RheoError.groupNotFound(stream, group), stream, group);
      case 'stale_lease':
        return RheoError.staleLease(op);
      case 'receipt_mismatch':
        return RheoError.receiptMismatch(op);
      default:
        return new RheoError('failed', `${op}: the script answered an unknown code ${code}`);
    }
  }
}
