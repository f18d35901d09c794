// Pausing a group across real OS processes (docs/adr/046-pausing-a-group.md), run
// against every distributed backend:
// 1. A consumer process (pause-child.ts, concurrency 4) holds 4 handlers; the parent
//    pauses the group, lets the handlers finish, appends for 2 s, then resumes. One
//    shared log file, appended to by both processes (the kernel orders the appends),
//    must read: pause resolved -> the 4 settles -> the appends -> resume -> the next
//    claim, with no claim and no handler start between the pause and the resume, and
//    the Consumer's claims meanwhile answered "paused". Only the order is asserted; the
//    resume -> first claim latency is printed.
// 2. A process pausing and resuming in a loop is SIGKILLed mid-loop: the group is then
//    paused or not, consistently, in the store itself (every place the backend keeps
//    the pause) and in what the store answers (groupInfo, a claim, resumeGroup).
import { type ChildProcess, fork } from 'node:child_process';
import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Rheo } from '../../lib';
import { isPausedAnswer } from '../../lib/core/fetched';
import { BACKEND_ENV } from './backend-from-env';
import type { PauseChildConfig, PauseChildMessage } from './pause-child';
import { until } from './until';

/** What `storedPause` reports of each place the store keeps a group's pause. */
export type StoredPause = 'paused' | 'not paused' | string;

export interface PauseTarget {
  /** Label used in describe(). */
  name: string;
  /** How a child builds the backend (a backend-from-env entry and JSON options). */
  backend: { name: string; options: Record<string, unknown> };
  /** The parent's own facade on the same store. */
  rheo: Rheo;
  /**
   * The pause of `group` of `stream` (a stream of `partitions` partitions) as the store
   * keeps it, read past the facade: one entry per place it is kept (a partition row, a
   * hash field), each 'paused', 'not paused', or what else was found there.
   */
  storedPause(stream: string, group: string, partitions: number): Promise<StoredPause[]>;
  /** Drop the store's test data after the facade closed. */
  cleanup(): Promise<unknown>;
}

const PARTITIONS = 4;
const KILLS = 4;
/** Bounds against hangs, never timings. */
const WAIT_MS = 60_000;

/** A child of pause-child.ts and what it has told so far. */
interface PauseChild {
  proc: ChildProcess;
  messages: PauseChildMessage[];
  exited: Promise<unknown>;
}

const count = (child: PauseChild, k: PauseChildMessage['k']) => child.messages.filter((m) => m.k === k).length;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const logLines = (log: string) => readFileSync(log, 'utf8').split('\n').filter(Boolean);
const kind = (line: string) => line.split(' ')[0];

