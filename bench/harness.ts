// Shared pieces of the benchmarks: payloads, the three measured operations
// (append, consume through a Consumer, append-to-handler latency), and output.
// Figures are relative to this machine; each run prints what it measured.
import { cpus, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { Consumer, type JsonValue, type Rheo } from '../lib';

/** One output line: a throughput figure or a latency figure. */
export type BenchLine =
  /** `ratio` = ours / the raw table's figure; `vsMinimal` = ours / the minimal queue's figure. */
  | {
      backend: string;
      op: string;
      events: number;
      eventsPerSec: number;
      ratio?: number;
      vsMinimal?: number;
      raw?: true;
      /** With `--rounds`: how many paired rounds the figures are the medians of, each round's ours / minimal, and the warm-up round's (not counted). */
      rounds?: number;
      vsMinimalByRound?: number[];
      warmUpVsMinimal?: number;
    }
  /** The minimal hand-written durable queue on the same store (bench/minimal/), same workload, same run. */
  | { backend: string; op: string; minimal: true; events: number; eventsPerSec: number }
  /** A peer library doing the same work in the same run; `oursPerPeer` = our figure / theirs. */
  | { backend: string; op: string; peer: true; events: number; eventsPerSec: number; oursPerPeer: number }
  /**
   * Append→handler latency. `idle`: one event at a time into an idle Consumer. `backlog`:
   * probes on a stream of their own while a backlog of `backlog` events drains
   * through another Consumer on the same store; `events` = probes timed.
   */
  | { backend: string; op: 'latency'; load: 'idle' | 'backlog'; events: number; p50Ms: number; p99Ms: number; backlog?: number };

const lines: BenchLine[] = [];

/** A ~100-byte JSON payload, different per `i`. */
export function payload(i: number): JsonValue {
  return { id: i, sym: 'USD', tenor: '10Y', bid: 1.2345 + (i % 100) / 1e4, ask: 1.2355 + (i % 100) / 1e4, ts: 1767225600000 + i };
}

/** Run `fn` and measure it. */
export async function timeIt<T>(fn: () => Promise<T>): Promise<{ ms: number; result: T }> {
  const t0 = performance.now();
  const result = await fn();
  return { ms: performance.now() - t0, result };
}

/** Events per second of `n` events over `ms`. */
export function rate(n: number, ms: number): number {
  return Math.round((n / ms) * 1000);
}

/** Append `n` events in batches of `batchSize`, one batch after another. */
export async function benchAppend(rheo: Rheo, stream: string, n: number, batchSize: number): Promise<{ ms: number; eventsPerSec: number }> {
  const { ms } = await timeIt(async () => {
    for (let i = 0; i < n; i += batchSize) {
      const batch = [];
      for (let j = i; j < Math.min(n, i + batchSize); j++) batch.push({ type: 'quote', key: `k${j % 64}`, payload: payload(j) });
      await rheo.appendBatch(stream, batch);
    }
  });
  return { ms, eventsPerSec: rate(n, ms) };
}

/**
 * Consume `n` waiting events through a Consumer with a no-op handler (a batch
 * handler when `batch` is given); measured until the group's lag is 0.
 */
export async function benchConsume(
  rheo: Rheo,
  stream: string,
  group: string,
  n: number,
  options: { maxDemand?: number; concurrency?: number; pollMs?: number; batch?: { size: number; maxWaitMs: number } },
): Promise<{ ms: number; eventsPerSec: number }> {
  let settled = 0;
  let onAll!: () => void;
  const all = new Promise<void>((r) => (onAll = r));
  const { batch, ...single } = options;
  const run = { stream, group, pollMs: 50, ...single };
  const g = batch ? new Consumer(rheo, { ...run, batch }, async () => undefined) : new Consumer(rheo, run, async () => undefined);
  g.on('settled', () => {
    if (++settled === n) onAll();
  });
  g.on('settle_error', ({ error }) => console.error('settle error:', error.message));
  g.on('fetch_error', (error) => console.error('fetch error:', error.message));
  const { ms } = await timeIt(async () => {
    g.start();
    await all;
    for (;;) {
      const lag = await rheo.lag(stream, group);
      if (lag.lag === 0) break;
      await new Promise((r) => setTimeout(r, 1));
    }
  });
  await g.drain(5000);
  return { ms, eventsPerSec: rate(n, ms) };
}

/**
 * Append-to-handler latency through a Consumer with a long `pollMs` (so wake-ups,
 * not polls, carry it): one event at a time, each appended once the Consumer is
 * idle again, `samples` times.
 */
export async function benchLatency(
  rheo: Rheo,
  stream: string,
  group: string,
  samples: number,
  options: { pollMs: number; gapMs?: number },
): Promise<{ p50Ms: number; p99Ms: number; maxMs: number }> {
  const sent = new Map<number, number>();
  const latencies: number[] = [];
  let handled: (() => void) | null = null;
  const g = new Consumer(
    rheo,
    { stream, group, pollMs: options.pollMs, leaseMs: Math.max(30_000, options.pollMs * 2), maxDemand: 1, concurrency: 1 },
    async (lease) => {
      const at = performance.now();
      const i = (lease.event.payload as { id: number }).id;
      const t0 = sent.get(i);
      if (t0 !== undefined) latencies.push(at - t0);
      handled?.();
    },
  );
  g.start();
  for (let i = 0; i < samples; i++) {
    // Let the Consumer settle the last event and go idle before the next append.
    await new Promise((r) => setTimeout(r, options.gapMs ?? 3));
    const done = new Promise<void>((r) => (handled = r));
    sent.set(i, performance.now());
    await rheo.append(stream, { type: 'quote', payload: payload(i) });
    await done;
  }
  await g.drain(5000);
  return { p50Ms: percentile(latencies, 0.5), p99Ms: percentile(latencies, 0.99), maxMs: percentile(latencies, 1) };
}

/** The `p` quantile (0..1) of `values`, nearest rank (the median of an even count is its lower middle), rounded to 0.01. */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1));
  return Math.round(sorted[rank] * 100) / 100;
}

