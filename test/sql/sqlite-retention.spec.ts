// Retention on SQLite beyond the conformance suite: time lookups with timestamps
// out of order, a trim that shares the one connection with a caller that never
// yields, an interrupted trim's leftovers, retention seen across processes, and
// WAL checkpoints handed to the worker thread.
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { ManualClock, Rheo, sqliteBackend } from '../../lib';

const dir = mkdtempSync(join(tmpdir(), 'rheo-sqlite-retention-'));
const file = join(dir, 'r.db');
const clock = new ManualClock(Date.UTC(2026, 0, 1));
const rheo = new Rheo(sqliteBackend({ database: file, clock }));
let n = 0;
const name = (prefix: string) => `${prefix}-${++n}`;

afterAll(async () => {
  await rheo.close();
  rmSync(dir, { recursive: true, force: true });
});

async function raw<T>(sql: string, params: unknown[] = []): Promise<T[]> {
  const ds = new DataSource({ type: 'better-sqlite3', database: file });
  await ds.initialize();
  try {
    return (await ds.query(sql, params)) as T[];
  } finally {
    await ds.destroy();
  }
}

describe('sqlite retention', () => {
  it('finds the first event in sequence order stamped at or after a time, however the timestamps are ordered', async () => {
    const stream = name('times');
    await rheo.createStream(stream);
    const t = clock.now();
    // Sequence:   1      2      3      4      5
    // Stamped:  t+50   t+10   t+60   t+20   t+70
    await rheo.appendBatch(
      stream,
      [50, 10, 60, 20, 70].map((d) => ({ payload: d, timestamp: new Date(t + d) })),
    );
    const startAt = async (d: number) => {
      const group = name('g');
      await rheo.createGroup(stream, group, { start: { at: new Date(t + d) } });
      return (await rheo.lag(stream, group)).partitions[0].frontier;
    };
    expect(await startAt(0)).toBe(0);
    expect(await startAt(30)).toBe(0); // 1 (t+50) is the first stamped at or after t+30
    expect(await startAt(55)).toBe(2); // 3 (t+60)
    expect(await startAt(65)).toBe(4); // 5 (t+70)
    expect(await startAt(71)).toBe(5); // none: from the end
    const g = name('g');
    await rheo.createGroup(stream, g, { start: 'end' });
    expect(await rheo.replay(stream, g, { from: new Date(t + 55) })).toBe(3);
    expect((await rheo.fetch(stream, g, { limit: 10 })).map((l) => l.event.sequence)).toEqual([3, 4, 5]);
    // A trim by age takes the same point: events before the first stamped inside the age.
    await rheo.reset(stream, g, { confirm: true, start: 'end' });
    for (const other of (await rheo.listGroups(stream)).map((x) => x.group).filter((x) => x !== g)) {
      await rheo.reset(stream, other, { confirm: true, start: 'end' });
    }
    clock.set(t + 100);
    await rheo.setRetention(stream, { maxAgeMs: 45 }); // cut-off t+55: 1 and 2 go, 3 (t+60) stays
    expect((await rheo.trim(stream)).partitions).toEqual([{ partition: 0, trimmedTo: 2 }]);
  });

  it('makes progress and lets others in while a caller keeps the connection busy without ever yielding to the event loop', async () => {
    const stream = name('busy');
    await rheo.createStream(stream, { partitions: 2 });
    for (let i = 0; i < 20; i++)
      await rheo.appendBatch(
        stream,
        Array.from({ length: 1000 }, (_, j) => ({ key: `k${j}`, payload: j })),
      );
    await rheo.createGroup(stream, 'g', { start: 'end' }); // caught up: the whole history may go
    await rheo.setRetention(stream, { maxEvents: 5 });
    const done: { removed?: number } = {};
    const trimming = rheo.trim(stream).then((r) => (done.removed = r.removed));
    // Every await below resolves within the same turn of the event loop (SQLite answers
    // synchronously): a trim that waited for the next turn would never run again.
    let claims = 0;
    try {
      while (done.removed === undefined) {
        await rheo.append(stream, { key: 'probe', payload: claims });
        const [lease] = await rheo.fetch(stream, 'g', { limit: 1 });
        await rheo.ack(lease);
        claims++;
        if (claims > 20_000) throw new Error('the trim never finished');
      }
    } finally {
      await trimming;
    }
    expect(done.removed).toBeGreaterThanOrEqual(20_000 - 10);
    // The claims went on between the trim's chunks: the trim did not run in one go.
    expect(claims).toBeGreaterThan(10);
    expect((await rheo.lag(stream, 'g')).lag).toBe(0);
  });

  it('finishes what an interrupted trim left behind, and never shows it meanwhile', async () => {
    const stream = name('interrupted');
    await rheo.createStream(stream);
    await rheo.createGroup(stream, 'g', { start: 'end' });
    await rheo.appendBatch(
      stream,
      Array.from({ length: 10 }, (_, i) => ({ payload: i })),
    );
    // A trim that moved its point to 6 and stopped before deleting anything (a crash, say).
    await raw(`UPDATE rheo_partitions SET trimmed_to = 6 WHERE stream = ?`, [stream]);
    expect((await rheo.read(stream, { limit: 100 })).map((e) => e.sequence)).toEqual([7, 8, 9, 10]);
    expect((await rheo.read(stream, { afterSequence: 2, limit: 100 })).map((e) => e.sequence)).toEqual([7, 8, 9, 10]);
    await rheo.setRetention(stream, { maxEvents: 8 }); // a point (2) below the stored one: the stored one holds
    const result = await rheo.trim(stream);
    expect(result).toMatchObject({ removed: 6, partitions: [{ partition: 0, trimmedTo: 6 }] });
    expect(await raw(`SELECT min(sequence) AS s FROM rheo_events WHERE stream = ?`, [stream])).toEqual([{ s: 7 }]);
  });

  it('a forced trim leaves no delivery at or below its point', async () => {
    const stream = name('forced');
    await rheo.createStream(stream);
    await rheo.appendBatch(
      stream,
      Array.from({ length: 50 }, (_, i) => ({ payload: i })),
    );
    await rheo.createGroup(stream, 'g');
    const leases = await rheo.fetch(stream, 'g', { limit: 30 });
    await rheo.nack(leases[3], { delayMs: 60_000 });
    await rheo.setRetention(stream, { maxEvents: 10 });
    const result = await rheo.trim(stream, { force: true });
    expect(result.skipped).toEqual({ g: 40 });
    expect(await raw(`SELECT count(*) AS n FROM rheo_deliveries WHERE stream = ? AND sequence <= 40`, [stream])).toEqual([{ n: 0 }]);
    await expect(rheo.ack(leases[29])).rejects.toMatchObject({ code: 'stale_lease' });
    expect((await rheo.fetch(stream, 'g', { limit: 100 })).map((l) => l.event.sequence)).toEqual(
      Array.from({ length: 10 }, (_, i) => 41 + i),
    );
  });

  it('serves the retention another process set, not a cached copy', async () => {
    const stream = name('shared');
    await rheo.createStream(stream, { retention: { maxEvents: 100 } });
    const other = new Rheo(sqliteBackend({ database: file, clock }));
    try {
      expect((await other.backend.getStream(stream))?.retention).toEqual({ maxEvents: 100 });
      await rheo.setRetention(stream, { maxAgeMs: 5000, deadLetterMaxAgeMs: 60_000 });
      expect((await other.backend.getStream(stream))?.retention).toEqual({ maxAgeMs: 5000, deadLetterMaxAgeMs: 60_000 });
      expect((await other.listStreams()).find((s) => s.name === stream)?.retention).toEqual({
        maxAgeMs: 5000,
        deadLetterMaxAgeMs: 60_000,
      });
      await other.setRetention(stream, {});
      expect((await rheo.backend.getStream(stream))?.retention).toBeUndefined();
    } finally {
      await other.close();
    }
  });

  it('copies the log into the database file from the worker thread, with no commit checkpointing', async () => {
    const walFile = join(dir, 'wal.db');
    const own = new Rheo(sqliteBackend({ database: walFile }));
    try {
      await own.createStream('w');
      const before = statSync(walFile).size;
      // About 1.5 MB of pages: below even SQLite's default automatic checkpoint (1,000 pages), so only the worker copies them.
      for (let i = 0; i < 3; i++)
        await own.appendBatch(
          'w',
          Array.from({ length: 250 }, () => ({ payload: 'x'.repeat(2000) })),
        );
      let grown = false;
      for (let wait = 0; wait < 500 && !grown; wait++) {
        await new Promise((r) => setTimeout(r, 20));
        grown = statSync(walFile).size > before + 1_000_000;
      }
      expect(grown).toBe(true);
    } finally {
      await own.close();
    }
  });
});
