// `npm run bench -- scale <memory|sqlite|postgres|redis> [--events N]`: issue 10's
// "flat cost over time", measured. Hot-path figures are taken side by side with
// and without a big backlog, with and without dead letters, with and without a
// trim running; each pair ends in an acceptance line (`op: flat`). Steps live
// in bench/scale/.
//
// Fairness on a shared machine: the two sides of a pair are measured in
// alternation (two groups of one stream, or two streams, round after round),
// so both see the same load from whatever else runs; every consume figure is a
// median of fresh-Consumer windows of the same size (10k); and the store's
// housekeeping (PostgreSQL VACUUM ANALYZE, see target.ts) is brought up to date
// before each round, so the sides differ by backlog, dead letters or a trim,
// not by upkeep.
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import type { Rheo } from '../lib';
import { round } from './harness';
import { appendClaimAck } from './scale/claims';
import { consume, interleavedRates, overallRate, windowRate } from './scale/consume';
import { makeDeadLetters } from './scale/dead-letters';
import { memoryMb } from './scale/heap';
import { load, tenantPayload } from './scale/load';
import { parseOptions, type ScaleOptions, short, USAGE } from './scale/options';
import { appendVsPgBoss } from './scale/peer';
import { queryPages } from './scale/query';
import { errorMessage, progress, Report } from './scale/report';
import { PG_URL } from './pg-schema';
import { openTarget } from './scale/target';
import { claimDuringTrim } from './scale/trim';

const PARTITIONS = 4;
/** pg-boss comparison size: the postgres bench's N. */
const PEER_EVENTS = 20_000;
const WARMUP_EVENTS = 20_000;
/** Each consume figure is the median of this many windows, each with a fresh Consumer. */
const ROUNDS = 5;

/** Bring the store's housekeeping up to date (a no-op but on PostgreSQL). */
type Maintain = () => Promise<void>;

interface Step {
  rheo: Rheo;
  report: Report;
  o: ScaleOptions;
  maintain: Maintain;
}

export async function main(args: string[] = process.argv.slice(3)): Promise<void> {
  let o: ScaleOptions;
  try {
    o = parseOptions(args);
  } catch (err) {
    console.error(`${errorMessage(err)}\n${USAGE}`);
    process.exitCode = 2;
    return;
  }
  const report = new Report(o.backend);
  const started = performance.now();
  const target = await openTarget(o.backend);
  // A run takes minutes and is often cut short: an interrupted one still drops its schema, keys or file.
  const interrupted = (signal: NodeJS.Signals) => {
    progress(`${signal}: dropping the store`);
    void target.dispose().finally(() => process.exit(130));
  };
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);
  try {
    const { rheo } = target;
    await rheo.init();
    // Other processes on the machine move every figure: say how busy it was.
    const store = await target.describe();
    const { events, deadLetters, samples, backlog } = o;
    report.emit('config', { events, deadLetters, samples, backlog, partitions: PARTITIONS, loadAverage1m: round(loadavg()[0]), ...store });
    const step: Step = { rheo, report, o, maintain: () => target.maintain() };
    await warmUp(rheo);
    await step.maintain();
    if (o.backend === 'postgres') await peer(step);
    await freshStore(step);
    await deadLetterPair(step);
    await bigHistory(step);
  } finally {
    process.off('SIGINT', interrupted);
    process.off('SIGTERM', interrupted);
    progress('dropping the store');
    await target.dispose().catch((err) => progress(`cleanup failed: ${errorMessage(err)}`));
    const totalMs = performance.now() - started;
    report.emit('total', { ms: Math.round(totalMs) });
    report.printSummary(totalMs);
  }
}

async function stream(rheo: Rheo, name: string, groups = ['g']): Promise<void> {
  await rheo.createStream(name, { partitions: PARTITIONS });
  for (const group of groups) await rheo.createGroup(name, group);
}

/** JIT, connection pools and statement caches warm before the first figure. */
async function warmUp(rheo: Rheo): Promise<void> {
  progress('warming up');
  await stream(rheo, 'warmup');
  await load(rheo, 'warmup', WARMUP_EVENTS);
  await consume(rheo, 'warmup', 'g', WARMUP_EVENTS, { window: WARMUP_EVENTS, caughtUp: true });
  await appendClaimAck(rheo, 'warmup', ['g'], 50);
}