/** A ratio rounded to 0.01. */
export function round(x: number): number {
  return Math.round(x * 100) / 100;
}

/** Events per second of the raw driver, the minimal queue and ours, measured one after another in one round. */
export interface Trio {
  raw: number;
  minimal: number;
  ours: number;
}

/** One round of a store bench: append, then consume (of what each appended). */
export interface RoundFigures {
  append: Trio;
  consume: Trio;
}

/** `--rounds N` among a bench's arguments (default 3). */
export function roundsOf(args: readonly string[]): number {
  const at = args.indexOf('--rounds');
  if (at < 0) return 3;
  const n = Number(args[at + 1]);
  if (!Number.isInteger(n) || n < 1 || n > 50) throw new Error('--rounds takes a whole number from 1 to 50');
  return n;
}

/**
 * Run `runRound` once as a warm-up, then `n` times (round `k` works on streams,
 * tables or keys of its own), then emit, for append and consume, each line's
 * median over the `n` rounds, with `ratio` and `vsMinimal` the medians of the
 * per-round ratios. A round puts ours beside the raw driver and the minimal queue
 * measured seconds apart, so a burst of load elsewhere on the machine skews one
 * pair, not the figure: on the shared 2-core machine one run of each swung a ratio
 * by a third. The warm-up round (its ratio is printed, not counted) carries the
 * JIT's first compilations, which cost ours, a library, more than a minimal queue
 * of forty lines: a service runs warm. Returns the medians.
 */
export async function emitRounds(
  backend: string,
  events: number,
  n: number,
  runRound: (k: number) => Promise<RoundFigures>,
): Promise<RoundFigures> {
  const warm = await runRound(0);
  const all: RoundFigures[] = [];
  for (let k = 1; k <= n; k++) all.push(await runRound(k));
  const medians = {} as RoundFigures;
  for (const op of ['append', 'consume'] as const) {
    const trios = all.map((r) => r[op]);
    const m: Trio = {
      raw: Math.round(
        percentile(
          trios.map((t) => t.raw),
          0.5,
        ),
      ),
      minimal: Math.round(
        percentile(
          trios.map((t) => t.minimal),
          0.5,
        ),
      ),
      ours: Math.round(
        percentile(
          trios.map((t) => t.ours),
          0.5,
        ),
      ),
    };
    medians[op] = m;
    const byRound = trios.map((t) => round(t.ours / t.minimal));
    emit({ backend, op, raw: true, events, eventsPerSec: m.raw, rounds: n });
    emit({ backend, op, minimal: true, events, eventsPerSec: m.minimal });
    emit({
      backend,
      op,
      events,
      eventsPerSec: m.ours,
      ratio: round(
        percentile(
          trios.map((t) => t.ours / t.raw),
          0.5,
        ),
      ),
      vsMinimal: round(percentile(byRound, 0.5)),
      rounds: n,
      vsMinimalByRound: byRound,
      warmUpVsMinimal: round(warm[op].ours / warm[op].minimal),
    });
  }
  return medians;
}

