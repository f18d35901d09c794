// The flow checker (test/support/flow-check.ts) on hand-written histories: each breach
// the multi-process flow suite looks for is found, and the one overlap the store
// allows (beside a SIGKILLed holder whose lease had expired) is not counted.
import {
  busiestWindow,
  claimTimes,
  keyOverlaps,
  lostEvents,
  mostRunning,
  orderInversions,
  type RunRow,
  runsOf,
} from '../support/flow-check';

let serial = 0;

/** A run of `key`#`seq` by `pid` from `start` to `end` (null: cut by a kill), leased at `leasedAt` until `expiresAt`. */
function run(
  key: string,
  seq: number,
  pid: number,
  start: number,
  end: number | null,
  lease: { at?: number; until?: number } = {},
): RunRow[] {
  const leaseId = `l${++serial}`;
  const base = {
    eventId: `${key}-${seq}`,
    leaseId,
    key,
    seq,
    pid,
    consumer: `c${pid}`,
    attempt: 1,
    leasedAt: lease.at ?? start,
    expiresAt: lease.until ?? start + 2000,
  };
  const rows: RunRow[] = [{ ...base, phase: 'start', at: start }];
  if (end !== null) rows.push({ ...base, phase: 'end', at: end });
  return rows;
}

describe('flow checker', () => {
  it('joins start and end rows, and names a run that never ended in a process that was not killed', () => {
    const { runs, problems } = runsOf([...run('a', 0, 1, 0, 10), ...run('a', 1, 2, 20, null)], []);
    expect(runs.map((r) => [r.seq, r.end])).toEqual([
      [0, 10],
      [1, null],
    ]);
    expect(problems).toEqual([expect.stringContaining('never ended and its process was not killed')]);
    expect(runsOf(run('a', 1, 2, 20, null), [{ pid: 2, diedAt: 30 }]).problems).toEqual([]);
  });

  it("finds a key's events started out of sequence order, and a run again that no kill explains", () => {
    const inOrder = runsOf([...run('a', 0, 1, 0, 5), ...run('b', 0, 1, 1, 4), ...run('a', 1, 2, 6, 9)], []).runs;
    expect(orderInversions(inOrder)).toEqual([]);
    const swapped = runsOf([...run('a', 1, 1, 0, 5), ...run('a', 0, 2, 6, 9)], []).runs;
    expect(orderInversions(swapped)).toEqual([expect.stringContaining('key a: event #0')]);
    const twice = runsOf([...run('a', 0, 1, 0, 5), ...run('a', 0, 2, 6, 9)], []).runs;
    expect(orderInversions(twice)).toEqual([expect.stringContaining('ran again')]);
    // Run again after the process that ran it was killed: allowed.
    const rerun = runsOf(
      [...run('a', 0, 1, 0, null), ...run('a', 0, 2, 2100, 2105), ...run('a', 1, 2, 2110, 2115)],
      [{ pid: 1, diedAt: 3 }],
    ).runs;
    expect(orderInversions(rerun)).toEqual([]);
  });

  it('finds two handlers of a key at once, but not beside a killed holder whose lease had expired', () => {
    const overlap = runsOf([...run('a', 0, 1, 0, 10), ...run('a', 1, 2, 5, 12), ...run('b', 0, 1, 5, 6)], []).runs;
    expect(keyOverlaps(overlap)).toEqual([expect.stringContaining('key a: #1 (pid 2')]);
    // Back to back (an end and the next start in the same ms) is no overlap.
    expect(keyOverlaps(runsOf([...run('a', 0, 1, 0, 10), ...run('a', 1, 2, 10, 12)], []).runs)).toEqual([]);
    // Holder 1 was killed at 3000 (its run cut), its lease expired at 2000: the store may hand the key on from then.
    const killed = [{ pid: 1, diedAt: 3000 }];
    const afterExpiry = runsOf([...run('a', 0, 1, 0, null, { until: 2000 }), ...run('a', 0, 2, 2500, 2510)], killed).runs;
    expect(keyOverlaps(afterExpiry)).toEqual([]);
    const beforeExpiry = runsOf([...run('a', 0, 1, 0, null, { until: 2000 }), ...run('a', 0, 2, 1500, 1510)], killed).runs;
    expect(keyOverlaps(beforeExpiry)).toEqual([expect.stringContaining('killed')]);
  });

  it('counts the most handlers running at once, a killed holder only until its lease expired', () => {
    const rows = [...run('a', 0, 1, 0, 10), ...run('b', 0, 1, 2, 8), ...run('c', 0, 2, 5, 20), ...run('d', 0, 2, 10, 15)];
    expect(mostRunning(runsOf(rows, []).runs)).toEqual({ most: 3, at: 5 });
    const killed = runsOf(
      [...run('a', 0, 1, 0, null, { until: 100 }), ...run('b', 0, 2, 100, 150), ...run('c', 0, 2, 50, 60)],
      [{ pid: 1, diedAt: 500 }],
    ).runs;
    expect(mostRunning(killed).most).toBe(2);
  });

  it('finds the busiest span of claims (a sliding window, not fixed seconds)', () => {
    // 4 claims in [600, 1600) though no fixed second holds more than 2.
    const times = [600, 900, 1100, 1300, 2500];
    expect(busiestWindow(times, 1000)).toEqual({ most: 4, from: 600 });
    const runs = runsOf(
      times.flatMap((t, i) => run(`k${i}`, 0, 1, t + 5, t + 6, { at: t })),
      [],
    ).runs;
    expect(busiestWindow(claimTimes(runs), 1000).most).toBe(4);
  });

  it('names the events that never ran to their end', () => {
    const { runs } = runsOf([...run('a', 0, 1, 0, 5), ...run('a', 1, 1, 6, null)], [{ pid: 1, diedAt: 7 }]);
    expect(
      lostEvents(runs, [
        { key: 'a', seq: 0 },
        { key: 'a', seq: 1 },
        { key: 'b', seq: 0 },
      ]),
    ).toEqual(['a#1 never ran to its end', 'b#0 never ran to its end']);
  });
});
