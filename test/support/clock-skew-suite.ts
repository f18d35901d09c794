// Two consumer processes of one group on one store, one of them under faketime:
// its wall clock 45 s ahead of the store's (then 45 s behind), with leases of 5 s,
// far shorter than the skew. Each handler run appends its start and end to one
// file (test/support/consumer-child.ts, `runLog`), so which runs of an event
// overlapped is read from the kernel's order of those appends, not from any clock.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Rheo } from '../../lib';
import { startConsumers } from './multiprocess';

export interface ClockSkewTarget {
  /** Label used in describe(). */
  name: string;
  /** How a child builds the backend (a backend-from-env entry and JSON options), with its default clock. */
  backend: { name: string; options: Record<string, unknown> };
  /** The parent's own facade on the same store. */
  rheo: Rheo;
  /** Drop the store's test data after the facade closed. */
  cleanup(): Promise<unknown>;
}

const EVENTS = 60;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Handler runs of one event that were under way in two processes at once, from a run log's lines in append order. */
export function overlappingRuns(log: string): { ran: Map<string, number>; overlaps: string[] } {
  const running = new Map<string, Set<string>>();
  const ran = new Map<string, number>();
  const overlaps: string[] = [];
  for (const line of log.split('\n')) {
    if (line === '') continue;
    const [what, eventId, child] = line.split(' ');
    const now = running.get(eventId) ?? new Set<string>();
    if (what === 'start') {
      if (now.size > 0) overlaps.push(`event ${eventId}: started in child ${child} while running in child ${[...now].join(', ')}`);
      now.add(child);
      ran.set(eventId, (ran.get(eventId) ?? 0) + 1);
    } else now.delete(child);
    running.set(eventId, now);
  }
  return { ran, overlaps };
}

export function runClockSkewSuite(target: ClockSkewTarget): void {
  const { rheo, backend } = target;

  describe(`${target.name}: two processes of one group, one with its clock 45 s off`, () => {
    let dir: string;
    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'rheo-skew-'));
      await rheo.init();
    });
    afterAll(async () => {
      await rheo.close();
      await target.cleanup();
      rmSync(dir, { recursive: true, force: true });
    });

    it.each([
      ['ahead', '+45s'],
      ['behind', '-45s'],
    ])(
      'the skewed process %s (faketime %s): no event runs in two processes at once, none lost, lag 0',
      async (label, skew) => {
        const stream = `skew-${label}`;
        await rheo.createStream(stream, { partitions: 4 });
        await rheo.createGroup(stream, 'g');
        const runLog = join(dir, `${stream}.log`);
        writeFileSync(runLog, '');
        // Both are up and waiting before the first event exists, so both take work.
        const consumers = await startConsumers(
          2,
          backend,
          { stream, group: 'g', maxDemand: 8, concurrency: 4, leaseMs: 5000, pollMs: 100, workMs: 300, runLog },
          (index) => (index === 1 ? { faketime: skew } : {}),
        );
        let ids: string[];
        try {
          const appended = await rheo.appendBatch(
            stream,
            Array.from({ length: EVENTS }, (_, i) => ({ key: `k${i % 13}`, payload: { n: i } })),
          );
          ids = appended.map((e) => e.id);
          for (let i = 0; i < 600 && (await rheo.lag(stream, 'g')).lag > 0; i++) await sleep(100);
        } finally {
          await consumers.stop();
        }
        const { ran, overlaps } = overlappingRuns(readFileSync(runLog, 'utf8'));
        expect(overlaps).toEqual([]);
        const acked = new Set(consumers.records.flatMap((r) => (r.k === 'acked' ? [r.eventId] : [])));
        expect(ids.filter((id) => !acked.has(id) || !ran.has(id))).toEqual([]);
        for (const c of consumers.children) expect(c.handled).toBeGreaterThan(0);
        expect(await rheo.groupInfo(stream, 'g')).toMatchObject({ inflight: 0, deadLetters: 0, lag: { lag: 0 } });
      },
      120_000,
    );
  });
}
