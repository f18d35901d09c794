// The least work a durable queue can do on SQLite, to measure our design against
// the store's limit (issue 15). better-sqlite3 directly, a file of its own, the
// pragmas our backend sets (journal_mode WAL, synchronous NORMAL; SQLite's own
// autocheckpoint, where ours checkpoints from a worker thread). One table:
//   q (id INTEGER PRIMARY KEY, state INTEGER, lease_until INTEGER, payload TEXT).
// Append: one prepared INSERT per row, one transaction per batch.
// Consume: `workers` concurrent async loops on the one connection; each claims
// `claim` rows in one statement,
//   UPDATE q SET state = 1, lease_until = ? WHERE id IN
//     (SELECT id FROM q WHERE state = 0 ORDER BY id LIMIT ?) RETURNING id, payload
// hands each JSON.parse'd payload to a no-op async handler, then acks the batch
// in one statement (`DELETE FROM q WHERE id IN (SELECT value FROM json_each(?))`).
// Until all `n` rows are gone.
// What it skips, compared with ours: streams, partitions and sequences (the rowid
// is the order), consumer groups (one queue, deleting is the ack: no log kept, no
// replay), per-key ordering, the frontier, fencing tokens and attempt counts (the
// ack does not check it still holds the lease), retries, dead letters, delays,
// lease expiry and renewal (lease_until is written, never read), the lock waiter
// and connection gate (one connection, nobody else), wake-ups (workers claim again
// at once), event ids, types, keys, metadata and timestamps.
import { payload, rate, timeIt } from '../harness';

interface Statement {
  run(...params: unknown[]): unknown;
  all(...params: unknown[]): Array<Record<string, unknown>>;
}
interface Database {
  pragma(s: string): unknown;
  exec(s: string): void;
  prepare(s: string): Statement;
  transaction<T>(fn: () => T): { immediate(): T };
  close(): void;
}
// eslint-disable-next-line @typescript-eslint/no-require-imports
const Sqlite = require('better-sqlite3') as new (file: string) => Database;

/** Open `file` (new) with our backend's pragmas and create the queue table. */
export function openMinimalQueue(file: string): Database {
  const db = new Sqlite(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.exec(`CREATE TABLE q (id INTEGER PRIMARY KEY, state INTEGER NOT NULL DEFAULT 0, lease_until INTEGER, payload TEXT NOT NULL)`);
  return db;
}

/** Append `n` payload() rows in transactions of `batch`. Events per second. */
export async function minimalAppend(db: Database, n: number, batch: number): Promise<number> {
  const insert = db.prepare(`INSERT INTO q (payload) VALUES (?)`);
  const { ms } = await timeIt(async () => {
    for (let i = 0; i < n; i += batch) {
      db.transaction(() => {
        for (let j = i; j < Math.min(n, i + batch); j++) insert.run(JSON.stringify(payload(j)));
      }).immediate();
    }
  });
  return rate(n, ms);
}

/** Consume the `n` rows with `workers` concurrent loops claiming `claim` at a time. Events per second. */
export async function minimalConsume(db: Database, n: number, options: { workers: number; claim: number }): Promise<number> {
  const claim = db.prepare(
    `UPDATE q SET state = 1, lease_until = ? WHERE id IN (SELECT id FROM q WHERE state = 0 ORDER BY id LIMIT ?) RETURNING id, payload`,
  );
  const ack = db.prepare(`DELETE FROM q WHERE id IN (SELECT value FROM json_each(?))`);
  const handler = async (_payload: unknown) => undefined;
  let consumed = 0;
  const worker = async () => {
    while (consumed < n) {
      const rows = claim.all(Date.now() + 30_000, options.claim);
      if (rows.length === 0) {
        await new Promise((r) => setImmediate(r)); // the rest are claimed by other workers
        continue;
      }
      await Promise.all(rows.map((r) => handler(JSON.parse(r.payload as string))));
      ack.run(JSON.stringify(rows.map((r) => r.id)));
      consumed += rows.length;
    }
  };
  const { ms } = await timeIt(() => Promise.all(Array.from({ length: options.workers }, worker)));
  return rate(n, ms);
}