/** PostgreSQL: appendBatch against pg-boss's insert, 1000 rows a call each. */
async function peer({ rheo, report }: Step): Promise<void> {
  progress(`appendBatch vs pg-boss insert, ${PEER_EVENTS} events each`);
  const r = await report.step('append', { events: PEER_EVENTS }, () => appendVsPgBoss(rheo, PG_URL, PEER_EVENTS));
  if (!r) return;
  report.emit('append', { events: PEER_EVENTS, batch: 1000, eventsPerSec: r.ours, rounds: r.oursRounds });
  report.emit(
    'append',
    { peer: true, events: PEER_EVENTS, eventsPerSec: r.pgBoss, rounds: r.pgBossRounds, oursPerPeer: round(r.ours / r.pgBoss) },
    'pg-boss',
  );
  report.flat('appendBatch vs pg-boss insert', { ratio: round(r.ours / r.pgBoss) }, '>=', 1.5);
}

/**
 * The 10k-backlog consume rate on a store that holds little else. Informative:
 * the acceptance pair is taken later, beside the big backlog, in alternation.
 */
async function freshStore({ rheo, report, o, maintain }: Step): Promise<void> {
  progress(`consume, ${o.backlog} backlog, fresh store`);
  const r = await report.step('consume', { backlog: o.backlog, store: 'fresh' }, async () => {
    await stream(rheo, 'backlog');
    const [only] = await interleavedRates(rheo, [{ stream: 'backlog', group: 'g', caughtUp: true }], o.backlog, ROUNDS, async () => {
      await load(rheo, 'backlog', o.backlog);
      await maintain();
    });
    return only;
  });
  if (r) report.emit('consume', { backlog: o.backlog, store: 'fresh', events: o.backlog, ...r });
}

/**
 * Two groups of one stream: `dirty` dead-letters a flood of events, `clean` acks
 * the same ones; then their hot paths are measured in alternation. Then the
 * flood is purged.
 */
async function deadLetterPair({ rheo, report, o, maintain }: Step): Promise<void> {
  const n = short(o.deadLetters);
  await stream(rheo, 'dead', ['clean', 'dirty']);
  progress(`making ${o.deadLetters} dead letters`);
  const made = await report.step('dead-letter', { deadLetters: o.deadLetters }, () =>
    makeDeadLetters(rheo, 'dead', { dirty: 'dirty', clean: 'clean' }, o.deadLetters),
  );
  if (!made) return;
  const info = await rheo.groupInfo('dead', 'dirty');
  report.emit('dead-letter', { deadLetters: o.deadLetters, ...made, groupInfoDeadLetters: info.deadLetters });

  progress(`append+claim+ack, 0 vs ${o.deadLetters} dead letters`);
  await maintain();
  const latency = await report.step('append-claim-ack', { deadLetters: o.deadLetters }, () =>
    appendClaimAck(rheo, 'dead', ['clean', 'dirty'], o.samples),
  );
  if (latency) {
    const [clean, dirty] = latency;
    report.emit('append-claim-ack', { deadLetters: 0, samples: o.samples, ...clean });
    report.emit('append-claim-ack', { deadLetters: o.deadLetters, samples: o.samples, ...dirty });
    // A ratio of speeds (p50 at 0 / p50 with them), so >= 0.8 reads as the rates do.
    report.flat(`append+claim+ack p50 speed, ${n} dead letters vs 0`, { ratio: round(clean.p50Ms / dirty.p50Ms) }, '>=', 0.8);
  }

  progress(`consume, 0 vs ${o.deadLetters} dead letters`);
  const groups = ['clean', 'dirty'].map((group) => ({ stream: 'dead', group, caughtUp: true }));
  const rates = await report.step('consume', { deadLetters: o.deadLetters }, () =>
    interleavedRates(rheo, groups, o.backlog, ROUNDS, async () => {
      await load(rheo, 'dead', o.backlog);
      await maintain();
    }),
  );
  if (rates) {
    const [clean, dirty] = rates;
    report.emit('consume', { deadLetters: 0, events: o.backlog, ...clean });
    report.emit('consume', { deadLetters: o.deadLetters, events: o.backlog, ...dirty });
    report.flat(`consume, ${n} dead letters vs 0`, { ratio: round(dirty.eventsPerSec / clean.eventsPerSec) }, '>=', 0.8);
  }

  progress(`purging ${o.deadLetters} dead letters`);
  const t0 = performance.now();
  const purged = await report.step('purge-dead-letters', { deadLetters: o.deadLetters }, () =>
    rheo.purgeDeadLetters('dead', 'dirty', { all: true }),
  );
  if (purged === undefined) return;
  const ms = Math.round(performance.now() - t0);
  const after = await rheo.groupInfo('dead', 'dirty');
  report.emit('purge-dead-letters', { purged, ms, groupInfoDeadLetters: after.deadLetters });
}

