import { RheoError } from '../core/errors';
import type { GroupOptions, Ordering, RetryBackoff, StartPosition } from '../core/types';
import { checkInt, checkKeys, checkName, checkObject, keySet } from '../core/validate';
import type { BatchOptions, GroupRunOptions, OnTimeout } from '../runtime';
import { resolveGroupOptions } from '../runtime/options';
import { resolveBroadcast, type ResolvedBroadcast } from './broadcast-options';

/** How a consumer runs: everything but its identity (stream, group, instance). */
export interface RheoConsumerSettings {
  /** Most unsettled leases held at once. Default 10. */
  maxDemand?: number;
  /** Most handlers running at once. Default 1. */
  concurrency?: number;
  /** Partitions this process consumes. Default all. */
  partitions?: number[];
  /** `'partition'`: one outstanding lease per partition across all processes (strict per-key order). Group setting, applied when the group is created. */
  ordering?: Ordering;
  /** Lease time-to-live, ms; renewed at about half. Default 30000. */
  leaseMs?: number;
  /** Idle poll interval, ms; below leaseMs. Default 200. */
  pollMs?: number;
  /** Deliveries before dead-lettering. Default 5. Group setting, applied when the group is created. */
  maxAttempts?: number;
  /** Redelivery backoff after a failure. Group setting, applied when the group is created. */
  retry?: RetryBackoff;
  /** Where a new group starts reading. Default `'beginning'`. Group setting, applied when the group is created. */
  start?: StartPosition;
  /** Recorded on every lease this consumer takes. Default random. */
  consumerId?: string;
  /**
   * Most time one delivery (for a batch consumer: one batch) may take, ms. At the
   * timeout `ctx.signal` aborts and the delivery is settled by `onTimeout`; a
   * handler that ignores the signal has its late result dropped. Default: none.
   */
  timeoutMs?: number;
  /** What a timeout settles: `'retry'` (reason `timeout after N ms`, the group's backoff) or `'dead-letter'`. Default `'retry'`. */
  onTimeout?: OnTimeout;
  /**
   * Broadcast consumers only: how long a crashed instance's group outlives its
   * last heartbeat before another instance deletes it, ms (heartbeats every third
   * of it). Default 30000, at least 100; the same in every instance.
   */
  broadcastTtlMs?: number;
}

/** Options of `@RheoConsumer`. */
export interface RheoConsumerOptions extends RheoConsumerSettings {
  stream: string;
  group: string;
  /** The `RheoModule` instance (its `name`) that runs this consumer. Default `'default'`. */
  instance?: string;
  /**
   * Exactly-once effects in the backend's database (PostgreSQL, SQLite through
   * TypeORM): the handler runs in a transaction, `ctx.manager` is its
   * `EntityManager`, and the ack is written and committed in it, fenced; a throw
   * or any other outcome rolls it back. Other backends refuse it at startup. Set
   * here only (not in the module's `defaults` / `consumers`): the handler relies
   * on it. Default false.
   */
  transactional?: boolean;
  /**
   * A batch consumer: `@Payload()` is an array of up to `size` payloads and
   * `@Ctx()` a `RheoBatchContext`; the batch is settled in one call. Set here
   * only (not in the module's `defaults` / `consumers`): it changes what the
   * handler receives.
   */
  batch?: BatchOptions;
  /**
   * Every running instance of the app receives every event (cache invalidation,
   * the instance's websockets): each consumes a group of its own,
   * `<group>.<instance id>`, starting at the end of the stream, deleted when the
   * instance shuts down and by the other instances `broadcastTtlMs` after it
   * crashed. Set here only. Default false.
   */
  broadcast?: boolean;
}

/** A consumer's options after defaults, configuration and validation. */
export interface ResolvedConsumer {
  /** `Class.method`, for messages. */
  handlerName: string;
  /** `'stream/group'`. */
  key: string;
  run: GroupRunOptions;
  group: GroupOptions;
  /** Set for a broadcast consumer (`run.group` is then its instance's group once the transport joined it). */
  broadcast?: ResolvedBroadcast;
  /** Where each setting not taken from the decorator came from (`'defaults'`, `'consumers["stream/group"]'`), for errors. */
  sources: SettingSources;
}

