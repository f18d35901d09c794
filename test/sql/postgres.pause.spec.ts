// Pausing a group across real OS processes on PostgreSQL (docs/adr/046-pausing-a-group.md).
// 1. A consumer process (concurrency 4) holds 4 handlers; the parent pauses the
//    group, lets the handlers finish, appends for 2 s, then resumes. One shared log
//    file, appended to by both processes (the kernel orders the appends), must read:
//    pause resolved -> the 4 acks -> the appends -> resume -> the next claim, with no
//    claim between the pause and the resume. Only the order is asserted; the
//    resume -> first claim latency is printed.
// 2. A process pausing and resuming in a loop is SIGKILLed at a random moment: the
//    group is then paused or not, consistently (groupInfo.paused and every partition
//    row's paused_to agree).
import { type ChildProcess, fork } from 'node:child_process';
import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { postgresBackend, Rheo } from '../../lib';
import type { PauseChildConfig } from '../support/pause-child-postgres';
import { dropSchema, freshSchema, PG_URL } from './pg-helpers';

const schema = freshSchema('pause');
const dir = mkdtempSync(join(tmpdir(), 'rheo-pause-'));
const PARTITIONS = 4;
const KILLS = 4;

interface Started {
  proc: ChildProcess;
  /** Resolves with the first message of kind `k`. */
  next(k: string): Promise<Record<string, unknown>>;
  /** Every message of kind `k` so far. */
  seen(k: string): number;
  exited: Promise<void>;
}

