// The flow checker's judgement (docs/adr/049-flow-control.md), kept apart from how the
// runs were recorded: every handler run of the flow suite wrote a start row before its
// work and an end row after it (flow-log.ts), each with its lease's claim time and
// expiry, its key and its place in the key's sequence, its process and consumer. From
// those rows and the times the parent SIGKILLed processes, this file finds
//   - per-key order inversions (a key's events must start in sequence order; an event
//     may run again only after a process that ran it was killed),
//   - per-key overlaps (two handlers of one key running at once),
//   - moments with more handlers running across the processes than a limit,
//   - windows of the store's claim clock with more claims than a rate limit,
//   - lost events (never ran to its end).
// A run cut by a SIGKILL has no end row: it ran until its process died. Its lease was
// live in the store until it expired, so a later run beside it is not a breach once the
// store's expiry had passed (the only overlap the store itself allows: it cannot know a
// holder died before its lease ends).

/** One row a handler run wrote. Times are epoch ms; `leasedAt` / `expiresAt` are the store's clock, `at` the process's. */
export interface RunRow {
  phase: 'start' | 'end';
  eventId: string;
  leaseId: string;
  key: string;
  /** The event's place among its key's events, from 0, in append order. */
  seq: number;
  /** The OS process (or in-process incarnation) that ran it. */
  pid: number;
  consumer: string;
  attempt: number;
  leasedAt: number;
  expiresAt: number;
  at: number;
}

/** A process the parent SIGKILLed, and when it was seen dead. */
export interface Death {
  pid: number;
  diedAt: number;
}

/** One handler run, its two rows joined. `end` is null for a run cut by a kill. */
export interface Run {
  eventId: string;
  leaseId: string;
  key: string;
  seq: number;
  pid: number;
  consumer: string;
  attempt: number;
  leasedAt: number;
  expiresAt: number;
  start: number;
  end: number | null;
  /** The run's process was SIGKILLed (at `diedAt`). */
  killed: boolean;
  diedAt: number | null;
}

/** Join start and end rows per lease. A lease runs its handler once. */
export function runsOf(rows: readonly RunRow[], deaths: readonly Death[]): { runs: Run[]; problems: string[] } {
  const died = new Map(deaths.map((d) => [d.pid, d.diedAt]));
  const byLease = new Map<string, Run>();
  const problems: string[] = [];
  for (const r of rows) {
    if (r.phase !== 'start') continue;
    if (byLease.has(r.leaseId)) problems.push(`lease ${r.leaseId} (event ${r.eventId}) started its handler twice`);
    const diedAt = died.get(r.pid) ?? null;
    byLease.set(r.leaseId, {
      eventId: r.eventId,
      leaseId: r.leaseId,
      key: r.key,
      seq: r.seq,
      pid: r.pid,
      consumer: r.consumer,
      attempt: r.attempt,
      leasedAt: r.leasedAt,
      expiresAt: r.expiresAt,
      start: r.at,
      end: null,
      killed: diedAt !== null,
      diedAt,
    });
  }
  for (const r of rows) {
    if (r.phase !== 'end') continue;
    const run = byLease.get(r.leaseId);
    if (!run) problems.push(`lease ${r.leaseId} (event ${r.eventId}) ended a handler it never started`);
    else run.end = r.at;
  }
  const runs = [...byLease.values()];
  for (const run of runs) {
    if (run.end === null && !run.killed)
      problems.push(`event ${run.eventId} (lease ${run.leaseId}, pid ${run.pid}): the handler never ended and its process was not killed`);
  }
  return { runs, problems };
}

/** When a run stopped running: its end, or its process's death. */
function stoppedAt(run: Run): number {
  return run.end ?? run.diedAt!;
}

/**
 * The store's allowance for a run beside `earlier`: its holder was SIGKILLed mid-run,
 * and `later` was claimed once the earlier lease had expired by the store's clock.
 */
function excused(earlier: Run, later: Run): boolean {
  return earlier.end === null && earlier.killed && later.leasedAt >= earlier.expiresAt;
}

function byStart(a: Run, b: Run): number {
  return a.start - b.start || a.leasedAt - b.leasedAt || a.seq - b.seq;
}

/** Runs per key, in start order. */
function perKey(runs: readonly Run[]): Map<string, Run[]> {
  const keys = new Map<string, Run[]>();
  for (const run of runs) {
    const list = keys.get(run.key);
    if (list) list.push(run);
    else keys.set(run.key, [run]);
  }
  for (const list of keys.values()) list.sort(byStart);
  return keys;
}

