// Every option a consumer takes, declared once: its type and TSDoc in
// `ConsumerFields`, and in `CONSUMER_FIELDS` its kind, where it may be set, its
// default, its validator and its line of the docs table. The runtime's option
// types (`GroupRunOptions`, `ResolvedGroupOptions`), their validation and
// defaults (options.ts) and the `consumer_start` snapshot are derived from these
// two. The table is typed by the interface, so a field added to one and not the
// other, or validated to another type, does not compile.
import { DEFAULT_RETRY } from '../core/backoff';
import { RheoError } from '../core/errors';
import { newId } from '../core/ids';
import { DEFAULT_DRAIN_TIMEOUT_MS, DEFAULT_LEASE_MS, DEFAULT_MAX_ATTEMPTS, MAX_ATTEMPTS_LIMIT, MAX_BATCH } from '../core/limits';
import { MAX_DURATION_MS, MAX_PARTITIONS } from '../core/limits';
import { checkRateLimit, MAX_GROUP_CONCURRENCY, MAX_KEY_CONCURRENCY } from '../core/flow';
import { checkPartitions } from '../core/requests';
import type { GroupConfig, Ordering, RateLimit, RetryBackoff, StartPosition } from '../core/types';
import { checkBoolean, checkInt, checkKeys, checkName, checkObject, keySet } from '../core/validate';
import { DEFAULT_BROADCAST_TTL_MS, MIN_BROADCAST_TTL_MS } from './broadcast';

/** What a handler timeout settles. */
export type OnTimeout = 'retry' | 'dead-letter';

/** How a batch consumer groups its leases. */
export interface BatchOptions {
  /** Most leases per handler call, 1..10000. */
  size: number;
  /** Most time a batch waits for more leases before it runs with what it has, ms. Default 50. */
  maxWaitMs?: number;
}

/** Which consumer this is. */
export interface ConsumerIdentity {
  /** The stream to consume; must exist (or be declared in the module's `streams`). */
  stream: string;
  /** The consumer group (see `Rheo.createGroup`; the Nest transport creates it at startup). */
  group: string;
  /** The `RheoModule` instance (its `name`) that runs this consumer. Default `'default'`. */
  instance?: string;
}

/**
 * How this process consumes: each process has its own (two processes of one
 * group may differ), and the module's `defaults` / `consumers` may set them.
 */
