import { RheoError } from '../core/errors';
import { newId } from '../core/ids';
import type { RetryBackoff } from '../core/types';
import { DEFAULT_DRAIN_TIMEOUT_MS, DEFAULT_LEASE_MS, MAX_BATCH, MAX_DURATION_MS, MAX_PARTITIONS } from '../core/limits';
import { checkPartitions } from '../core/requests';
import { checkInt, checkKeys, checkName, checkObject, keySet } from '../core/validate';

/** How a {@link Group} consumes one (stream, group). */
export interface GroupRunOptions {
  /** The stream to consume; must exist. */
  stream: string;
  /** The consumer group; must exist (see `Rheo.createGroup`). */
  group: string;
  /** Most unsettled leases held at once, >= 1. Default 10. */
  maxDemand?: number;
  /** Most handlers running at once, >= 1. Default 1. Effective concurrency is `min(concurrency, maxDemand)`. */
  concurrency?: number;
  /** Lease time-to-live, ms; renewed at about `leaseMs / 2`. Default 30000. */
  leaseMs?: number;
  /** Idle poll interval, ms; must be below `leaseMs`. Default 200. */
  pollMs?: number;
  /** Recorded on every lease. Default: random. */
  consumerId?: string;
  /** Partitions this process consumes (static assignment). Default: all. */
  partitions?: number[];
  /** Default timeout of {@link Group.drain}, ms. Default 10000. */
  drainTimeoutMs?: number;
  /**
   * Most time one handler call may take, ms (for a batch: the whole batch). At
   * the timeout the call's signal aborts and its outcome is decided: see
   * `onTimeout`. A handler that ignores the signal has its late result dropped
   * (counted in `stats.lateResults`). Default: no timeout.
   */
  timeoutMs?: number;
  /** What a timeout settles: `'retry'` (a nack with the group's backoff, reason `timeout after N ms`) or `'dead-letter'`. Default `'retry'`. */
  onTimeout?: OnTimeout;
  /**
   * Batch mode: the handler receives up to `size` leases at once (a
   * {@link GroupBatchHandler}) and the batch is settled in one `settleMany`.
   */
  batch?: BatchOptions;
  /**
   * Exactly-once effects in the store's database: each handler runs in a
   * transaction of the backend (its `EntityManager` is `delivery.manager`), and
   * an ack is written and committed in it, fenced; anything else rolls it back.
   * Needs a backend with `ackInTransaction` (PostgreSQL, SQLite); not with
   * `batch`. Default false.
   */
  transactional?: boolean;
}

/** What a handler timeout settles. */
export type OnTimeout = 'retry' | 'dead-letter';

/** How a batch consumer groups its leases. */
export interface BatchOptions {
  /** Most leases per handler call, 1..10000. */
  size: number;
  /** Most time a batch waits for more leases before it runs with what it has, ms. Default 50. */
  maxWaitMs?: number;
}

/** {@link GroupRunOptions} with every default applied. */
export interface ResolvedGroupOptions {
  stream: string;
  group: string;
  maxDemand: number;
  concurrency: number;
  leaseMs: number;
  pollMs: number;
  consumerId: string;
  partitions: readonly number[] | undefined;
  drainTimeoutMs: number;
  /** Undefined: no timeout. */
  timeoutMs: number | undefined;
  onTimeout: OnTimeout;
  /** Undefined: one lease per handler call. */
  batch: Readonly<Required<BatchOptions>> | undefined;
  transactional: boolean;
}

/** Defaults of {@link GroupRunOptions}. */
export const GROUP_DEFAULTS = {
  maxDemand: 10,
  concurrency: 1,
  leaseMs: DEFAULT_LEASE_MS,
  pollMs: 200,
  drainTimeoutMs: DEFAULT_DRAIN_TIMEOUT_MS,
  onTimeout: 'retry',
  batchMaxWaitMs: 50,
} as const;

/** Bounds that keep one Group's memory and timers sane. */
const MAX_DEMAND = 100_000;
const MAX_CONCURRENCY = 10_000;

/**
 * Fetch errors back off 100 ms, doubling to 5 s, through the one `backoffDelay`
 * of core (step = consecutive failures).
 */
export const FETCH_BACKOFF: Required<RetryBackoff> = { initialMs: 100, factor: 2, maxMs: 5000 };

const OPTION_KEYS = keySet('a Group option', [
  'stream',
  'group',
  'maxDemand',
  'concurrency',
  'leaseMs',
  'pollMs',
  'consumerId',
  'partitions',
  'drainTimeoutMs',
  'timeoutMs',
  'onTimeout',
  'batch',
  'transactional',
]);
const BATCH_KEYS = keySet('a batch option', ['size', 'maxWaitMs']);