/**
 * A key's runs that start out of sequence order: a run of an earlier event than one
 * already started, or a second run of an event no killed process had run before.
 */
export function orderInversions(runs: readonly Run[]): string[] {
  const problems: string[] = [];
  for (const [key, list] of perKey(runs)) {
    let highest = -1;
    const ranByKilled = new Set<number>();
    const ran = new Set<number>();
    for (const run of list) {
      if (run.seq < highest) problems.push(`key ${key}: event #${run.seq} (${run.eventId}, pid ${run.pid}) started after #${highest}`);
      else if (ran.has(run.seq) && !ranByKilled.has(run.seq))
        problems.push(`key ${key}: event #${run.seq} (${run.eventId}, pid ${run.pid}) ran again though no process that ran it was killed`);
      highest = Math.max(highest, run.seq);
      ran.add(run.seq);
      if (run.killed) ranByKilled.add(run.seq);
    }
  }
  return problems;
}

/** Two handlers of one key running at once, beyond the store's allowance for a killed holder. */
export function keyOverlaps(runs: readonly Run[]): string[] {
  const problems: string[] = [];
  for (const [key, list] of perKey(runs)) {
    for (let i = 0; i < list.length; i++) {
      const a = list[i];
      const until = stoppedAt(a);
      for (let j = i + 1; j < list.length && list[j].start < until; j++) {
        const b = list[j];
        if (excused(a, b)) continue;
        problems.push(
          `key ${key}: #${b.seq} (pid ${b.pid}, started ${b.start}, leased ${b.leasedAt}) ran beside #${a.seq} (pid ${a.pid}, ${a.start}..${until}${a.end === null ? ' killed' : ''}, lease expiring ${a.expiresAt})`,
        );
      }
    }
  }
  return problems;
}

/**
 * The most handlers running at once across every process, a killed holder's run
 * counted until its process died or its lease expired, whichever came first.
 */
export function mostRunning(runs: readonly Run[]): { most: number; at: number } {
  const edges: Array<[number, number]> = [];
  for (const run of runs) {
    const until = run.end ?? Math.min(run.diedAt!, Math.max(run.start, run.expiresAt));
    edges.push([run.start, 1], [until, -1]);
  }
  // An end and a start at the same ms: the end first (the later run was claimed after the earlier settled).
  edges.sort((x, y) => x[0] - y[0] || x[1] - y[1]);
  let now = 0;
  let most = 0;
  let at = 0;
  for (const [time, d] of edges) {
    now += d;
    if (now > most) [most, at] = [now, time];
  }
  return { most, at };
}

/** The most of `times` in any span of `spanMs` ms (a sliding window: [t, t + spanMs) for each t). */
export function busiestWindow(times: readonly number[], spanMs: number): { most: number; from: number } {
  const sorted = [...times].sort((a, b) => a - b);
  let most = 0;
  let from = 0;
  for (let i = 0, j = 0; i < sorted.length; i++) {
    while (j < sorted.length && sorted[j] < sorted[i] + spanMs) j++;
    if (j - i > most) [most, from] = [j - i, sorted[i]];
  }
  return { most, from };
}

/** The claims of the runs in [from, from + spanMs), as `pid@leasedAt×count` per claim call, in claim time order: what a breach looked like. */
export function claimsIn(runs: readonly Run[], from: number, spanMs: number): string[] {
  const calls = new Map<string, { pid: number; at: number; n: number }>();
  for (const r of runs) {
    if (r.leasedAt < from || r.leasedAt >= from + spanMs) continue;
    const id = `${r.pid}@${r.leasedAt}`;
    const call = calls.get(id);
    if (call) call.n++;
    else calls.set(id, { pid: r.pid, at: r.leasedAt, n: 1 });
  }
  return [...calls.values()].sort((a, b) => a.at - b.at || a.pid - b.pid).map((c) => `${c.pid}@${c.at}×${c.n}`);
}

/** The claims of the runs, once per lease, by the store's clock. */
export function claimTimes(runs: readonly Run[]): number[] {
  return runs.map((r) => r.leasedAt);
}

/** Events of `expected` (key, seq) that never ran to their end. */
export function lostEvents(runs: readonly Run[], expected: ReadonlyArray<{ key: string; seq: number }>): string[] {
  const done = new Set(runs.filter((r) => r.end !== null).map((r) => `${r.key}#${r.seq}`));
  return expected.filter((e) => !done.has(`${e.key}#${e.seq}`)).map((e) => `${e.key}#${e.seq} never ran to its end`);
}