/** The big stream: loaded once, then queried, consumed (RSS around it) and trimmed while claims go on. */
async function bigHistory(step: Step): Promise<void> {
  const { rheo, report, o, maintain } = step;
  const n = short(o.events);
  progress(`loading ${o.events} events`);
  await stream(rheo, 'big');
  const loaded = await report.step('load', { events: o.events }, () =>
    load(rheo, 'big', o.events, { payloadOf: tenantPayload, label: 'load' }),
  );
  if (!loaded) return;
  report.emit('load', { events: o.events, batch: 1000, ms: Math.round(loaded.ms), eventsPerSec: loaded.eventsPerSec });
  await maintain();

  progress(`filtered query pages at ${o.events} events`);
  const q = await report.step('query', { history: o.events }, () => queryPages(rheo, 'big', o.events));
  if (q) {
    report.emit('query', { history: o.events, limit: 50, filter: 'payload.tenant, 1 in 1000', ...q });
    if (o.backend === 'postgres' || o.backend === 'sqlite') {
      report.flat(`filtered query page p50 at ${n} events, ms`, { value: q.p50Ms }, '<=', 50);
    }
  }

  progress(`consuming ${o.events} events`);
  const before = memoryMb();
  const c = await report.step('consume', { backlog: o.events }, () => consumeBig(step));
  const after = memoryMb();
  if (c) {
    const { small, big } = c;
    report.emit('consume', { backlog: o.backlog, store: `beside ${n}`, events: o.backlog, ...small });
    report.emit('consume', { backlog: o.events, events: o.backlog, ...big });
    report.emit('rss', {
      events: o.events,
      beforeMb: before.rssMb,
      afterMb: after.rssMb,
      heapBeforeMb: before.heapMb,
      heapAfterMb: after.heapMb,
      afterFullGc: before.collected && after.collected,
    });
    report.flat(`consume ${n} vs ${short(o.backlog)} backlog`, { ratio: round(big.eventsPerSec / small.eventsPerSec) }, '>=', 0.8);
    // Settled history must not slow the hot path either: a late steady window against an early one.
    if (big.earlyWindowEventsPerSec !== undefined && big.lateWindowEventsPerSec !== undefined) {
      const ratio = round(big.lateWindowEventsPerSec / big.earlyWindowEventsPerSec);
      report.flat(`consume, a late ${short(o.backlog)} window vs an early one of ${n}`, { ratio }, '>=', 0.8);
    }
  }

  await maintain();
  progress(`claims while trimming ${o.events} events`);
  const t = await report.step('claim-during-trim', { trimmed: o.events }, () => claimDuringTrim(rheo, 'big', 'g', o.samples));
  if (t) {
    report.emit('claim-during-trim', { ...t });
    report.flat(`max claim during a ${short(t.trimmed)}-event trim / claim p50`, { ratio: t.ratio }, '<=', 5);
  }
}

interface BigConsume {
  /** Median of its rounds: the figure set against the 10k backlog's. */
  eventsPerSec: number;
  rounds: number[];
  earlyWindowEventsPerSec?: number;
  lateWindowEventsPerSec?: number;
  overallEventsPerSec?: number;
  restMs?: number;
}

/**
 * Consume the whole big backlog. First `ROUNDS` windows of 10k, each with a
 * fresh Consumer, in alternation with rounds of a 10k backlog on another stream
 * (measured exactly alike): the acceptance pair. Then the rest in one Consumer,
 * whose steady windows early and late (the last but one: no tail) show whether
 * settled history slows consuming.
 */
async function consumeBig({ rheo, o, maintain }: Step): Promise<{ small: { eventsPerSec: number; rounds: number[] }; big: BigConsume }> {
  const window = o.backlog;
  const rounds = Math.max(1, Math.min(ROUNDS, Math.floor(o.events / window) - 1));
  const targets = [
    { stream: 'backlog', group: 'g', caughtUp: true },
    { stream: 'big', group: 'g', caughtUp: false },
  ];
  const [small, first] = await interleavedRates(rheo, targets, window, rounds, async () => {
    await load(rheo, 'backlog', window);
    await maintain();
  });
  const rest = o.events - rounds * window;
  if (rest === 0) return { small, big: first };
  const run = await consume(rheo, 'big', 'g', rest, { window, caughtUp: true, label: 'consume' });
  const windows = Math.floor(rest / window);
  const steady = windows >= 3 ? { earlyWindowEventsPerSec: windowRate(run, 2), lateWindowEventsPerSec: windowRate(run, windows - 1) } : {};
  return { small, big: { ...first, ...steady, overallEventsPerSec: overallRate(run), restMs: Math.round(run.end - run.marks[0]) } };
}