/** Emit a peer's figure for `op`, with ours / theirs. */
export function emitPeer(peer: string, op: string, events: number, theirs: number, ours: number): void {
  emit({ backend: peer, op, peer: true, events, eventsPerSec: theirs, oursPerPeer: round(ours / theirs) });
}

/**
 * Append-to-handler latency under load: `backlog` events are appended to a
 * stream of their own, then drained through a Consumer (maxDemand 100, concurrency
 * 16, no-op handler); while they drain, a probe event is appended every
 * `probeEveryMs` to another stream, consumed by its own Consumer (`pollMs`, so
 * wake-ups carry it), and timed from before its append to its handler. The
 * probes do not queue behind the backlog (that would time the backlog's
 * throughput): they time a wake-up, a claim and a dispatch while the store and
 * the process are busy with the drain. Probing stops when the backlog is drained.
 */
export async function benchLatencyUnderLoad(
  rheo: Rheo,
  options: { backlog: number; batch: number; partitions: number; pollMs: number; probeEveryMs: number },
): Promise<{ probes: number; p50Ms: number; p99Ms: number; maxMs: number; drainMs: number }> {
  const load = 'latency-backlog';
  const probe = 'latency-probe';
  await rheo.createStream(load, { partitions: options.partitions });
  await rheo.createGroup(load, 'consumers');
  await rheo.createStream(probe);
  await rheo.createGroup(probe, 'consumers');
  await benchAppend(rheo, load, options.backlog, options.batch);

  const sent = new Map<number, number>();
  const latencies: number[] = [];
  let allHandled: (() => void) | null = null;
  const probes = new Consumer(
    rheo,
    {
      stream: probe,
      group: 'consumers',
      pollMs: options.pollMs,
      leaseMs: Math.max(30_000, options.pollMs * 2),
      maxDemand: 16,
      concurrency: 16,
    },
    async (lease) => {
      const at = performance.now();
      const t0 = sent.get((lease.event.payload as { id: number }).id);
      if (t0 !== undefined) latencies.push(at - t0);
      if (latencies.length === sent.size) allHandled?.();
    },
  );
  probes.start();
  await new Promise((r) => setTimeout(r, 50)); // the probe Consumer's first (empty) fetch, then idle

  let drained = false;
  let settled = 0;
  let onDrained!: () => void;
  const done = new Promise<void>((r) => (onDrained = r));
  const drain = new Consumer(
    rheo,
    { stream: load, group: 'consumers', maxDemand: 100, concurrency: 16, pollMs: 50 },
    async () => undefined,
  );
  drain.on('settled', () => {
    if (++settled === options.backlog) {
      drained = true;
      onDrained();
    }
  });
  drain.on('settle_error', ({ error }) => console.error('settle error:', error.message));
  drain.on('fetch_error', (error) => console.error('fetch error:', error.message));
  const t0 = performance.now();
  drain.start();
  for (let i = 0; !drained; i++) {
    const at = performance.now();
    sent.set(i, at);
    await rheo.append(probe, { type: 'probe', payload: payload(i) });
    const wait = at + options.probeEveryMs - performance.now();
    if (!drained) await Promise.race([done, new Promise((r) => setTimeout(r, Math.max(0, wait)))]);
  }
  const drainMs = performance.now() - t0;
  if (latencies.length < sent.size) {
    await Promise.race([new Promise<void>((r) => (allHandled = r)), new Promise((r) => setTimeout(r, 5000))]);
  }
  await drain.drain(5000);
  await probes.drain(5000);
  return {
    probes: latencies.length,
    p50Ms: percentile(latencies, 0.5),
    p99Ms: percentile(latencies, 0.99),
    maxMs: percentile(latencies, 1),
    drainMs: Math.round(drainMs),
  };
}

