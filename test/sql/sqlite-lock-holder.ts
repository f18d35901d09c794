import { ChildProcess, spawn } from 'node:child_process';

/**
 * Another process holding a lock on a SQLite file: a child running better-sqlite3
 * directly (no Rheo), so the lock is a real file lock the kernel arbitrates. It
 * holds the lock until told to let go ({@link LockHolder.release}), so what a test
 * sees while it is held does not depend on how fast the machine is.
 * - 'write': `BEGIN IMMEDIATE`, the write lock (readers still read, in WAL mode);
 * - 'exclusive': `locking_mode = EXCLUSIVE` and a read, so nobody else can even
 *   read or switch the journal mode until the child closes the file;
 * - 'commit': the write lock, and a row written to a scratch table when it commits
 *   (a change every older read snapshot misses).
 */
export interface LockHolder {
  /** Commit, close the file and exit; resolves once the child has. */
  release(): Promise<void>;
  /** Whether the child still holds the lock (it has not been told to release it). */
  readonly holding: boolean;
  child: ChildProcess;
}

const SCRIPT = `
const [driver, file, mode] = process.argv.slice(1);
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
process.stdin.once('data', () => {
  db.exec('COMMIT');
  db.close();
  process.exit(0);
});
`;

export function holdLock(file: string, mode: 'write' | 'exclusive' | 'commit'): Promise<LockHolder> {
  const child = spawn(process.execPath, ['-e', SCRIPT, require.resolve('better-sqlite3'), file, mode], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (b) => (stderr += String(b)));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  let holding = true;
  const release = async () => {
    if (holding) {
      holding = false;
      child.stdin!.end('release\n');
    }
    const code = await exited;
    if (code !== 0) throw new Error(`lock holder exited with ${code}: ${stderr}`);
  };
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (b) => {
      out += String(b);
      if (out.includes('locked\n')) {
        out = '';
        resolve({
          release,
          get holding() {
            return holding;
          },
          child,
        });
      }
    });
    exited.then((code) => reject(new Error(`lock holder exited with ${code} before taking the lock: ${stderr}`)));
  });
}

/** An operation under way, and what the event loop did while it was. */
export interface Watched<T> {
  /** Timer rounds the event loop ran since the operation started and until it settled. */
  readonly turns: number;
  /** Whether it has settled. */
  readonly settled: boolean;
  /** Its outcome, and the rounds the loop ran while it was pending. */
  done: Promise<{ outcome: PromiseSettledResult<T>; turns: number }>;
}

/**
 * Start `work` and count the event loop's timer rounds until it settles: an
 * operation that waits for a lock on timers lets the loop turn; one that sleeps
 * inside SQLite's busy handler freezes it, and settles with no round counted.
 */
export function watch<T>(work: () => Promise<T>): Watched<T> {
  let turns = 0;
  let settled = false;
  const ticker = setInterval(() => turns++, 1);
  const done = Promise.allSettled([work()]).then(([outcome]) => {
    settled = true;
    clearInterval(ticker);
    return { outcome, turns };
  });
  return {
    get turns() {
      return turns;
    },
    get settled() {
      return settled;
    },
    done,
  };
}
