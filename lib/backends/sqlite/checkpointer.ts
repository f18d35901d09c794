// WAL checkpoints off the event loop. In WAL mode a commit that finds the log past
// `wal_autocheckpoint` pages (1,000 by default) copies it into the database file
// and syncs both (synchronous = NORMAL), inside that commit: on this machine's
// disk an fsync takes 2.7 ms at the median and up to 16 ms, and copying 1,000
// pages a few more, so about one commit in a hundred or so stalled the whole
// process (better-sqlite3 is synchronous: the stall is the event loop's), and a
// trim, which writes many pages, made it happen often.
//
// So a backend that owns its file gives the copying to a worker thread with its
// own connection: a PASSIVE checkpoint runs beside the writer (it takes no write
// lock). The backend's own connection keeps an automatic checkpoint ten times
// further out. It is still needed: the log can start over from its beginning
// only when a write begins with every frame copied, which a worker racing a
// busy writer rarely sees; the backend's checkpoint, after the worker's, has a
// few frames left to copy, but the two syncs (and the sync of the restarted
// log's header) stay on the loop, now once per 10,000 pages instead of 1,000.
// Measured with claims (append, fetch 1, ack) while a trim deletes a million
// events: claim p99 1.4-1.9 ms with the worker, 5.0-5.5 ms without; the slowest
// claim, one of those syncs, about 20-28 ms either way.
import { Worker } from 'node:worker_threads';

/** How often the worker copies the log into the database file. */
export const CHECKPOINT_EVERY_MS = 10;
/** The backend connection's own automatic checkpoint, pages: what lets the log start over (see above), or all of it if the worker is gone. */
export const FALLBACK_AUTOCHECKPOINT_PAGES = 10_000;

// Plain JavaScript, run with `eval`: the worker must load nothing of ours (the
// library may run from TypeScript sources). It exits when told to, or when its
// connection fails (the backend then falls back to automatic checkpoints).
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file, { fileMustExist: true });
db.pragma('busy_timeout = 0');
db.pragma('synchronous = NORMAL');
const checkpoint = () => {
  try { db.pragma('wal_checkpoint(PASSIVE)'); } catch (err) { /* busy: the next round */ }
};
const timer = setInterval(checkpoint, workerData.everyMs);
parentPort.on('message', (m) => {
  if (m !== 'close') return;
  clearInterval(timer);
  checkpoint();
  db.close();
  parentPort.close();
});
`;

/** A worker thread that checkpoints one database file's WAL. */
export class Checkpointer {
  private worker: Worker | null;
  private readonly exited: Promise<void>;

  /**
   * `driver`: the resolved path of better-sqlite3 (the worker loads the same one).
   * `onFailure`: called once if the worker dies, so the backend can restore
   * automatic checkpoints.
   */
  constructor(file: string, driver: string, onFailure: (err: unknown) => void) {
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { file, driver, everyMs: CHECKPOINT_EVERY_MS } });
    worker.unref(); // never what keeps a process alive
    this.worker = worker;
    let failed = false;
    worker.on('error', (err) => {
      failed = true;
      this.worker = null;
      onFailure(err);
    });
    this.exited = new Promise<void>((resolve) => {
      worker.on('exit', (code) => {
        if (code !== 0 && !failed && this.worker) {
          this.worker = null;
          onFailure(new Error(`the checkpoint worker exited with code ${code}`));
        }
        resolve();
      });
    });
  }

  /** Stop the worker after one last checkpoint; resolves when it has exited. */
  async close(): Promise<void> {
    const w = this.worker;
    this.worker = null;
    if (!w) return this.exited;
    // Referenced while we wait for it: otherwise a process with nothing else
    // pending exits mid-close, and the code after `await close()` never runs.
    w.ref();
    w.postMessage('close');
    // A worker stuck in a checkpoint is stopped after a while: closing must end.
    const stop = setTimeout(() => void w.terminate(), 5000);
    stop.unref();
    await this.exited;
    clearTimeout(stop);
  }
}