/** Per setting, the module option it was taken from; absent when it came from the decorator (or the built-in default). */
export type SettingSources = Partial<Record<keyof RheoConsumerSettings, string>>;

const SETTINGS: ReadonlyArray<keyof RheoConsumerSettings> = [
  'maxDemand',
  'concurrency',
  'partitions',
  'ordering',
  'leaseMs',
  'pollMs',
  'maxAttempts',
  'retry',
  'start',
  'consumerId',
  'timeoutMs',
  'onTimeout',
  'broadcastTtlMs',
];
const IDENTITY = ['stream', 'group', 'instance'];
/** Options that change the handler's signature: the decorator's to decide, never configuration's. */
const DECORATOR_ONLY = ['batch', 'transactional', 'broadcast'];

/** What configuration may set, and what the decorator may (identity and the handler-shaping options too). */
const SETTING_KEYS = keySet('a consumer option', SETTINGS);
const DECORATOR_KEYS = keySet('a consumer option', [...IDENTITY, ...DECORATOR_ONLY, ...SETTINGS]);

/** The key a consumer's configuration is found under in `RheoModuleOptions.consumers`. */
export function consumerKey(stream: string, group: string): string {
  return `${stream}/${group}`;
}

/** Reject keys that are not settings: a typo must not silently fall back to a default. */
export function checkSettings(field: string, value: unknown, allowIdentity = false): RheoConsumerSettings {
  const o = checkObject(field, value);
  if (!allowIdentity) {
    for (const k of DECORATOR_ONLY)
      if (Object.prototype.hasOwnProperty.call(o, k))
        throw RheoError.invalid(`${field}.${k}`, 'is set on @RheoConsumer only: it changes what the handler receives');
  }
  checkKeys(field, o, allowIdentity ? DECORATOR_KEYS : SETTING_KEYS);
  return o as RheoConsumerSettings;
}

function pick(o: RheoConsumerSettings): RheoConsumerSettings {
  const out: Record<string, unknown> = {};
  for (const k of SETTINGS) if (o[k] !== undefined) out[k] = o[k];
  return out as RheoConsumerSettings;
}

function checkGroupSettings(s: RheoConsumerSettings): GroupOptions {
  const group: GroupOptions = { ifNotExists: true };
  if (s.maxAttempts !== undefined) group.maxAttempts = checkInt('maxAttempts', s.maxAttempts, 1, 1000);
  if (s.ordering !== undefined) {
    if (s.ordering !== 'none' && s.ordering !== 'partition') throw RheoError.invalid('ordering', "must be 'none' or 'partition'");
    group.ordering = s.ordering;
  }
  // The facade validates retry and start in detail when it creates the group.
  if (s.retry !== undefined) group.retry = checkObject('retry', s.retry) as RetryBackoff;
  if (s.start !== undefined) group.start = s.start;
  return group;
}

/** Settings whose names cannot be mistaken for ordinary words in a message. */
const CAMEL_CASE_SETTINGS = SETTINGS.filter((k) => /[A-Z]/.test(k));

/**
 * The same error, blaming the module option a value came from: a bad
 * `consumers["orders/billing"].maxDemand` must not read as if the decorator said
 * it. The field becomes `consumers["orders/billing"].maxDemand` (or
 * `defaults.maxDemand`); a configured setting the problem names (`pollMs must be
 * less than leaseMs`) is qualified too. Errors about a decorator value are
 * returned unchanged.
 */
