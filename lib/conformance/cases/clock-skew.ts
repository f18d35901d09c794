import type { Clock } from '../../core/clock';
import { ManualClock, StoreClock, storeClock } from '../../core/clock';
import { Rheo } from '../../core/rheo';
import type { ConformanceContext } from '../context';

/** The skew of the cases' wrong clocks, ms: far more than any lease they take. */
const SKEW_MS = 60_000;
/** Leases, delays and retry delays of the cases: a third of the skew, far more than a measurement's error. */
const SPAN_MS = 20_000;

/** A process of the cases: its own backend on the suite's store, on a store clock over a base that may be skewed. */
interface Process {
  rheo: Rheo;
  clock: StoreClock;
}

/**
 * The store's time (ADR 041), for a backend that several processes share
 * (`guarantees.distributed`): every decision that compares times across processes
 * is taken on the store's time, so a process whose own clock is a minute off never
 * takes a live lease, and its retries and delayed events fall due on the store's time.
 * Each process is a second backend on the suite's store whose clock is a
 * `storeClock` over one manual clock (shifted ±60 s for the wrong ones), measured
 * once as it starts: the cases move that manual clock; nothing sleeps.
 */
export function clockSkewCases(ctx: ConformanceContext): void {
  const open = ctx.open;
  if (!open) throw new Error('clockSkewCases needs ctx.open (a distributed backend)');
  let manual: ManualClock;
  let right: Process;
  let ahead: Process;
  let behind: Process;

  async function start(shift: number): Promise<Process> {
    const base: Clock = { now: () => manual.now() + shift };
    const clock = storeClock(base, { refreshMs: 0 });
    const rheo = new Rheo(await open!(clock));
    await rheo.init();
    return { rheo, clock };
  }

  async function setup(n = 1): Promise<string> {
    const stream = ctx.name('skew');
    await right.rheo.createStream(stream, { partitions: 1 });
    await right.rheo.createGroup(stream, 'g');
    for (let i = 0; i < n; i++) await right.rheo.append(stream, { type: 't', payload: { n: i } });
    return stream;
  }

  const fetchOne = (p: Process, stream: string) => p.rheo.fetch(stream, 'g', { limit: 1, leaseMs: SPAN_MS });

  describe("the store's time: processes whose clocks are a minute off", () => {
    beforeAll(async () => {
      manual = new ManualClock(Date.now());
      right = await start(0);
      ahead = await start(SKEW_MS);
      behind = await start(-SKEW_MS);
    });

    afterAll(async () => {
      for (const p of [right, ahead, behind]) await p?.rheo.close();
    });

    it('measures each offset against the store: now() agrees across the processes, the skew is reported', async () => {
      expect(Math.abs(ahead.clock.offsetMs + SKEW_MS - right.clock.offsetMs)).toBeLessThan(SPAN_MS / 4);
      expect(Math.abs(behind.clock.offsetMs - SKEW_MS - right.clock.offsetMs)).toBeLessThan(SPAN_MS / 4);
      expect(Math.abs(ahead.clock.now() - right.clock.now())).toBeLessThan(SPAN_MS / 4);
      expect(Math.abs(behind.clock.now() - right.clock.now())).toBeLessThan(SPAN_MS / 4);
      const stream = await setup(0);
      const skewOf = async (p: Process) => ((await p.rheo.groupInfo(stream, 'g')).warnings ?? []).filter((w) => /clock/.test(w));
      expect(await skewOf(ahead)).toEqual([expect.stringMatching(/clock is \d+ ms ahead of the store's/)]);
      expect(await skewOf(behind)).toEqual([expect.stringMatching(/clock is \d+ ms behind the store's/)]);
    });

    it('a process whose clock is ahead never claims a live lease; it claims it once the lease expired by the store', async () => {
      const stream = await setup();
      const [held] = await fetchOne(right, stream);
      expect(held.attempt).toBe(1);
      expect(await fetchOne(ahead, stream)).toEqual([]);
      manual.advance(SPAN_MS / 2);
      expect(await fetchOne(ahead, stream)).toEqual([]);
      manual.advance(SPAN_MS + 1);
      const [taken] = await fetchOne(ahead, stream);
      expect(taken).toMatchObject({ attempt: 2, event: { id: held.event.id } });
      await ahead.rheo.ack(taken);
    });

    it("a lease taken by a process whose clock is behind lasts its time on the store's clock: the others do not claim it", async () => {
      const stream = await setup();
      const [held] = await fetchOne(behind, stream);
      expect(await fetchOne(right, stream)).toEqual([]);
      expect(await fetchOne(ahead, stream)).toEqual([]);
      // The settle of the slow-clocked holder is still within its lease.
      await behind.rheo.ack(held);
      expect((await right.rheo.lag(stream, 'g')).lag).toBe(0);
    });

    it("a retry's delay runs on the store's time, whichever process nacked", async () => {
      const stream = await setup(2);
      const [early] = await fetchOne(behind, stream);
      await behind.rheo.nack(early, { delayMs: SPAN_MS });
      const [late] = await fetchOne(ahead, stream);
      await ahead.rheo.nack(late, { delayMs: 1 });
      // Due now on the store: the ahead process's retry. Not yet: the behind process's.
      manual.advance(SPAN_MS / 4);
      const due = await right.rheo.fetch(stream, 'g', { limit: 10, leaseMs: SPAN_MS });
      expect(due.map((l) => [l.event.id, l.attempt])).toEqual([[late.event.id, 2]]);
      await right.rheo.ack(due[0]);
      manual.advance(SPAN_MS);
      const later = await right.rheo.fetch(stream, 'g', { limit: 10, leaseMs: SPAN_MS });
      expect(later.map((l) => [l.event.id, l.attempt])).toEqual([[early.event.id, 2]]);
      await right.rheo.ack(later[0]);
      expect((await right.rheo.lag(stream, 'g')).lag).toBe(0);
    });

    it("a delayed event falls due on the store's time, whichever process appended it; its timestamp is the store's", async () => {
      const stream = await setup(0);
      const soon = await ahead.rheo.append(stream, { type: 't', payload: { n: 1 }, delayMs: 1 });
      const later = await behind.rheo.append(stream, { type: 't', payload: { n: 2 }, delayMs: SPAN_MS });
      for (const e of [soon, later]) expect(Math.abs(e.timestamp.getTime() - right.clock.now())).toBeLessThan(SPAN_MS / 4);
      manual.advance(SPAN_MS / 4);
      const due = await right.rheo.fetch(stream, 'g', { limit: 10, leaseMs: SPAN_MS });
      expect(due.map((l) => l.event.id)).toEqual([soon.id]);
      await right.rheo.ack(due[0]);
      manual.advance(SPAN_MS);
      const next = await right.rheo.fetch(stream, 'g', { limit: 10, leaseMs: SPAN_MS });
      expect(next.map((l) => l.event.id)).toEqual([later.id]);
      await right.rheo.ack(next[0]);
      expect((await right.rheo.lag(stream, 'g')).lag).toBe(0);
    });

    it('a process whose clock is ahead does not take a turn another holds', async () => {
      const job = ctx.name('skew-job');
      expect(await right.rheo.backend.claimTurn(job, 'right', SPAN_MS)).toBe(true);
      expect(await ahead.rheo.backend.claimTurn(job, 'ahead', SPAN_MS)).toBe(false);
      expect(await behind.rheo.backend.claimTurn(job, 'behind', SPAN_MS)).toBe(false);
      manual.advance(SPAN_MS + 1);
      expect(await ahead.rheo.backend.claimTurn(job, 'ahead', SPAN_MS)).toBe(true);
      expect(await right.rheo.backend.releaseTurn(job, 'right')).toBe(false);
      expect(await ahead.rheo.backend.releaseTurn(job, 'ahead')).toBe(true);
    });
  });
}