export function runPauseSuite(target: PauseTarget): void {
  const { rheo } = target;
  const dir = mkdtempSync(join(tmpdir(), 'rheo-pause-'));
  /** Every child started, so that none outlives a failed test. */
  const started: ChildProcess[] = [];

  async function startChild(config: PauseChildConfig): Promise<PauseChild> {
    const proc = fork(join(__dirname, 'pause-child.ts'), [], {
      execArgv: ['-r', 'ts-node/register/transpile-only'],
      env: {
        ...process.env,
        [BACKEND_ENV.name]: target.backend.name,
        [BACKEND_ENV.options]: JSON.stringify(target.backend.options),
        RHEO_TEST_PAUSE: JSON.stringify(config),
        TS_NODE_TRANSPILE_ONLY: 'true',
      },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    started.push(proc);
    // 'close', not 'exit': 'exit' can come before the last IPC messages were read.
    const child: PauseChild = { proc, messages: [], exited: new Promise((resolve) => proc.on('close', resolve)) };
    proc.on('message', (m: PauseChildMessage) => child.messages.push(m));
    await until('the child to be ready', () => child.messages.some((m) => m.k === 'ready') || proc.exitCode !== null, WAIT_MS);
    if (proc.exitCode !== null) throw new Error(`pause child exited with ${proc.exitCode} before it was ready`);
    return child;
  }

  /** Drain and stop a consumer child; one that does not exit in time is killed. */
  async function stop(child: PauseChild): Promise<void> {
    if (child.proc.connected) child.proc.send({ type: 'stop' });
    await Promise.race([child.exited, sleep(15_000)]);
    if (child.proc.exitCode === null && child.proc.signalCode === null) child.proc.kill('SIGKILL');
  }

  describe(`${target.name}: pausing a group across processes`, () => {
    beforeAll(() => rheo.init());
    afterAll(async () => {
      for (const proc of started) if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
      await rheo.close();
      await target.cleanup();
      rmSync(dir, { recursive: true, force: true });
    });

    it('holds a running consumer process from the moment pauseGroup resolves, and lets it claim again at resume', async () => {
      const stream = 'orders';
      const log = join(dir, 'order.log');
      writeFileSync(log, '');
      const note = (line: string) => appendFileSync(log, `${line}\n`);
      await rheo.createStream(stream, { partitions: PARTITIONS });
      await rheo.createGroup(stream, 'g');
      // Exactly as many events as handlers: every later claim can only lease an event appended later.
      await rheo.appendBatch(
        stream,
        Array.from({ length: 4 }, (_, i) => ({ id: `held-${i}`, partition: i % PARTITIONS, payload: i })),
      );
      // A poll interval far beyond the test's bounds: only the resume's wake-up can end the Consumer's wait.
      const child = await startChild({ mode: 'consumer', stream, group: 'g', log, concurrency: 4, pollMs: 60_000 });
      try {
        await until('4 handlers running', () => count(child, 'start') === 4, WAIT_MS);
        await rheo.pauseGroup(stream, 'g', { reason: 'provider down', by: 'pause-suite' });
        note('pause-resolved');
        child.proc.send({ type: 'release' });
        await until('the 4 settles', () => count(child, 'settled') === 4, WAIT_MS);
        // Appends for 2 s: each wakes the Consumer, whose claims find the group paused.
        const appendsUntil = Date.now() + 2000;
        for (let i = 0; Date.now() < appendsUntil; i++) {
          await rheo.append(stream, { id: `during-${i}`, partition: i % PARTITIONS, payload: i });
          note(`append during-${i}`);
          await sleep(50);
        }
        expect((await rheo.groupInfo(stream, 'g')).paused).toMatchObject({ reason: 'provider down', by: 'pause-suite', until: null });
        const claimsBefore = count(child, 'claim');
        note('resume-called');
        const resumedAt = Date.now();
        expect(await rheo.resumeGroup(stream, 'g')).toBe(true);
        const first = await until('a claim after the resume', () => child.messages.filter((m) => m.k === 'claim')[claimsBefore], WAIT_MS);
        console.log(
          `${target.name} pause: resume -> first claim in another process: ${(first as { at: number }).at - resumedAt} ms (poll interval 60000 ms)`,
        );

        const lines = logLines(log);
        const pause = lines.indexOf('pause-resolved');
        const resume = lines.indexOf('resume-called');
        expect(pause).toBeGreaterThan(-1);
        expect(resume).toBeGreaterThan(pause);
        // Before the pause: the 4 claims and the 4 handler starts, nothing else.
        expect(lines.slice(0, pause).map(kind).sort()).toEqual([...Array(4).fill('claim'), ...Array(4).fill('start')]);
        // Between the pause and the resume: the 4 settles, then the appends; the Consumer's
        // claims meanwhile were answered "paused" (and it did ask: the appends woke it).
        const held = lines.slice(pause + 1, resume);
        const asked = held.filter((l) => l !== 'paused-answer');
        const firstAppend = asked.findIndex((l) => kind(l) === 'append');
        expect(firstAppend).toBe(4);
        expect(asked.slice(0, 4).map(kind)).toEqual(['settle', 'settle', 'settle', 'settle']);
        expect(asked.slice(4).map(kind)).toEqual(asked.slice(4).map(() => 'append'));
        expect(held.filter((l) => kind(l) === 'claim' || kind(l) === 'start')).toEqual([]);
        expect(held).toContain('paused-answer');
        // After the resume: the first claim leases an event appended while paused, then only the
        // Consumer's work. (A paused answer before it is a claim the store answered before the resume.)
        const after = lines.slice(resume + 1);
        const firstClaim = after.findIndex((l) => kind(l) === 'claim');
        expect(firstClaim).toBeGreaterThan(-1);
        expect(after[firstClaim].split(' ')[1]).toMatch(/^during-/);
        expect(after.slice(0, firstClaim).filter((l) => l !== 'paused-answer')).toEqual([]);
        expect(after.slice(firstClaim).filter((l) => !['claim', 'start', 'settle'].includes(kind(l)))).toEqual([]);
        expect(lines.filter((l) => kind(l) === 'claim').length).toBeGreaterThan(4);
      } finally {
        await stop(child);
      }
    }, 120_000);

    it('leaves the group consistently paused or not when the process pausing and resuming it is SIGKILLed', async () => {
      const stream = 'toggled';
      await rheo.createStream(stream, { partitions: PARTITIONS });
      await rheo.createGroup(stream, 'g');
      // Something for a claim to lease while the group is not paused.
      await rheo.append(stream, { payload: 'x' });
      const outcomes: string[] = [];
      for (let round = 0; round < KILLS; round++) {
        const child = await startChild({ mode: 'toggle', stream, group: 'g' });
        // Killed mid-loop, after a varying number of calls and at a random moment: inside a
        // pause, inside a resume, or between them. Each is whole or not at all.
        await until('the toggling to be under way', () => count(child, 'toggled') >= 20 + 7 * round, WAIT_MS);
        await sleep(Math.floor(Math.random() * 200));
        child.proc.kill('SIGKILL');
        await child.exited;

        const stored = await target.storedPause(stream, 'g', PARTITIONS);
        expect(stored.length).toBeGreaterThan(0);
        const paused = stored[0] === 'paused';
        expect(stored).toEqual(stored.map(() => (paused ? 'paused' : 'not paused')));
        // The store's answers agree with what it keeps: groupInfo, a claim, and resumeGroup.
        const info = await rheo.groupInfo(stream, 'g');
        expect(info.paused !== null).toBe(paused);
        if (paused) expect(info.paused).toMatchObject({ reason: expect.stringMatching(/^toggle \d+$/), by: 'pause-child', until: null });
        const answer = await rheo.fetch(stream, 'g', { limit: 1, leaseMs: 1000 });
        expect(isPausedAnswer(answer)).toBe(paused);
        if (answer.length > 0) await rheo.releaseMany(answer);
        // Whatever the kill left, a resume from here lifts it everywhere.
        expect(await rheo.resumeGroup(stream, 'g')).toBe(paused);
        expect(await target.storedPause(stream, 'g', PARTITIONS)).toEqual(stored.map(() => 'not paused'));
        outcomes.push(paused ? 'paused' : 'not paused');
      }
      console.log(`${target.name} pause: group after each SIGKILL of the toggling process: ${outcomes.join(', ')}`);
    }, 180_000);
  });
}
