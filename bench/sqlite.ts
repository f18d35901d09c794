// SQLite: the library next to raw better-sqlite3 doing the same work, in a temp
// file, WAL, synchronous=NORMAL on both sides.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Rheo, sqliteBackend } from '../lib';
import { minimalAppend, minimalConsume, openMinimalQueue } from './minimal/sqlite';
import { benchAppend, benchConsume, emitLatency, emitRounds, payload, printTable, rate, roundsOf } from './harness';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const Database = require('better-sqlite3') as new (file: string) => {
  pragma(s: string): unknown;
  exec(s: string): void;
  prepare(s: string): { run(...a: unknown[]): unknown; all(...a: unknown[]): Array<Record<string, unknown>> };
  transaction<T>(fn: () => T): { immediate(): T };
  close(): void;
};

// RHEO_BENCH_N: a smaller run to check the bench prints (the figures are for the default).
const N = Number(process.env.RHEO_BENCH_N ?? 20_000);
const BATCH = 500;
const CLAIM = 100;

function rawDb(file: string) {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  return db;
}

/** Raw append: one transaction per batch of 500, one prepared INSERT per row, same columns and keys. */
function rawAppend(file: string): number {
  const db = rawDb(file);
  db.exec(`CREATE TABLE raw_events (stream TEXT NOT NULL, partition INTEGER NOT NULL, sequence INTEGER NOT NULL, id TEXT NOT NULL,
    ts INTEGER NOT NULL, key TEXT, type TEXT, metadata TEXT NOT NULL, payload TEXT NOT NULL,
    PRIMARY KEY (stream, partition, sequence), UNIQUE (stream, id))`);
  const insert = db.prepare(`INSERT INTO raw_events VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`);
  const t0 = performance.now();
  for (let i = 0; i < N; i += BATCH) {
    db.transaction(() => {
      for (let j = i; j < Math.min(N, i + BATCH); j++)
        insert.run('raw', 0, j + 1, `id-${j}`, Date.now(), `k${j % 64}`, 'quote', '{}', JSON.stringify(payload(j)));
    }).immediate();
  }
  const ms = performance.now() - t0;
  db.close();
  return rate(N, ms);
}

/** Raw consume: claim 100 (mark locked) in one transaction, then ack them (delete) in another, until empty. */
function rawConsume(file: string): number {
  const db = rawDb(file);
  db.exec(`CREATE TABLE raw_queue (id INTEGER PRIMARY KEY, payload TEXT NOT NULL, locked_until INTEGER NOT NULL DEFAULT 0)`);
  const fill = db.prepare(`INSERT INTO raw_queue (id, payload) VALUES (?, ?)`);
  db.transaction(() => {
    for (let i = 1; i <= N; i++) fill.run(i, JSON.stringify(payload(i)));
  }).immediate();
  const pick = db.prepare(`SELECT id, payload FROM raw_queue WHERE locked_until <= ? ORDER BY id LIMIT ?`);
  const lock = db.prepare(`UPDATE raw_queue SET locked_until = ? WHERE id = ?`);
  const ack = db.prepare(`DELETE FROM raw_queue WHERE id = ?`);
  const t0 = performance.now();
  for (;;) {
    const now = Date.now();
    const rows = db
      .transaction(() => {
        const got = pick.all(now, CLAIM);
        for (const r of got) lock.run(now + 30_000, r.id);
        return got.map((r) => ({ id: r.id, payload: JSON.parse(r.payload as string) }));
      })
      .immediate();
    if (rows.length === 0) break;
    db.transaction(() => {
      for (const r of rows) ack.run(r.id);
    }).immediate();
  }
  const ms = performance.now() - t0;
  db.close();
  return rate(N, ms);
}

/** append N in batches of 500, consume N through a Consumer (maxDemand 100, concurrency 16), each next to the raw table and the minimal queue; latency idle (pollMs 1000) and while N drain. */
export async function main(args: string[] = []): Promise<void> {
  const rounds = roundsOf(args);
  const dir = mkdtempSync(join(tmpdir(), 'rheo-bench-sqlite-'));
  const rheo = new Rheo(sqliteBackend({ database: join(dir, 'rheo.db') }));
  try {
    // Each round: a stream, raw databases and a minimal queue database of its own.
    await emitRounds('sqlite', N, rounds, async (k) => {
      const stream = `bench${k}`;
      await rheo.createStream(stream);
      await rheo.createGroup(stream, 'consumers');
      const minimal = openMinimalQueue(join(dir, `minimal${k}.db`));
      try {
        const append = {
          raw: rawAppend(join(dir, `raw-append${k}.db`)),
          minimal: await minimalAppend(minimal, N, BATCH),
          ours: (await benchAppend(rheo, stream, N, BATCH)).eventsPerSec,
        };
        const consume = {
          raw: rawConsume(join(dir, `raw-consume${k}.db`)),
          minimal: await minimalConsume(minimal, N, { workers: 16, claim: CLAIM }),
          ours: (await benchConsume(rheo, stream, 'consumers', N, { maxDemand: 100, concurrency: 16 })).eventsPerSec,
        };
        return { append, consume };
      } finally {
        minimal.close();
      }
    });

    await emitLatency(rheo, 'sqlite', { backlog: N, batch: BATCH });
    printTable();
  } finally {
    await rheo.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
