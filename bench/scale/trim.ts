// Claim latency while a trim deletes a finished history: the production picture
// of a background trim. The group is caught up (every old event acked) and keeps
// claiming fresh events of the same stream while the trim removes the prefix.
import { performance } from 'node:perf_hooks';
import type { Rheo, TrimResult } from '../../lib';
import { round } from '../harness';
import { claimOnce, latencies } from './claims';

/** Events each partition keeps: the trim takes (nearly) the whole history. */
const KEEP = 100;
/** A trim still running after this is reported as a failure rather than waited for. */
const MAX_TRIM_MS = 600_000;

export interface TrimFigures {
  trimmed: number;
  claimP50Ms: number;
  baselineP99Ms: number;
  baselineMaxMs: number;
  duringP50Ms: number;
  duringP99Ms: number;
  maxClaimMs: number;
  ratio: number;
  /** maxClaimMs over the largest claim without a trim: the noise floor (a GC pause, a neighbour). */
  maxVsBaselineMax: number;
  maxAppendMs: number;
  samplesDuring: number;
  trimMs: number;
  partitions: TrimResult['partitions'];
}

export async function claimDuringTrim(rheo: Rheo, stream: string, group: string, samples: number): Promise<TrimFigures> {
  const baseline: number[] = [];
  for (let i = 0; i < 20 + samples; i++) {
    await new Promise((r) => setImmediate(r)); // as in the loop during the trim
    const s = await claimOnce(rheo, stream, group);
    if (i >= 20) baseline.push(s.claimMs);
  }
  const base = latencies(baseline);

  await rheo.setRetention(stream, { maxEvents: KEEP });
  // Set by the trim's callbacks while the loop below claims (a holder: TypeScript does not see closure writes).
  const trim: { outcome?: { result: TrimResult } | { error: unknown } } = {};
  const t0 = performance.now();
  const trimming = rheo.trim(stream).then(
    (result) => (trim.outcome = { result }),
    (error: unknown) => (trim.outcome = { error }),
  );
  const during: number[] = [];
  let maxAppendMs = 0;
  // At least one claim, even if the trim is done before the first one ends.
  do {
    // A macrotask turn between claims, as real I/O would give: the memory
    // backend answers in microtasks only, and would otherwise starve a trim that
    // yields to the event loop between chunks.
    await new Promise((r) => setImmediate(r));
    if (performance.now() - t0 > MAX_TRIM_MS) throw new Error(`the trim had not returned after ${MAX_TRIM_MS / 1000} s`);
    const s = await claimOnce(rheo, stream, group);
    during.push(s.claimMs);
    maxAppendMs = Math.max(maxAppendMs, s.appendMs);
  } while (!trim.outcome);
  await trimming;
  const trimMs = performance.now() - t0;
  const outcome = trim.outcome;
  if ('error' in outcome) throw outcome.error;

  // The trim must have left the stream readable from after its point.
  const p0 = outcome.result.partitions.find((p) => p.partition === 0);
  const [head] = await rheo.read(stream, { partition: 0, afterSequence: 0, limit: 1 });
  if (p0 && head && head.sequence <= p0.trimmedTo) throw new Error(`read returned sequence ${head.sequence}, trimmed to ${p0.trimmedTo}`);

  const whileTrimming = latencies(during);
  const max = whileTrimming.maxMs;
  return {
    trimmed: outcome.result.removed,
    claimP50Ms: base.p50Ms,
    baselineP99Ms: base.p99Ms,
    baselineMaxMs: base.maxMs,
    duringP50Ms: whileTrimming.p50Ms,
    duringP99Ms: whileTrimming.p99Ms,
    maxClaimMs: max,
    ratio: round(max / base.p50Ms),
    maxVsBaselineMax: round(max / base.maxMs),
    maxAppendMs: round(maxAppendMs),
    samplesDuring: during.length,
    trimMs: Math.round(trimMs),
    partitions: outcome.result.partitions,
  };
}
