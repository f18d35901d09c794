// Flow limits (docs/adr/049-flow-control.md): the checks of a group's settings, the
// one reading of "how many places a key has", and the one sliding window of a rate
// limit, shared by every backend that computes them in JavaScript.
import { RheoError } from './errors';
import { MAX_DURATION_MS } from './limits';
import type { FlowLimits, GroupConfig, Ordering, RateLimit } from './types';
import { checkInt, checkKeys, checkObject, keySet } from './validate';

/** Highest `keyConcurrency`. */
export const MAX_KEY_CONCURRENCY = 10_000;
/** Highest `groupConcurrency`. */
export const MAX_GROUP_CONCURRENCY = 100_000;
/** Highest `rateLimit.max`. */
export const MAX_RATE_LIMIT = 100_000;

const RATE_KEYS = keySet('a rateLimit setting', ['max', 'perMs']);

/** A rate limit, checked (`<field>.max`, `<field>.perMs`). */
export function checkRateLimit(field: string, value: unknown): RateLimit {
  const r = checkObject(field, value);
  checkKeys(field, r, RATE_KEYS);
  if (r.max === undefined) throw RheoError.invalid(`${field}.max`, 'is required');
  if (r.perMs === undefined) throw RheoError.invalid(`${field}.perMs`, 'is required');
  return { max: checkInt(`${field}.max`, r.max, 1, MAX_RATE_LIMIT), perMs: checkInt(`${field}.perMs`, r.perMs, 1, MAX_DURATION_MS) };
}

/** A key limit is refused beside an ordering: each ordering already runs one delivery at a time (per partition, per key). */
export function checkKeyConcurrency(value: unknown, ordering: Ordering): number {
  const n = checkInt('keyConcurrency', value, 1, MAX_KEY_CONCURRENCY);
  if (ordering !== 'none')
    throw RheoError.invalid('keyConcurrency', `cannot be set with ordering '${ordering}', which already runs one delivery at a time`);
  return n;
}

export function checkGroupConcurrency(value: unknown): number {
  return checkInt('groupConcurrency', value, 1, MAX_GROUP_CONCURRENCY);
}

/** The flow limits of createGroup's options, absent ones null. */
export function checkFlowOptions(
  options: { keyConcurrency?: unknown; groupConcurrency?: unknown; rateLimit?: unknown },
  ordering: Ordering,
): FlowLimits {
  return {
    keyConcurrency: options.keyConcurrency === undefined ? null : checkKeyConcurrency(options.keyConcurrency, ordering),
    groupConcurrency: options.groupConcurrency === undefined ? null : checkGroupConcurrency(options.groupConcurrency),
    rateLimit: options.rateLimit === undefined ? null : checkRateLimit('rateLimit', options.rateLimit),
  };
}

/**
 * How many deliveries of one key may be open (in flight, or waiting for a retry or
 * a delay) at once: 1 under `ordering: 'key'`, `keyConcurrency` when set, else null
 * (keys are not limited). Every backend reads a group's key places through this.
 */
export function keyPlaces(config: Pick<GroupConfig, 'ordering' | 'keyConcurrency'>): number | null {
  if (config.ordering === 'key') return 1;
  return config.keyConcurrency;
}

/** True when the group has a limit the claim must consult beyond its own `limit`. */
export function hasFlowLimits(config: Pick<GroupConfig, 'ordering' | 'keyConcurrency' | 'groupConcurrency' | 'rateLimit'>): boolean {
  return keyPlaces(config) !== null || config.groupConcurrency !== null || config.rateLimit !== null;
}

/**
 * A rate limit's recent starts: `[at, count, at, count, ...]`, one pair per claim
 * that started deliveries, oldest first, times in ms by the store's clock. A start
 * at `at` counts while `now - at < perMs`, so no span of `perMs` ms holds more than
 * `max` starts (a sliding window, exact: a fixed window lets 2 × max through
 * around its edge). At most `max` pairs are ever kept.
 */