function start(config: PauseChildConfig): Started {
  const proc = fork(join(__dirname, '..', 'support', 'pause-child-postgres.ts'), [], {
    execArgv: ['-r', 'ts-node/register/transpile-only'],
    env: { ...process.env, RHEO_PAUSE_CHILD: JSON.stringify(config) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  started.push(proc);
  const counts = new Map<string, number>();
  const waiting = new Map<string, Array<(m: Record<string, unknown>) => void>>();
  proc.on('message', (m: Record<string, unknown>) => {
    const k = String(m.k);
    counts.set(k, (counts.get(k) ?? 0) + 1);
    for (const resolve of waiting.get(k)?.splice(0) ?? []) resolve(m);
  });
  const exited = new Promise<void>((resolve) => proc.on('exit', () => resolve()));
  return {
    proc,
    next: (k) =>
      new Promise((resolve, reject) => {
        const list = waiting.get(k) ?? [];
        list.push(resolve);
        waiting.set(k, list);
        void exited.then(() => reject(new Error(`the child exited before sending "${k}"`)));
      }),
    seen: (k) => counts.get(k) ?? 0,
    exited,
  };
}

/** Every child started, so that none outlives a failed test. */
const started: ChildProcess[] = [];

/** Resolves once `ok()` holds, checking every 20 ms; fails naming `what` after `ms` (a hang, not a timing). */
async function until(what: string, ok: () => boolean, ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const logLines = (log: string) => readFileSync(log, 'utf8').split('\n').filter(Boolean);
const kind = (line: string) => line.split(' ')[0];

describe('postgres: pausing a group across processes', () => {
  const rheo = new Rheo(postgresBackend({ url: PG_URL, schema, poolSize: 4 }));
  let ds: DataSource;

  beforeAll(async () => {
    await rheo.init();
    ds = new DataSource({ type: 'postgres', url: PG_URL, poolSize: 1 });
    await ds.initialize();
  });

  afterAll(async () => {
    for (const proc of started) if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
    await ds?.destroy();
    await rheo.close();
    await dropSchema(schema);
    rmSync(dir, { recursive: true, force: true });
  });

  it('holds a running consumer process from the moment pauseGroup resolves, and lets it claim again at resume', async () => {
    const stream = 'orders';
    const log = join(dir, 'order.log');
    writeFileSync(log, '');
    const note = (line: string) => appendFileSync(log, `${line}\n`);
    await rheo.createStream(stream, { partitions: PARTITIONS });
    await rheo.createGroup(stream, 'g');
    // Exactly as many events as handlers: every later claim of the consumer can only lease an event appended later.
    await rheo.appendBatch(
      stream,
      Array.from({ length: 4 }, (_, i) => ({ id: `held-${i}`, partition: i % PARTITIONS, payload: i })),
    );
    // A long poll: what ends the consumer's wait at the resume is the resume's NOTIFY.
    const child = start({ mode: 'consumer', url: PG_URL, schema, stream, group: 'g', log, leaseMs: 60_000, pollMs: 20_000 });
    try {
      await child.next('ready');
      await until('4 handlers running', () => child.seen('start') === 4);
      await rheo.pauseGroup(stream, 'g', { reason: 'provider down', by: 'postgres.pause.spec' });
      note('paused');
      child.proc.send({ type: 'release' });
      await until('the 4 acks', () => child.seen('acked') === 4);
      const appendUntil = Date.now() + 2000;
      for (let i = 0; Date.now() < appendUntil; i++) {
        await rheo.append(stream, { id: `during-${i}`, partition: i % PARTITIONS, payload: i });
        note(`append during-${i}`);
        await new Promise((r) => setTimeout(r, 50));
      }

      // The log so far. Before the pause: the 4 claims and the 4 handler starts, nothing else.
      const upToResume = logLines(log);
      const paused = upToResume.indexOf('paused');
      expect(upToResume.slice(0, paused).map(kind).sort()).toEqual([...Array(4).fill('claim'), ...Array(4).fill('start')]);
      // Since the pause: the 4 acks, then the appends; not one claim.
      const during = upToResume.slice(paused + 1);
      expect(during.slice(0, 4).map(kind)).toEqual(['acked', 'acked', 'acked', 'acked']);
      expect(during.length).toBeGreaterThan(4);
      expect(during.slice(4).map(kind)).toEqual(during.slice(4).map(() => 'append'));

      note('resuming');
      const resumeAt = Date.now();
      expect(await rheo.resumeGroup(stream, 'g')).toBe(true);
      note('resumed');
      await until('a claim after the resume', () => logLines(log).some((l, i) => i >= upToResume.length && kind(l) === 'claim'));
      const lines = logLines(log);
      // After the resume: the consumer claims what was appended while paused (and runs and acks it).
      const after = lines.slice(upToResume.length);
      // ('resumed' is noted once resumeGroup resolved: the consumer may have claimed already.)
      expect(after[0]).toBe('resuming');
      const firstClaim = after.find((l) => kind(l) === 'claim')!;
      expect(firstClaim.split(' ')[1]).toMatch(/^during-/);
      expect(
        after
          .slice(1)
          .filter((l) => l !== 'resumed')
          .every((l) => ['claim', 'start', 'acked'].includes(kind(l))),
      ).toBe(true);
      console.log(`postgres pause: resume -> first claim in another process: ${Number(firstClaim.split(' ')[2]) - resumeAt} ms`);
    } finally {
      child.proc.send({ type: 'stop' });
      await Promise.race([child.exited, new Promise((r) => setTimeout(r, 15_000))]);
      child.proc.kill('SIGKILL');
    }
  }, 120_000);

  it('leaves the group consistently paused or not when the process pausing and resuming it is SIGKILLed', async () => {
    const stream = 'toggled';
    await rheo.createStream(stream, { partitions: PARTITIONS });
    await rheo.createGroup(stream, 'g');
    const outcomes: string[] = [];
    for (let kill = 0; kill < KILLS; kill++) {
      const child = start({ mode: 'toggler', url: PG_URL, schema, stream, group: 'g' });
      await child.next('toggling');
      // A random moment of the loop: inside a pause's or a resume's transaction, or between them.
      await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 400)));
      child.proc.kill('SIGKILL');
      await child.exited;
      const info = await rheo.groupInfo(stream, 'g');
      const gates = (await ds.query(
        `SELECT partition, paused_to FROM "${schema}".rheo_group_partitions WHERE stream = $1 AND group_name = $2 ORDER BY partition`,
        [stream, 'g'],
      )) as Array<{ partition: number; paused_to: string | null }>;
      expect(gates).toHaveLength(PARTITIONS);
      if (info.paused === null) {
        expect(gates.every((g) => g.paused_to === null)).toBe(true);
      } else {
        expect(info.paused.reason).toMatch(/^toggle \d+$/);
        expect(info.paused.by).toBe('pause-child');
        expect(gates.every((g) => g.paused_to !== null && Number(g.paused_to) > Date.now())).toBe(true);
      }
      outcomes.push(info.paused === null ? 'resumed' : 'paused');
      // Whatever the kill left, a resume from here lifts it everywhere.
      await rheo.resumeGroup(stream, 'g');
    }
    console.log(`postgres pause: group after each SIGKILL of the toggling process: ${outcomes.join(', ')}`);
  }, 180_000);
});
