// The `rheo` bin, built once for this file and run as a child process: what only
// a process proves. The exit code reaching the shell, the version the built
// package reports, `warning:` lines (main.ts prints them), a reader that goes
// away (EPIPE), tail --follow stopped by a signal, RHEO_URL from the environment.
// Every other case runs the CLI in-process, in cli.spec.ts.
import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { backendFromUrl, Rheo, RheoAdmin } from '../../lib';
import { RedisServer } from '../redis/failover-support';
import { freshPrefix } from '../redis/support';
import { cli, jsonOf, type Run, seedOrders, stores, summary } from './support';

const ROOT = join(__dirname, '..', '..');
// Inside the repository so the build resolves node_modules; never dist/, which CI and other tests use. One
// per checkout: checkouts that share node_modules (git worktrees) must not build over each other.
const OUT = join(ROOT, 'node_modules', '.cache', `rheo-cli-build-${createHash('sha1').update(ROOT).digest('hex').slice(0, 8)}`);
const MAIN = join(OUT, 'cli', 'main.js');
const dir = mkdtempSync(join(tmpdir(), 'rheo-cli-bin-'));

/** The bin with `args`; RHEO_URL only when given in `env`. Killed (code null) if it does not exit by itself. */
function bin(args: string[], env: Record<string, string> = {}): Promise<Run> {
  const base = { ...process.env };
  delete base.RHEO_URL;
  return new Promise((resolve) => {
    execFile(process.execPath, [MAIN, ...args], { env: { ...base, ...env }, timeout: 20_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : null) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

beforeAll(() => {
  // Incremental: a rerun with unchanged sources only checks, it does not rebuild.
  const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  execFileSync(
    process.execPath,
    [tsc, '-p', 'tsconfig.build.json', '--outDir', OUT, '--incremental', '--tsBuildInfoFile', join(OUT, '.tsbuildinfo')],
    {
      cwd: ROOT,
      stdio: 'inherit',
    },
  );
  pruneStale(OUT, join(ROOT, 'lib'));
}, 120_000);

/**
 * Delete what an incremental build left of sources since removed: a stale
 * `plans.js` beside a new `plans/index.js` is what `require('./plans')` would load.
 */
function pruneStale(out: string, sources: string): void {
  for (const entry of readdirSync(out, { withFileTypes: true })) {
    const path = join(out, entry.name);
    if (entry.isDirectory()) {
      pruneStale(path, join(sources, entry.name));
      continue;
    }
    const stem = entry.name.replace(/(\.d)?\.ts$|\.js$/, '');
    if (stem !== entry.name && !existsSync(join(sources, `${stem}.ts`))) rmSync(path);
  }
}

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('rheo, the bin', () => {
  // On the bin: in-process, help wraps at the width of the terminal running Jest, and -V is read beside the built files.
  it('--help lists the commands and exits 0; -V prints the version', async () => {
    const help = await bin(['--help']);
    expect(help.code).toBe(0);
    for (const command of [
      'streams',
      'groups',
      'lag',
      'info',
      'dead-letters',
      'redrive',
      'replay',
      'reset',
      'tail',
      'append',
      'trim',
      'purge',
      'group',
      'pause',
      'resume',
    ]) {
      expect(help.stdout).toMatch(new RegExp(`^  ${command} `, 'm'));
    }
    expect(help.stdout).toContain('(env: RHEO_URL)');
    const version = await bin(['-V']);
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    expect(version).toEqual({ code: 0, stdout: `${pkg.version}\n`, stderr: '' });
  });

  it('the exit code reaches the shell: 1 failed, 2 bad usage', async () => {
    const notes = join(dir, 'notes.txt');
    writeFileSync(notes, 'not a database at all\n');
    const [failed, usage] = await Promise.all([bin(['--url', `sqlite:${notes}`, 'streams']), bin(['streams'])]);
    expect({ failed: failed.code, usage: usage.code }).toEqual({ failed: 1, usage: 2 });
    expect(failed.stderr).toContain(notes);
    expect(usage.stderr).toContain('no store named: pass --url or set RHEO_URL');
  });

  it("a store's warning: one `warning:` line on stderr, none of Node's own printing, the result on stdout", async () => {
    const prefix = freshPrefix('cli-warning');
    // A server of its own, started with appendonly no, so the backend has a warning to give whatever the shared one runs with.
    const server = await RedisServer.start();
    const rheo = new Rheo(backendFromUrl(server.url, { prefix, install: 'auto' }));
    try {
      await rheo.createStream('w');
      await rheo.createGroup('w', 'g');
      const [group] = await new RheoAdmin(rheo).groups('w');
      expect(group.warnings).not.toEqual([]);
      const run = await bin(['--url', server.url, '--prefix', prefix, '--json', 'groups', 'w']);
      expect(run.code).toBe(0);
      expect(run.stderr).toBe(
        `warning: nestjs-rheo redis backend (prefix "${prefix}") may lose acknowledged data: ${group.warnings.join('; ')}\n`,
      );
      expect((JSON.parse(run.stdout) as Array<{ group: string }>).map((g) => g.group)).toEqual(['g']);
    } finally {
      await rheo.close();
      await server.stop();
    }
  });

  it('a reader that goes away (`rheo tail s | head -1`): tail, and tail --follow, end with 0 and nothing on stderr', async () => {
    const url = `sqlite:${join(dir, 'reader.db')}`;
    const rheo = new Rheo(backendFromUrl(url, { install: 'auto' }));
    const started: ChildProcess[] = [];
    const tail = (...args: string[]) => {
      const child = spawn(process.execPath, [MAIN, '--url', url, 'tail', 'gone', ...args]);
      started.push(child);
      return child;
    };
    try {
      await rheo.createStream('gone');
      const first = await rheo.append('gone', { id: 'g1', payload: 1 });
      // Gone before the first write.
      const page = tail();
      const pageEnd = endOf(page);
      page.stdout!.destroy();
      expect(await pageEnd).toEqual({ code: 0, stderr: '' });
      // Gone after the first line: the next event is written to a pipe no one reads.
      const follow = tail('--follow', '--json', '--interval', '50');
      const followEnd = endOf(follow);
      expect(JSON.parse(await linesOf(follow).next())).toEqual(summary(first));
      follow.stdout!.destroy();
      await rheo.append('gone', { id: 'g2', payload: 2 });
      expect(await followEnd).toEqual({ code: 0, stderr: '' });
    } finally {
      for (const child of started) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await rheo.close();
    }
  });
});

describe.each(stores(dir))('rheo on $name, the bin', (store) => {
  let rheo: Rheo;
  let admin: RheoAdmin;
  let created: Date;
  const run = (...args: string[]) => cli([...store.args, ...args]);
  const json = (...args: string[]) => jsonOf([...store.args, ...args]);

  /** `orders` (support.ts seedOrders), what streams reads. */
  beforeAll(async () => {
    rheo = store.open();
    admin = new RheoAdmin(rheo);
    created = await seedOrders(rheo);
  });

  afterAll(async () => {
    await rheo.close();
    await store.cleanup();
  });

  it('streams: the service DTOs, exactly; a table for people; RHEO_URL names the store too', async () => {
    const streams = (await json('streams')) as Array<{ name: string }>;
    expect(streams).toEqual(await admin.streams());
    expect(streams.find((s) => s.name === 'orders')).toEqual({
      name: 'orders',
      partitions: 2,
      createdAt: created.toISOString(),
      retention: null,
      highWatermarks: [2, 1],
      highWatermark: 3,
    });
    const table = await run('streams');
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^STREAM +PARTITIONS +EVENTS +RETENTION +CREATED\n/);
    expect(table.stdout).toMatch(new RegExp(`^orders +2 +3 +keep all +${created.toISOString()}$`, 'm'));
    // The URL from the environment (the bin's), --json before the command.
    const [, url, ...rest] = store.args;
    const byEnv = await bin(['--json', ...rest, 'streams'], { RHEO_URL: url });
    expect({ code: byEnv.code, streams: JSON.parse(byEnv.stdout) }).toEqual({ code: 0, streams });
  });

  // On the bin: follow stops on the process's SIGTERM, and listens on process.stdout.
  it('tail --follow --json: one event per line as they come; SIGTERM ends it with 0', async () => {
    await rheo.createStream('live', { partitions: 2 });
    const first = await rheo.append('live', { id: 'l1', partition: 1, payload: 1 });
    const child = spawn(process.execPath, [MAIN, ...store.args, 'tail', 'live', '--follow', '--json', '--interval', '50']);
    const lines = linesOf(child);
    expect(JSON.parse(await lines.next())).toEqual(summary(first));
    const second = await rheo.append('live', { id: 'l2', partition: 0, payload: 2 });
    expect(JSON.parse(await lines.next())).toEqual(summary(second));
    child.kill('SIGTERM');
    expect(await exitOf(child)).toBe(0);
  });
});

/** The lines a child prints, one `next()` at a time (rejects if the child ends first). */
function linesOf(child: ChildProcess): { next(): Promise<string> } {
  const ready: string[] = [];
  const waiting: Array<{ resolve: (line: string) => void; reject: (err: Error) => void }> = [];
  let buffered = '';
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdout!.on('data', (chunk: Buffer) => {
    buffered += chunk.toString();
    let at: number;
    while ((at = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, at);
      buffered = buffered.slice(at + 1);
      const waiter = waiting.shift();
      if (waiter) waiter.resolve(line);
      else ready.push(line);
    }
  });
  child.on('exit', (code) => {
    for (const w of waiting.splice(0)) w.reject(new Error(`the child exited (${code}) first: ${stderr}`));
  });
  return {
    next: () =>
      ready.length > 0
        ? Promise.resolve(ready.shift()!)
        : new Promise((resolve, reject) => {
            if (child.exitCode !== null) reject(new Error(`the child exited (${child.exitCode}) first: ${stderr}`));
            else waiting.push({ resolve, reject });
          }),
  };
}

function exitOf(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.on('exit', (code) => resolve(code)));
}

/** How `child` ended: its exit code and stderr, or "still running" if it has not ended within 10 s. */
function endOf(child: ChildProcess): Promise<{ code: number | null | string; stderr: string }> {
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve({ code: 'still running after 10 s', stderr }), 10_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    });
  });
}