function optionalInt(o: Record<string, unknown>, field: string, fallback: number, min: number, max: number): number {
  const v = o[field];
  return v === undefined ? fallback : checkInt(field, v, min, max);
}

/** Check a drain timeout: an integer number of ms, >= 0. */
export function checkDrainTimeout(field: string, value: unknown): number {
  return checkInt(field, value, 0, MAX_DURATION_MS);
}

/**
 * Validate and default {@link GroupRunOptions}. Throws `RheoError('invalid_argument')`
 * naming the offending field; partition numbers are checked against the stream's
 * partition count by the facade on the first fetch.
 */
export function resolveGroupOptions(options: unknown): ResolvedGroupOptions {
  const o = checkObject('options', options);
  checkKeys('options', o, OPTION_KEYS);
  const stream = checkName('stream', o.stream);
  const group = checkName('group', o.group);
  const givenDemand = o.maxDemand === undefined ? undefined : checkInt('maxDemand', o.maxDemand, 1, MAX_DEMAND);
  const concurrency = optionalInt(o, 'concurrency', GROUP_DEFAULTS.concurrency, 1, MAX_CONCURRENCY);
  const batch = o.batch === undefined ? undefined : checkBatch(o.batch);
  // A batch consumer holds its running batches and one more being gathered, unless told otherwise.
  const maxDemand = givenDemand ?? (batch ? Math.min(MAX_DEMAND, batch.size * (concurrency + 1)) : GROUP_DEFAULTS.maxDemand);
  if (batch && batch.size > maxDemand)
    throw RheoError.invalid('batch.size', `must be at most maxDemand (${maxDemand}): a batch is made of held leases`);
  const leaseMs = optionalInt(o, 'leaseMs', GROUP_DEFAULTS.leaseMs, 2, MAX_DURATION_MS);
  const pollMs = optionalInt(o, 'pollMs', Math.min(GROUP_DEFAULTS.pollMs, leaseMs - 1), 1, MAX_DURATION_MS);
  if (pollMs >= leaseMs) throw RheoError.invalid('pollMs', `must be less than leaseMs (${leaseMs})`);
  const consumerId = o.consumerId === undefined ? newId() : checkName('consumerId', o.consumerId);
  // The stream's own partition count is checked by the facade on the first fetch.
  const partitions = checkPartitions('partitions', o.partitions, MAX_PARTITIONS);
  const drainTimeoutMs =
    o.drainTimeoutMs === undefined ? GROUP_DEFAULTS.drainTimeoutMs : checkDrainTimeout('drainTimeoutMs', o.drainTimeoutMs);
  const timeoutMs = o.timeoutMs === undefined ? undefined : checkInt('timeoutMs', o.timeoutMs, 1, MAX_DURATION_MS);
  const onTimeout = o.onTimeout === undefined ? GROUP_DEFAULTS.onTimeout : checkOnTimeout(o.onTimeout);
  const transactional = o.transactional === undefined ? false : checkTransactionalOption(o.transactional, batch !== undefined);
  return Object.freeze({
    stream,
    group,
    maxDemand,
    concurrency,
    leaseMs,
    pollMs,
    consumerId,
    partitions: partitions && Object.freeze(partitions),
    drainTimeoutMs,
    timeoutMs,
    onTimeout,
    batch,
    transactional,
  }) as ResolvedGroupOptions;
}

function checkTransactionalOption(value: unknown, batch: boolean): boolean {
  if (typeof value !== 'boolean') throw RheoError.invalid('transactional', 'must be a boolean');
  // One transaction per delivery: a batch's events would share one fence and one fate.
  if (value && batch) throw RheoError.invalid('transactional', 'cannot be combined with batch');
  return value;
}

function checkOnTimeout(value: unknown): OnTimeout {
  if (value !== 'retry' && value !== 'dead-letter') throw RheoError.invalid('onTimeout', "must be 'retry' or 'dead-letter'");
  return value;
}

/** Check {@link BatchOptions}; an unknown key is refused (a typo must not fall back to a default). */
function checkBatch(value: unknown): Readonly<Required<BatchOptions>> {
  const o = checkObject('batch', value);
  checkKeys('batch', o, BATCH_KEYS);
  if (o.size === undefined) throw RheoError.invalid('batch.size', 'is required');
  // One batch is settled in one settleMany call, which takes at most MAX_BATCH settles.
  const size = checkInt('batch.size', o.size, 1, MAX_BATCH);
  const maxWaitMs =
    o.maxWaitMs === undefined ? GROUP_DEFAULTS.batchMaxWaitMs : checkInt('batch.maxWaitMs', o.maxWaitMs, 0, MAX_DURATION_MS);
  return Object.freeze({ size, maxWaitMs });
}