/**
 * The latency figures every bench ends with. Idle: 200 samples on a fresh
 * stream, pollMs 1000 (wake-ups carry it). Under load: probes every ~10 ms while
 * a backlog of `backlog` events (default 20,000, appended in batches of `batch`)
 * drains through a Consumer; see {@link benchLatencyUnderLoad}.
 */
export async function emitLatency(
  rheo: Rheo,
  backend: string,
  options: { backlog?: number; batch?: number; partitions?: number } = {},
): Promise<void> {
  await rheo.createStream('latency');
  await rheo.createGroup('latency', 'consumers');
  const samples = 200;
  const latency = await benchLatency(rheo, 'latency', 'consumers', samples, { pollMs: 1000 });
  emit({ backend, op: 'latency', load: 'idle', events: samples, p50Ms: latency.p50Ms, p99Ms: latency.p99Ms });
  const backlog = options.backlog ?? 20_000;
  const loaded = await benchLatencyUnderLoad(rheo, {
    backlog,
    batch: options.batch ?? 500,
    partitions: options.partitions ?? 1,
    pollMs: 1000,
    probeEveryMs: 10,
  });
  emit({ backend, op: 'latency', load: 'backlog', backlog, events: loaded.probes, p50Ms: loaded.p50Ms, p99Ms: loaded.p99Ms });
}

/** Print one figure as a JSON line and keep it for the table. */
export function emit(line: BenchLine): void {
  lines.push(line);
  console.log(JSON.stringify(line));
}

/** The figures emitted so far. */
export function emitted(): BenchLine[] {
  return [...lines];
}

/** A human-readable table of `figures`. */
export function printTable(figures: BenchLine[] = lines): void {
  const rows = figures.map((l) =>
    'p50Ms' in l
      ? [
          l.backend,
          l.load === 'backlog' ? `latency (${l.backlog} backlog)` : `latency (${l.load})`,
          String(l.events),
          `p50 ${l.p50Ms} ms / p99 ${l.p99Ms} ms`,
          '',
        ]
      : 'minimal' in l
        ? [l.backend, `${l.op} (minimal queue)`, String(l.events), `${l.eventsPerSec.toLocaleString('en-US')} events/s`, '']
        : 'peer' in l
          ? [
              l.backend,
              `${l.op} (peer)`,
              String(l.events),
              `${l.eventsPerSec.toLocaleString('en-US')} events/s`,
              `ours = ${l.oursPerPeer.toFixed(2)}x this peer`,
            ]
          : [
              l.backend,
              l.raw ? `${l.op} (raw driver)` : l.op,
              String(l.events),
              `${l.eventsPerSec.toLocaleString('en-US')} events/s`,
              [
                l.ratio === undefined ? '' : `${l.ratio.toFixed(2)} of raw`,
                l.vsMinimal === undefined ? '' : `${l.vsMinimal.toFixed(2)} of minimal`,
                l.vsMinimalByRound === undefined
                  ? ''
                  : `median of ${l.rounds} rounds: ${l.vsMinimalByRound.map((x) => x.toFixed(2)).join(' ')} (warm-up ${l.warmUpVsMinimal?.toFixed(2)})`,
              ]
                .filter(Boolean)
                .join(', '),
            ],
  );
  const head = ['backend', 'op', 'events', 'result', 'vs raw / minimal / peer'];
  const widths = head.map((h, c) => Math.max(h.length, ...rows.map((r) => r[c].length)));
  const fmt = (r: string[]) =>
    r
      .map((cell, c) => cell.padEnd(widths[c]))
      .join('  ')
      .trimEnd();
  console.log('');
  console.log(fmt(head));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const r of rows) console.log(fmt(r));
  // The figures are only comparable with the load they were taken under.
  console.log(
    `\n${cpus().length} CPUs, load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' / ')} (1/5/15 min), Node ${process.version}`,
  );
}