export function blameSource(sources: SettingSources, err: unknown): unknown {
  if (!(err instanceof RheoError) || err.field === undefined) return err;
  const root = /^[A-Za-z]+/.exec(err.field)?.[0] as keyof RheoConsumerSettings | undefined;
  const source = root === undefined ? undefined : sources[root];
  const field = source === undefined ? err.field : `${source}.${err.field}`;
  const head = err.message.startsWith(err.field) ? err.field : '';
  let rest = err.message.slice(head.length);
  for (const k of CAMEL_CASE_SETTINGS) {
    const other = sources[k];
    if (k !== root && other !== undefined) rest = rest.replace(new RegExp(`(?<![\\w.\\]"])${k}(?!\\w)`, 'g'), `${other}.${k}`);
  }
  const message = (head === '' ? '' : field) + rest;
  if (message === err.message && field === err.field) return err;
  return new RheoError(err.code, message, { field, cause: err });
}

/**
 * Resolve one consumer: built-in defaults < module `defaults` < decorator options <
 * module `consumers['stream/group']`. Every error names the handler
 * (`RiskController.onCurve: maxDemand must be >= 1`) and, for a value from the
 * module options, where it came from (`consumers["market-events/risk"].maxDemand`,
 * `defaults.maxDemand`); nothing has been touched yet.
 */
export function resolveConsumer(
  handlerName: string,
  decorated: RheoConsumerOptions,
  moduleOptions: { defaults?: RheoConsumerSettings; consumers?: Record<string, RheoConsumerSettings>; drainTimeoutMs?: number },
): ResolvedConsumer {
  try {
    const own = pick(checkSettings('options', decorated, true));
    const stream = checkName('stream', decorated.stream);
    const group = checkName('group', decorated.group);
    const key = consumerKey(stream, group);
    const defaults = moduleOptions.defaults === undefined ? {} : pick(checkSettings('defaults', moduleOptions.defaults));
    const configured = moduleOptions.consumers?.[key];
    const overrideSource = `consumers["${key}"]`;
    const override = configured === undefined ? {} : pick(checkSettings(overrideSource, configured));
    const merged: RheoConsumerSettings = { ...defaults, ...own, ...override };
    const sources: SettingSources = {};
    for (const k of SETTINGS) {
      if (override[k] !== undefined) sources[k] = overrideSource;
      else if (own[k] === undefined && defaults[k] !== undefined) sources[k] = 'defaults';
    }
    try {
      const runInput: GroupRunOptions = {
        stream,
        group,
        maxDemand: merged.maxDemand,
        concurrency: merged.concurrency,
        leaseMs: merged.leaseMs,
        pollMs: merged.pollMs,
        consumerId: merged.consumerId,
        partitions: merged.partitions,
        drainTimeoutMs: moduleOptions.drainTimeoutMs,
        timeoutMs: merged.timeoutMs,
        onTimeout: merged.onTimeout,
        batch: decorated.batch,
        transactional: decorated.transactional,
      };
      for (const k of Object.keys(runInput) as Array<keyof GroupRunOptions>) if (runInput[k] === undefined) delete runInput[k];
      resolveGroupOptions(runInput);
      const broadcast = resolveBroadcast({
        broadcast: decorated.broadcast,
        group,
        start: merged.start,
        broadcastTtlMs: merged.broadcastTtlMs,
        startSource: sources.start,
        ttlSource: sources.broadcastTtlMs,
      });
      // A broadcast group always starts at the end (a start from the module's defaults does not apply to it).
      const settings = broadcast ? { ...merged, start: 'end' as const } : merged;
      return { handlerName, key, run: runInput, group: checkGroupSettings(settings), sources, ...(broadcast && { broadcast }) };
    } catch (err) {
      throw blameSource(sources, err);
    }
  } catch (err) {
    throw prefixed(handlerName, err);
  }
}

/** The same error, its message prefixed with the handler it is about. */
export function prefixed(handlerName: string, err: unknown): RheoError {
  if (err instanceof RheoError) {
    const e = new RheoError(err.code, `${handlerName}: ${err.message}`, { field: err.field, cause: err });
    return e;
  }
  const message = err instanceof Error ? err.message : String(err);
  return new RheoError('failed', `${handlerName}: ${message}`, { cause: err });
}
