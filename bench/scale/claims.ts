// The hot path one event at a time: append it, claim it (fetch limit 1), ack it.
import { performance } from 'node:perf_hooks';
import type { Rheo } from '../../lib';
import { payload } from '../harness';

/** Fetches that come back empty before one event is found: past this the group is not caught up, or the backend lost it. */
const MAX_EMPTY_FETCHES = 1000;

export interface ClaimSample {
  /** The append alone. */
  appendMs: number;
  /** fetch (limit 1) + ack of the event just appended. */
  claimMs: number;
}

let seq = 0;

/** Fetch (limit 1) and ack the one event waiting for a caught-up group. */
async function fetchAck(rheo: Rheo, stream: string, group: string): Promise<void> {
  for (let empty = 0; ; empty++) {
    const [lease] = await rheo.fetch(stream, group, { limit: 1 });
    if (lease) return rheo.ack(lease);
    if (empty === MAX_EMPTY_FETCHES) throw new Error(`${stream}/${group}: the appended event was not claimable after ${empty} fetches`);
  }
}

/**
 * One sample on caught-up groups: append an event, then fetch (limit 1) + ack it
 * for `group`, timed apart from the append; then, untimed, for each of `others`
 * (groups of the same stream kept caught up beside it).
 */
export async function claimOnce(rheo: Rheo, stream: string, group: string, others: string[] = []): Promise<ClaimSample> {
  const t0 = performance.now();
  await rheo.append(stream, { type: 'probe', key: `probe${seq % 64}`, payload: payload(seq++) });
  const t1 = performance.now();
  await fetchAck(rheo, stream, group);
  const sample = { appendMs: t1 - t0, claimMs: performance.now() - t1 };
  for (const other of others) await fetchAck(rheo, stream, other);
  return sample;
}

export interface LatencyFigures {
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

/** Nearest-rank quantiles, to the microsecond: the memory backend's figures are a few µs, and ratios of them must not be rounding. */
export function latencies(values: number[]): LatencyFigures {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (p: number) => {
    if (sorted.length === 0) return Number.NaN;
    const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1));
    return Math.round(sorted[rank] * 1000) / 1000;
  };
  return { p50Ms: at(0.5), p99Ms: at(0.99), maxMs: at(1) };
}

/**
 * append+claim+ack latency of each of `groups` (all of one stream), `samples`
 * each after `warmup` unrecorded rounds: the whole round trip of one event
 * through the hot path. Samples alternate between the groups, so groups
 * compared with each other are measured under the same load.
 */
export async function appendClaimAck(
  rheo: Rheo,
  stream: string,
  groups: string[],
  samples: number,
  warmup = 20,
): Promise<LatencyFigures[]> {
  const values: number[][] = groups.map(() => []);
  for (let i = 0; i < (warmup + samples) * groups.length; i++) {
    const k = i % groups.length;
    const s = await claimOnce(
      rheo,
      stream,
      groups[k],
      groups.filter((_, j) => j !== k),
    );
    if (i >= warmup * groups.length) values[k].push(s.appendMs + s.claimMs);
  }
  return values.map(latencies);
}
