import { RheoError } from '../core/errors';
import { newId } from '../core/ids';
import type { RetryBackoff } from '../core/types';
import { DEFAULT_DRAIN_TIMEOUT_MS, DEFAULT_LEASE_MS, MAX_DURATION_MS, MAX_PARTITIONS } from '../core/limits';
import { checkPartitions } from '../core/requests';
import { checkInt, checkName, checkObject } from '../core/validate';

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
}

/** Defaults of {@link GroupRunOptions}. */
export const GROUP_DEFAULTS = {
  maxDemand: 10,
  concurrency: 1,
  leaseMs: DEFAULT_LEASE_MS,
  pollMs: 200,
  drainTimeoutMs: DEFAULT_DRAIN_TIMEOUT_MS,
} as const;

/** Bounds that keep one Group's memory and timers sane. */
const MAX_DEMAND = 100_000;
const MAX_CONCURRENCY = 10_000;

/**
 * Fetch errors back off 100 ms, doubling to 5 s, through the one `backoffDelay`
 * of core (step = consecutive failures).
 */
export const FETCH_BACKOFF: Required<RetryBackoff> = { initialMs: 100, factor: 2, maxMs: 5000 };

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
  const stream = checkName('stream', o.stream);
  const group = checkName('group', o.group);
  const maxDemand = optionalInt(o, 'maxDemand', GROUP_DEFAULTS.maxDemand, 1, MAX_DEMAND);
  const concurrency = optionalInt(o, 'concurrency', GROUP_DEFAULTS.concurrency, 1, MAX_CONCURRENCY);
  const leaseMs = optionalInt(o, 'leaseMs', GROUP_DEFAULTS.leaseMs, 2, MAX_DURATION_MS);
  const pollMs = optionalInt(o, 'pollMs', Math.min(GROUP_DEFAULTS.pollMs, leaseMs - 1), 1, MAX_DURATION_MS);
  if (pollMs >= leaseMs) throw RheoError.invalid('pollMs', `must be less than leaseMs (${leaseMs})`);
  const consumerId = o.consumerId === undefined ? newId() : checkName('consumerId', o.consumerId);
  // The stream's own partition count is checked by the facade on the first fetch.
  const partitions = checkPartitions('partitions', o.partitions, MAX_PARTITIONS);
  const drainTimeoutMs =
    o.drainTimeoutMs === undefined ? GROUP_DEFAULTS.drainTimeoutMs : checkDrainTimeout('drainTimeoutMs', o.drainTimeoutMs);
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
  }) as ResolvedGroupOptions;
}
