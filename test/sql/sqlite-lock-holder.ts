import { ChildProcess, spawn } from 'node:child_process';
import { performance, monitorEventLoopDelay } from 'node:perf_hooks';

/**
 * Another process holding a lock on a SQLite file: a child running better-sqlite3
 * directly (no Rheo), so the lock is a real file lock the kernel arbitrates.
 * - 'write': `BEGIN IMMEDIATE`, the write lock (readers still read, in WAL mode);
 * - 'exclusive': `locking_mode = EXCLUSIVE` and a read, so nobody else can even
 *   read or switch the journal mode until the child closes the file;
 * - 'commit': the write lock, and a row written to a scratch table when it commits
 *   (a change every older read snapshot misses).
 */
export interface LockHolder {
  /** performance.now() in this process when the child reported the lock taken. */
  lockedAt: number;
  /** Resolves when the child has released the lock and exited. */
  released: Promise<void>;
  child: ChildProcess;
}

const SCRIPT = `
const [driver, file, mode, holdMs] = process.argv.slice(1);
const Database = require(driver);
const db = new Database(file);
if (mode === 'exclusive') {
  db.pragma('locking_mode = EXCLUSIVE');
  db.exec('BEGIN EXCLUSIVE');
  db.prepare('SELECT count(*) FROM sqlite_master').get();
} else {
  db.exec('BEGIN IMMEDIATE');
  if (mode === 'commit') db.exec('CREATE TABLE IF NOT EXISTS scratch (x); INSERT INTO scratch VALUES (1)');
}
process.stdout.write('locked\\n');
setTimeout(() => {
  db.exec('COMMIT');
  db.close();
  process.stdout.write('released\\n');
  process.exit(0);
}, Number(holdMs));
`;

export function holdLock(file: string, mode: 'write' | 'exclusive' | 'commit', holdMs: number): Promise<LockHolder> {
  const child = spawn(process.execPath, ['-e', SCRIPT, require.resolve('better-sqlite3'), file, mode, String(holdMs)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (b) => (stderr += String(b)));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (b) => {
      out += String(b);
      if (out.includes('locked\n') && !out.includes('released')) {
        out = out.replace('locked\n', '');
        resolve({
          lockedAt: performance.now(),
          child,
          released: exited.then((code) => {
            if (code !== 0) throw new Error(`lock holder exited with ${code}: ${stderr}`);
          }),
        });
      }
    });
    exited.then((code) => reject(new Error(`lock holder exited with ${code} before taking the lock: ${stderr}`)));
  });
}

/** What the event loop went through while `work` ran: p99 and max delay (ms), and how long the work took. */
export async function loopDelayDuring<T>(
  work: () => Promise<T>,
): Promise<{ outcome: PromiseSettledResult<T>; p99Ms: number; maxMs: number; tookMs: number }> {
  const histogram = monitorEventLoopDelay({ resolution: 10 });
  histogram.enable();
  // Its first tick only starts the clock: a stall before it would go unrecorded. Let it tick first.
  await new Promise((resolve) => setTimeout(resolve, 50));
  const started = performance.now();
  const [outcome] = await Promise.allSettled([work()]);
  const tookMs = performance.now() - started;
  // The histogram samples on a timer: a stall is recorded when that timer finally runs, after
  // it. Let it run (a few resolutions) before reading, or a loop blocked to the very end of
  // the work would show no delay at all.
  await new Promise((resolve) => setTimeout(resolve, 50));
  histogram.disable();
  return { outcome, p99Ms: histogram.percentile(99) / 1e6, maxMs: histogram.max / 1e6, tookMs };
}