export interface ConsumerProcessSettings {
  /** Most unsettled leases held at once, >= 1. Default 10 (with `batch`: `size × (concurrency + 1)`). */
  maxDemand?: number;
  /** Most handlers running at once, >= 1. Default 1. Effective concurrency is `min(concurrency, maxDemand)`. */
  concurrency?: number;
  /** Partitions this process consumes (static assignment). Default: all. */
  partitions?: readonly number[];
  /** Lease time-to-live, ms; renewed at about `leaseMs / 2`. Default 30000. */
  leaseMs?: number;
  /** Idle poll interval, ms; must be below `leaseMs`. Default 200. */
  pollMs?: number;
  /** Recorded on every lease this consumer takes. Default: random. */
  consumerId?: string;
  /** Default timeout of the runtime's `drain()`, ms (Nest: the module's `drainTimeoutMs`). Default 10000. */
  drainTimeoutMs?: number;
  /**
   * Most time one delivery (for a batch consumer: one batch) may take, ms. At the
   * timeout the delivery's signal (`ctx.signal`) aborts and the delivery is
   * settled by `onTimeout`; a handler that ignores the signal has its late result
   * dropped (counted in `stats.lateResults`). Default: none.
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

/**
 * Group settings: stored with the group when it is created, the same for every
 * process. An existing group keeps what it was created with (the Nest transport
 * warns when they differ, or with the module's `groupSettings: 'apply'` changes
 * `maxAttempts` and `retry` in place). The module's `defaults` / `consumers` may set them.
 */
export interface ConsumerGroupSettings {
  /** Deliveries before dead-lettering. Default 5. Group setting, applied when the group is created. */
  maxAttempts?: number;
  /** Redelivery backoff after a failure. Default `{ initialMs: 1000, factor: 2, maxMs: 60000 }`. Group setting, applied when the group is created. */
  retry?: RetryBackoff;
  /** `'partition'`: one outstanding lease per partition across all processes; `'key'`: one per key. Default `'none'`. Group setting. */
  ordering?: Ordering;
  /** At most this many open deliveries per key across the group, 1..10,000; not with an `ordering`. Group setting. */
  keyConcurrency?: number;
  /** At most this many leases of the group in flight across every process, 1..100,000. Group setting. */
  groupConcurrency?: number;
  /** At most `max` deliveries started per `perMs` ms across every process. Group setting. */
  rateLimit?: RateLimit;
  /** Where a new group starts reading. Default `'beginning'`. Group setting, applied when the group is created. */
  start?: StartPosition;
}

/**
 * What the handler is: `batch` and `transactional` change its signature (an
 * array and a batch context, a transaction's manager), `broadcast` where its
 * group lives. The code's to decide, next to the handler: never configuration's.
 */
export interface ConsumerHandlerShape {
  /**
   * A batch consumer: the handler receives up to `size` leases at once (in Nest
   * `@Payload()` is an array and `@Ctx()` a `RheoBatchContext`) and the batch is
   * settled in one call. Not in the module's `defaults` / `consumers`: it changes what the handler receives.
   */
  batch?: BatchOptions;
  /**
   * Exactly-once effects in the backend's database (PostgreSQL, SQLite through
   * TypeORM): the handler runs in a transaction (its `EntityManager` is
   * `ctx.manager`, or `delivery.manager` in the runtime), and the ack is written
   * and committed in it, fenced; a throw or any other outcome rolls it back. Other
   * backends refuse it at startup; not with `batch`. Not in the module's
   * `defaults` / `consumers`: the handler relies on it. Default false.
   */
  transactional?: boolean;
  /**
   * Every running instance of the app receives every event (cache invalidation,
   * the instance's websockets): each consumes a group of its own,
   * `<group>.<instance id>`, starting at the end of the stream, deleted when the
   * instance shuts down and by the other instances `broadcastTtlMs` after it
   * crashed. Set on the decorator only. Default false.
   */
  broadcast?: boolean;
}

/**
 * Every option of a consumer, whichever API sets it (the runtime's options, the
 * `@RheoConsumer` decorator, the module's `defaults` / `consumers`): which of
 * them each takes is the field's entry in {@link CONSUMER_FIELDS}, whose `kind`
 * is the interface it is declared in.
 */
export interface ConsumerFields extends ConsumerIdentity, ConsumerProcessSettings, ConsumerGroupSettings, ConsumerHandlerShape {}

/**
 * What a field is about, which decides where it may be set:
 * - `identity`: which consumer this is (stream, group, instance);
 * - `process`: how this process consumes, per process (the module's `defaults` / `consumers` may set it);
 * - `group`: stored with the group when it is created, the same for every process (`defaults` / `consumers` too);
 * - `handler`: what the handler is: `batch` and `transactional` change its signature, `broadcast` where its group lives;
 *   the code's to decide (the decorator, the runtime's options), never configuration's.
 */
export type FieldKind = 'identity' | 'process' | 'group' | 'handler';

/** The kind of a field: the interface of {@link ConsumerFields} it is declared in (a field moved from one to another must change kind). */
type KindOf<K extends keyof ConsumerFields> = K extends keyof ConsumerIdentity
  ? 'identity'
  : K extends keyof ConsumerProcessSettings
    ? 'process'
    : K extends keyof ConsumerGroupSettings
      ? 'group'
      : 'handler';

/** Which API takes a field: the consumer runtime's options, or Nest's `@RheoConsumer` (and, by kind, the module's configuration). */
export type Surface = 'runtime' | 'nest';

/** One field's declaration. */
export interface FieldSpec<T> {
  readonly kind: FieldKind;
  readonly on: readonly Surface[];
  /** No default: the field must be given. */
  readonly required?: true;
  /** The value of an absent field; a function for one made per consumer (a random id). Absent: none (or {@link defaultText}). */
  readonly default?: T | (() => T);
  /** The default as the docs table writes it, when the value alone does not say it (`random`, `all`, `none`). */
  readonly defaultText?: string;
  /** The value checked, or a RheoError('invalid_argument') naming `field`. Called for a value that is set (and for a required one). */
  readonly check: (field: string, value: unknown) => T;
  /** The field's line in the docs table (Markdown). */
  readonly doc: string;
  /** Part of the settings a consumer reports as it starts (`consumer_start`, the start log line). */
  readonly snapshot?: true;
}

/** Bounds that keep one consumer's memory and timers sane. */
export const MAX_DEMAND = 100_000;
const MAX_CONCURRENCY = 10_000;
const DEFAULT_BATCH_MAX_WAIT_MS = 50;

/** Check a drain timeout: an integer number of ms, >= 0. */
export function checkDrainTimeout(field: string, value: unknown): number {
  return checkInt(field, value, 0, MAX_DURATION_MS);
}

const BATCH_KEYS = keySet('a batch option', ['size', 'maxWaitMs']);

/** Check {@link BatchOptions}; an unknown key is refused (a typo must not fall back to a default). */
function checkBatch(field: string, value: unknown): Readonly<Required<BatchOptions>> {
  const o = checkObject(field, value);
  checkKeys(field, o, BATCH_KEYS);
  if (o.size === undefined) throw RheoError.invalid(`${field}.size`, 'is required');
  // One batch is settled in one settleMany call, which takes at most MAX_BATCH settles.
  const size = checkInt(`${field}.size`, o.size, 1, MAX_BATCH);
  const maxWaitMs = o.maxWaitMs === undefined ? DEFAULT_BATCH_MAX_WAIT_MS : checkInt(`${field}.maxWaitMs`, o.maxWaitMs, 0, MAX_DURATION_MS);
  return Object.freeze({ size, maxWaitMs });
}

function checkOneOf<T extends string>(values: readonly T[], words: string) {
  return (field: string, value: unknown): T => {
    if (!values.includes(value as T)) throw RheoError.invalid(field, `must be ${words}`);
    return value as T;
  };
}

const BOTH: readonly Surface[] = ['runtime', 'nest'];

/** The declaration of every consumer option, in the order of the docs table. */
export const CONSUMER_FIELDS = {
  stream: {
    kind: 'identity',
    on: BOTH,
    required: true,
    check: checkName,
    doc: 'the stream to consume',
  },
  group: {
    kind: 'identity',
    on: BOTH,
    required: true,
    check: checkName,
    doc: 'the consumer group, created at startup if missing',
  },
  instance: {
    kind: 'identity',
    on: ['nest'],
    defaultText: "`'default'`",
    // The consumer discovery checks it: an instance no RheoModule registers fails the boot, naming the handler.
    check: (_field, value) => value as string,
    doc: 'which `RheoModule` instance runs it',
  },
  maxDemand: {
    kind: 'process',
    on: BOTH,
    default: 10,
    defaultText: '10 (with `batch`: `size × (concurrency + 1)`)',
    check: (field, value) => checkInt(field, value, 1, MAX_DEMAND),
    doc: 'most unsettled leases held at once (prefetched and renewed)',
    snapshot: true,
  },
  concurrency: {
    kind: 'process',
    on: BOTH,
    default: 1,
    check: (field, value) => checkInt(field, value, 1, MAX_CONCURRENCY),
    doc: 'most handlers running at once',
    snapshot: true,
  },
  partitions: {
    kind: 'process',
    on: BOTH,
    defaultText: 'all',
    // The stream's own partition count is checked by the facade on the first fetch.
    check: (field, value): readonly number[] => Object.freeze(checkPartitions(field, value, MAX_PARTITIONS) ?? []),
    doc: 'partitions this process consumes',
    snapshot: true,
  },
  leaseMs: {
    kind: 'process',
    on: BOTH,
    default: DEFAULT_LEASE_MS,
    check: (field, value) => checkInt(field, value, 2, MAX_DURATION_MS),
    doc: 'lease time-to-live, ms; renewed at about half while held',
    snapshot: true,
  },
  pollMs: {
    kind: 'process',
    on: BOTH,
    default: 200,
    check: (field, value) => checkInt(field, value, 1, MAX_DURATION_MS),
    doc: 'idle poll interval, ms (below `leaseMs`); LISTEN/NOTIFY and blocking reads wake consumers sooner',
    snapshot: true,
  },
  consumerId: {
    kind: 'process',
    on: BOTH,
    default: newId,
    defaultText: 'random',
    check: checkName,
    doc: 'recorded on each lease',
    snapshot: true,
  },
  drainTimeoutMs: {
    kind: 'process',
    on: ['runtime'],
    default: DEFAULT_DRAIN_TIMEOUT_MS,
    check: checkDrainTimeout,
    doc: "how long a drain waits for running handlers, ms; in Nest the module's `drainTimeoutMs`, for every consumer",
    snapshot: true,
  },
  maxAttempts: {
    kind: 'group',
    on: ['nest'],
    default: DEFAULT_MAX_ATTEMPTS,
    check: (field, value) => checkInt(field, value, 1, MAX_ATTEMPTS_LIMIT),
    doc: 'deliveries before dead-lettering',
    snapshot: true,
  },
  retry: {
    kind: 'group',
    on: ['nest'],
    default: DEFAULT_RETRY,
    // The facade checks its keys and bounds when it creates the group.
    check: (field, value) => checkObject(field, value) as RetryBackoff,
    doc: 'redelivery backoff',
    snapshot: true,
  },
  ordering: {
    kind: 'group',
    on: ['nest'],
    default: 'none',
    check: checkOneOf<Ordering>(['none', 'partition', 'key'], "'none', 'partition' or 'key'"),
    doc: "`'partition'`: one outstanding lease per partition across every process, strict per-key order; a delayed event holds the later events of its partition until it is settled. `'key'`: one open delivery per key, in order, keys never wait for each other ([flow control](#flow-control))",
    snapshot: true,
  },
  // The facade checks these against the group's ordering when it creates the group; here each alone.
  keyConcurrency: {
    kind: 'group',
    on: ['nest'],
    defaultText: 'none',
    check: (field, value) => checkInt(field, value, 1, MAX_KEY_CONCURRENCY),
    doc: 'most open deliveries (in flight or waiting for a retry) per key across the group; not with an `ordering` ([flow control](#flow-control))',
    snapshot: true,
  },
  groupConcurrency: {
    kind: 'group',
    on: ['nest'],
    defaultText: 'none',
    check: (field, value) => checkInt(field, value, 1, MAX_GROUP_CONCURRENCY),
    doc: 'most leases of the group in flight at once, across every process ([flow control](#flow-control))',
    snapshot: true,
  },
  rateLimit: {
    kind: 'group',
    on: ['nest'],
    defaultText: 'none',
    check: checkRateLimit,
    doc: '`{ max, perMs }`: most deliveries started in any `perMs` ms, across every process ([flow control](#flow-control))',
    snapshot: true,
  },
  start: {
    kind: 'group',
    on: ['nest'],
    default: 'beginning',
    // The facade resolves it against the stream when it creates the group.
    check: (_field, value) => value as StartPosition,
    doc: "`'end'`, `{ afterSequence }`, `{ at: Date }`; a broadcast consumer always starts at the end",
  },
  timeoutMs: {
    kind: 'process',
    on: BOTH,
    defaultText: 'none',
    check: (field, value) => checkInt(field, value, 1, MAX_DURATION_MS),
    doc: 'most time one delivery (a batch: the whole batch) may take, ms; then `ctx.signal` aborts and the delivery is settled by `onTimeout`; a late result is dropped and counted',
  },
  onTimeout: {
    kind: 'process',
    on: BOTH,
    default: 'retry',
    check: checkOneOf<OnTimeout>(['retry', 'dead-letter'], "'retry' or 'dead-letter'"),
    doc: "`'retry'`: retry with the group's backoff, reason `timeout after N ms`; `'dead-letter'`: dead-letter now with that reason",
  },
  batch: {
    kind: 'handler',
    on: BOTH,
    defaultText: 'none',
    check: checkBatch,
    doc: '`{ size, maxWaitMs }`: the handler gets up to `size` (≤ 10000) events at once, waiting at most `maxWaitMs` (default 50) for more ([batch consumers](#batch-consumers))',
  },
  transactional: {
    kind: 'handler',
    on: BOTH,
    default: false,
    check: checkBoolean,
    doc: "PostgreSQL / SQLite: the handler runs in a transaction (`ctx.manager`) whose writes commit with the delivery's ack, exactly once ([below](#exactly-once-effects-transactional-consumers)); not with `batch`; refused at startup on other backends",
  },
  broadcast: {
    kind: 'handler',
    on: ['nest'],
    default: false,
    check: checkBoolean,
    doc: 'every running instance of the app gets every event: each consumes a group of its own, `<group>.<instance id>`, from the end of the stream ([broadcast consumers](#broadcast-consumers))',
  },
  broadcastTtlMs: {
    kind: 'process',
    on: ['nest'],
    default: DEFAULT_BROADCAST_TTL_MS,
    check: (field, value) => checkInt(field, value, MIN_BROADCAST_TTL_MS, MAX_DURATION_MS),
    doc: "broadcast only: a crashed instance's group is deleted by the others this long after its last heartbeat, ms",
  },
} as const satisfies { readonly [K in keyof ConsumerFields]-?: FieldSpec<Exclude<ConsumerFields[K], undefined>> & { kind: KindOf<K> } };

type Fields = typeof CONSUMER_FIELDS;
/** The name of a consumer option. */
export type FieldKey = keyof Fields;
type OnSurface<S extends Surface> = { [K in FieldKey]: S extends Fields[K]['on'][number] ? K : never }[FieldKey];
type OfKind<T extends FieldKind> = { [K in FieldKey]: Fields[K]['kind'] extends T ? K : never }[FieldKey];
type InSnapshot = { [K in FieldKey]: Fields[K] extends { snapshot: true } ? K : never }[FieldKey];
/** True for a field that always has a value once resolved (a default, or required). */
type Always<K extends FieldKey> = Fields[K] extends { default: unknown } | { required: true } ? true : false;
/** A field's value once checked. */
type Checked<K extends FieldKey> = ReturnType<Fields[K]['check']>;

/** The fields `S` takes of the kinds `T` (every kind by default). */
export type FieldsOn<S extends Surface, T extends FieldKind = FieldKind> = OnSurface<S> & OfKind<T>;

/** The options of the consumer runtime. */
export type RuntimeKey = OnSurface<'runtime'>;
/** The options stored with the group when it is created. */
type GroupSettingKey = OfKind<'group'>;

/** How the consumer runtime consumes one (stream, group). */
export type GroupRunOptions = Pick<ConsumerFields, RuntimeKey>;

/** {@link GroupRunOptions} checked, every default applied (undefined: none, such as no timeout or all partitions). */
export type ResolvedGroupOptions = { [K in RuntimeKey]: Always<K> extends true ? Checked<K> : Checked<K> | undefined };

type SnapshotValue<K extends FieldKey> = K extends GroupSettingKey & keyof GroupConfig
  ? Exclude<GroupConfig[K], null>
  : K extends RuntimeKey
    ? Exclude<ResolvedGroupOptions[K], undefined>
    : never;

/** A consumer's settings as it started: its options with defaults applied, and its group's stored configuration (absent: none, such as all partitions). */
export type ConsumerSettingsSnapshot = { [K in InSnapshot as Always<K> extends true ? K : never]: SnapshotValue<K> } & {
  [K in InSnapshot as Always<K> extends true ? never : K]?: SnapshotValue<K>;
};

const KEYS = Object.keys(CONSUMER_FIELDS) as FieldKey[];
const spec = (k: FieldKey): FieldSpec<unknown> => CONSUMER_FIELDS[k];

/** The keys of {@link FieldsOn}, as values, in the table's order. */
export function fieldsOn<S extends Surface, T extends FieldKind = FieldKind>(surface: S, kinds?: readonly T[]): readonly FieldsOn<S, T>[] {
  return KEYS.filter((k) => spec(k).on.includes(surface) && (kinds === undefined || kinds.includes(spec(k).kind as T))) as FieldsOn<S, T>[];
}

/** The keys of {@link RuntimeKey}, as values. */
export const RUNTIME_KEYS: readonly RuntimeKey[] = fieldsOn('runtime');
/** What the snapshot holds: a group setting is read from the group's stored configuration, the rest from the process's options. */
const SNAPSHOT_KEYS = KEYS.filter((k) => spec(k).snapshot);

/** The default of an absent field (made anew for one made per consumer); undefined when it has none. */
export function defaultOf<K extends FieldKey>(key: K): Checked<K> | undefined {
  const d = spec(key).default;
  return (typeof d === 'function' ? d() : d) as Checked<K> | undefined;
}

/**
 * The fields of `keys` that `o` sets, each checked by its validator (a required
 * one even when absent), in the table's order; the error names the field.
 */
export function checkFields<K extends FieldKey>(o: Record<string, unknown>, keys: readonly K[]): { [P in K]?: Checked<P> } {
  const out: Record<string, unknown> = {};
  for (const k of keys) {
    const s = spec(k);
    if (o[k] !== undefined || s.required) out[k] = s.check(k, o[k]);
  }
  return out as { [P in K]?: Checked<P> };
}

/** The snapshot of a consumer that started with `run` on a group stored as `config`. */
export function settingsSnapshot(run: Readonly<ResolvedGroupOptions>, config: GroupConfig): ConsumerSettingsSnapshot {
  const out: Record<string, unknown> = {};
  for (const k of SNAPSHOT_KEYS) {
    const value = spec(k).kind === 'group' ? config[k as keyof GroupConfig] : run[k as RuntimeKey];
    // A group setting the group does not have (a flow limit) is stored as null: absent from the snapshot.
    if (value === undefined || value === null) continue;
    // A copy: the snapshot goes to listeners, who must not change what the consumer runs with.
    out[k] = Array.isArray(value) ? [...value] : typeof value === 'object' && value !== null ? { ...value } : value;
  }
  return out as ConsumerSettingsSnapshot;
}