export type RateLog = number[];

/** What a rate limit allows now: how many may start, and when one more may if none can (ms from now, else 0). */
export function rateRoom(log: RateLog, now: number, limit: RateLimit): { room: number; retryInMs: number } {
  let used = 0;
  let oldest = -1;
  for (let i = 0; i < log.length; i += 2) {
    if (now - log[i] < limit.perMs) {
      used += log[i + 1];
      if (oldest < 0) oldest = log[i];
    }
  }
  const room = Math.max(0, limit.max - used);
  return { room, retryInMs: room > 0 || oldest < 0 ? 0 : Math.max(1, oldest + limit.perMs - now) };
}

/** The log after `started` deliveries started at `now`: pairs out of the window dropped. */
export function rateLogAfter(log: RateLog, now: number, perMs: number, started: number): RateLog {
  const kept: RateLog = [];
  for (let i = 0; i < log.length; i += 2) if (now - log[i] < perMs) kept.push(log[i], log[i + 1]);
  if (started > 0) {
    const n = kept.length;
    if (n > 0 && kept[n - 2] === now) kept[n - 1] += started;
    else kept.push(now, started);
  }
  return kept;
}

/**
 * Flow limits on a backend that does not enforce them (`guarantees.flowControl`)
 * are refused, naming the first one set: at createGroup and updateGroup, and by
 * the Nest transport before it creates anything.
 */
export function checkFlowSupported(
  backend: { name: string; capabilities: { guarantees: { flowControl: boolean } } },
  config: Pick<GroupConfig, 'ordering' | 'keyConcurrency' | 'groupConcurrency' | 'rateLimit'>,
): void {
  if (backend.capabilities.guarantees.flowControl || !hasFlowLimits(config)) return;
  const field =
    config.ordering === 'key'
      ? 'ordering'
      : config.keyConcurrency !== null
        ? 'keyConcurrency'
        : config.groupConcurrency !== null
          ? 'groupConcurrency'
          : 'rateLimit';
  throw RheoError.invalid(field, `is not supported by the ${backend.name} backend (it does not declare guarantees.flowControl)`);
}

/** A group without flow limits. */
export const NO_FLOW_LIMITS: Readonly<FlowLimits> = Object.freeze({ keyConcurrency: null, groupConcurrency: null, rateLimit: null });

/**
 * How many a claim of `limit` may take under the group-wide limits, given the
 * group's live leases and its rate log at `now`; `held` names the limit when it
 * took the claim below `limit` (with `retryInMs` for a rate limit that allows none).
 */
export function groupRoom(
  config: Pick<GroupConfig, 'groupConcurrency' | 'rateLimit'>,
  limit: number,
  live: number,
  log: RateLog,
  now: number,
): { limit: number; held?: { limit: 'group_concurrency' | 'rate_limit'; retryInMs?: number } } {
  let room = limit;
  let held: { limit: 'group_concurrency' | 'rate_limit'; retryInMs?: number } | undefined;
  if (config.groupConcurrency !== null && config.groupConcurrency - live < room) {
    room = Math.max(0, config.groupConcurrency - live);
    held = { limit: 'group_concurrency' };
  }
  if (config.rateLimit !== null) {
    const rate = rateRoom(log, now, config.rateLimit);
    if (rate.room < room) {
      room = rate.room;
      held = room === 0 ? { limit: 'rate_limit', retryInMs: rate.retryInMs } : { limit: 'rate_limit' };
    }
  }
  return held ? { limit: room, held } : { limit: room };
}

/**
 * The time a claim of a rate-limited group is judged at and its leases stamped
 * with: the store's now, but never before the newest start in the log. Claims take
 * turns on the group, and a claim's now is read before its turn: one that read an
 * earlier now than the claim before it must not count the window from there (it
 * would drop starts that claim still counts, and let more than max through).
 */
export function rateNow(log: RateLog, now: number): number {
  return log.length >= 2 ? Math.max(now, log[log.length - 2]) : now;
}
