// Pausing a group across real processes (docs/adr/046-pausing-a-group.md): a Consumer in a
// child process, paused and resumed by its parent through Redis. The order of what both
// processes did is the shared log file both append to (one kernel-ordered file), never a
// timing; and a process killed while pausing and resuming leaves the pause whole or absent.
import { type ChildProcess, fork } from 'node:child_process';
import { appendFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Redis from 'ioredis';
import { Rheo, redisBackend } from '../../lib';
import { STORED_PAUSE_FIELDS } from '../../lib/backends/redis/group-config';
import { StreamKeys } from '../../lib/backends/redis/keys';
import { isPausedAnswer } from '../../lib/core/fetched';
import { BACKEND_ENV } from '../support/backend-from-env';
import type { PauseChildConfig, PauseChildMessage } from '../support/pause-child';
import { until } from '../support/until';
import { deleteKeys, freshPrefix, REDIS_URL } from './support';

jest.setTimeout(60_000);

const prefix = freshPrefix('pause');
const rheo = new Rheo(redisBackend({ url: REDIS_URL, prefix }));
const dir = mkdtempSync(join(tmpdir(), 'rheo-pause-'));
const PAUSE_FIELDS = Object.values(STORED_PAUSE_FIELDS);

/** A child of pause-child.ts and what it has told so far. */
interface PauseChild {
  proc: ChildProcess;
  messages: PauseChildMessage[];
  exited: Promise<unknown>;
}

async function startChild(config: PauseChildConfig): Promise<PauseChild> {
  const proc = fork(join(__dirname, '../support/pause-child.ts'), [], {
    execArgv: ['-r', 'ts-node/register/transpile-only'],
    env: {
      ...process.env,
      [BACKEND_ENV.name]: 'redis',
      [BACKEND_ENV.options]: JSON.stringify({ url: REDIS_URL, prefix }),
      RHEO_TEST_PAUSE: JSON.stringify(config),
      TS_NODE_TRANSPILE_ONLY: 'true',
    },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const child: PauseChild = { proc, messages: [], exited: new Promise((resolve) => proc.on('close', resolve)) };
  proc.on('message', (m: PauseChildMessage) => child.messages.push(m));
  await until('the child to be ready', () => child.messages.some((m) => m.k === 'ready') || proc.exitCode !== null);
  if (proc.exitCode !== null) throw new Error(`pause child exited with ${proc.exitCode} before it was ready`);
  return child;
}

const count = (child: PauseChild, k: PauseChildMessage['k']) => child.messages.filter((m) => m.k === k).length;

/** The pause's fields as stored in the group's cfg hash (null each when absent). */
async function storedPause(admin: Redis, stream: string, group: string): Promise<Array<string | null>> {
  return admin.hmget(new StreamKeys(prefix, stream).group(group).cfg, ...PAUSE_FIELDS);
}

afterAll(async () => {
  await rheo.close();
  await deleteKeys(prefix);
  rmSync(dir, { recursive: true, force: true });
});

describe('redis pauseGroup / resumeGroup across processes', () => {
  it('a running Consumer finishes its handlers, claims nothing while paused, and claims at once after the resume', async () => {
    const stream = 'work';
    const log = join(dir, 'order.log');
    const write = (line: string) => appendFileSync(log, `${line}\n`);
    await rheo.createStream(stream, { partitions: 2 });
    await rheo.createGroup(stream, 'g');
    await rheo.appendBatch(
      stream,
      Array.from({ length: 4 }, (_, i) => ({ id: `first-${i}`, key: `k${i}`, payload: i })),
    );
    // A poll interval far beyond the test's bound: only the resume's wake-up can make the claim quick.
    const child = await startChild({ mode: 'consumer', stream, group: 'g', log, concurrency: 4, pollMs: 60_000 });
    try {
      await until('4 handlers running', () => count(child, 'start') === 4);
      await rheo.pauseGroup(stream, 'g', { reason: 'provider down', by: 'pause.spec' });
      write('pause-resolved');
      child.proc.send({ type: 'release' });
      await until('the 4 settles', () => count(child, 'settled') === 4);
      // Appends for 2 s: each wakes the Consumer, whose claims find the group paused.
      const appendsUntil = Date.now() + 2000;
      for (let i = 0; Date.now() < appendsUntil; i++) {
        await rheo.append(stream, { id: `during-${i}`, key: `k${i}`, payload: i });
        write(`append during-${i}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      expect((await rheo.groupInfo(stream, 'g')).paused).toMatchObject({ reason: 'provider down', by: 'pause.spec', until: null });
      const claimsBefore = count(child, 'claim');
      write('resume-called');
      const resumedAt = Date.now();
      expect(await rheo.resumeGroup(stream, 'g')).toBe(true);
      const first = await until('a claim after the resume', () => child.messages.filter((m) => m.k === 'claim')[claimsBefore]);
      console.log(`resume -> first claim in the child: ${(first as { at: number }).at - resumedAt} ms (poll interval 60000 ms)`);

      const lines = readFileSync(log, 'utf8').trim().split('\n');
      const at = (line: string) => lines.indexOf(line);
      const pause = at('pause-resolved');
      const resume = at('resume-called');
      const settles = lines.flatMap((l, i) => (l.startsWith('settle ') ? [i] : []));
      const appends = lines.flatMap((l, i) => (l.startsWith('append ') ? [i] : []));
      const claims = lines.flatMap((l, i) => (l.startsWith('claim ') ? [i] : []));
      // pause resolved -> the 4 settles -> the appends -> resume -> the next claim.
      expect(pause).toBeGreaterThan(-1);
      expect(settles).toHaveLength(4);
      expect(settles.every((i) => i > pause)).toBe(true);
      expect(appends.length).toBeGreaterThan(0);
      expect(Math.min(...appends)).toBeGreaterThan(Math.max(...settles));
      expect(resume).toBeGreaterThan(Math.max(...appends));
      // No claim between the pause and the resume; the first 4 before it, the next after it.
      expect(claims.filter((i) => i > pause && i < resume)).toEqual([]);
      expect(claims.filter((i) => i < pause)).toHaveLength(4);
      expect(claims.some((i) => i > resume)).toBe(true);
      // The Consumer did ask while paused (the appends woke it): its answers were paused ones.
      expect(lines.slice(pause, resume).includes('paused-answer')).toBe(true);
      expect(lines.slice(pause, resume).filter((l) => l.startsWith('start '))).toEqual([]);
    } finally {
      child.proc.send({ type: 'stop' });
      await child.exited;
    }
  });

  it('a process SIGKILLed while pausing and resuming in a loop leaves the whole pause or none of it', async () => {
    const stream = 'toggled';
    await rheo.createStream(stream, { partitions: 1 });
    await rheo.createGroup(stream, 'g');
    await rheo.append(stream, { payload: 'x' });
    const admin = new Redis(REDIS_URL);
    const states = new Set<string>();
    try {
      for (let round = 0; round < 4; round++) {
        const child = await startChild({ mode: 'toggle', stream, group: 'g' });
        // Killed mid-loop, after a varying number of calls: wherever it is, a script runs whole or not at all.
        await until('the toggling to be under way', () => count(child, 'toggled') >= 20 + 7 * round);
        child.proc.kill('SIGKILL');
        await child.exited;
        const fields = await storedPause(admin, stream, 'g');
        const present = fields.filter((v) => v !== null).length;
        expect([0, PAUSE_FIELDS.length]).toContain(present);
        const paused = present > 0;
        states.add(paused ? 'paused' : 'not paused');
        // The store's answers agree with the fields: groupInfo, a claim, and resumeGroup.
        const info = await rheo.groupInfo(stream, 'g');
        expect(info.paused !== null).toBe(paused);
        if (paused) expect(info.paused).toMatchObject({ by: 'pause-child', until: null });
        const answer = await rheo.fetch(stream, 'g', { limit: 1, leaseMs: 1000 });
        expect(isPausedAnswer(answer)).toBe(paused);
        if (answer.length > 0) await rheo.releaseMany(answer);
        expect(await rheo.resumeGroup(stream, 'g')).toBe(paused);
        expect(await storedPause(admin, stream, 'g')).toEqual(PAUSE_FIELDS.map(() => null));
      }
      console.log(`states the killed process left: ${[...states].join(', ')}`);
    } finally {
      admin.disconnect();
    }
  });
});
