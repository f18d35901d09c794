// Consuming through the runtime Consumer, the way the other benches do (no-op
// handler, maxDemand 100, concurrency 16), timed per window of `window` settled
// events so a 10k and a 1M backlog give comparable figures.
import { performance } from 'node:perf_hooks';
import { Consumer, type Rheo } from '../../lib';
import { rate } from '../harness';
import { progress } from './report';

export const GROUP_OPTIONS = { maxDemand: 100, concurrency: 16, pollMs: 50 } as const;

/** No settle for this long means the run is stuck (a backend bug), not slow. */
const STALL_MS = 120_000;

export interface ConsumeRun {
  window: number;
  total: number;
  /** `marks[k]`: when the `k * window`-th event settled; `marks[0]`: the Consumer's start. */
  marks: number[];
  /** When the last (`total`-th) event settled. */
  end: number;
  settleErrors: number;
}

/** Events/s over the `k`-th window (1-based): 1 includes the Consumer's start-up, the others are steady state. */
export function windowRate(run: ConsumeRun, k: number): number {
  return rate(run.window, run.marks[k] - run.marks[k - 1]);
}

export function overallRate(run: ConsumeRun): number {
  return rate(run.total, run.end - run.marks[0]);
}

/**
 * Consume `total` events of a waiting backlog with a fresh Consumer and a no-op
 * handler, then drain it (prefetched leases go back). With `caughtUp`, the
 * group's lag is awaited to be 0 afterwards (outside the figures), so the next
 * step finds it at the head.
 */
export async function consume(
  rheo: Rheo,
  stream: string,
  group: string,
  total: number,
  options: { window: number; caughtUp: boolean; label?: string },
): Promise<ConsumeRun> {
  const { window, label } = options;
  const run: ConsumeRun = { window, total, marks: [], end: 0, settleErrors: 0 };
  let settled = 0;
  let fetchErrors = 0;
  let onAll!: () => void;
  const all = new Promise<void>((r) => (onAll = r));
  const g = new Consumer(rheo, { stream, group, ...GROUP_OPTIONS }, async () => undefined);
  const progressEvery = Math.max(window, Math.ceil(total / 10 / window) * window);
  g.on('settled', () => {
    settled++;
    if (settled % window === 0) run.marks[settled / window] = performance.now();
    if (label && settled % progressEvery === 0 && settled < total) {
      progress(`${label}: ${settled.toLocaleString('en-US')} / ${total.toLocaleString('en-US')}`);
    }
    if (settled === total) {
      run.end = performance.now();
      onAll();
    }
  });
  g.on('settle_error', () => run.settleErrors++);
  g.on('fetch_error', (error) => {
    if (fetchErrors++ < 5) progress(`fetch error: ${error.message}`);
  });
  let lastSeen = 0;
  let stalled!: (err: Error) => void;
  const stall = new Promise<never>((_, reject) => (stalled = reject));
  stall.catch(() => undefined); // raced below; a stall between two races must not crash the process
  const watchdog = setInterval(() => {
    if (settled === lastSeen) stalled(new Error(`no event settled for ${STALL_MS / 1000} s (${settled} of ${total})`));
    lastSeen = settled;
  }, STALL_MS);
  try {
    run.marks[0] = performance.now();
    g.start();
    await Promise.race([all, stall]);
    await g.drain(5000);
    while (options.caughtUp && (await rheo.lag(stream, group)).lag !== 0) {
      await Promise.race([new Promise((r) => setTimeout(r, 5)), stall]);
    }
    return run;
  } finally {
    clearInterval(watchdog);
    await g.drain(5000);
  }
}

/** One consumer measured by {@link interleavedRates}. */
export interface RateTarget {
  stream: string;
  group: string;
  /** Wait for the group's lag to reach 0 after each round (its backlog is exactly one window). */
  caughtUp: boolean;
}

/**
 * The consume rate of each target over one window of `window` events, `rounds`
 * times: each round first calls `fill` (which appends the backlogs and brings
 * the store's housekeeping up to date), then a fresh Consumer per target consumes
 * one window, the targets' order rotating from round to round. Targets compared
 * with each other are thus measured in the same minutes, under the same load
 * from whatever else runs on the machine; each figure is the median of its rounds.
 */
export async function interleavedRates(
  rheo: Rheo,
  targets: RateTarget[],
  window: number,
  rounds: number,
  fill: () => Promise<unknown>,
): Promise<Array<{ eventsPerSec: number; rounds: number[] }>> {
  const rates: number[][] = targets.map(() => []);
  for (let r = 0; r < rounds; r++) {
    await fill();
    for (let k = 0; k < targets.length; k++) {
      const i = (r + k) % targets.length;
      const { stream, group, caughtUp } = targets[i];
      rates[i].push(windowRate(await consume(rheo, stream, group, window, { window, caughtUp }), 1));
    }
  }
  return rates.map((own) => ({ eventsPerSec: median(own), rounds: own }));
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)];
}
