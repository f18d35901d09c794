import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Rheo, sqliteBackend } from '../../lib';
import { leaseHistories, leaseViolations, startConsumers } from '../support/multiprocess';

// SQLite is single-node, not single-process: consumer processes on one host may
// share the file (WAL, busy timeout, BEGIN IMMEDIATE). Two of them share a group;
// one is SIGKILLed half-way and the other finishes its expired leases.
const dir = mkdtempSync(join(tmpdir(), 'rheo-sqlite-mp-'));
const database = join(dir, 'rheo.db');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('sqlite: consumer processes sharing one file', () => {
  const rheo = new Rheo(sqliteBackend({ database }));

  afterAll(async () => {
    await rheo.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('two processes share the work; a SIGKILLed one loses nothing and never leaves an event under two live leases', async () => {
    await rheo.createStream('mp', { partitions: 2 });
    await rheo.createGroup('mp', 'g');
    // Both children are up before the first event exists, so both get work.
    const consumers = await startConsumers(
      2,
      { name: 'sqlite', options: { database } },
      { stream: 'mp', group: 'g', maxDemand: 20, concurrency: 4, leaseMs: 3000, pollMs: 100, workMs: 1 },
    );
    const ids: string[] = [];
    try {
      for (let i = 0; i < 2000; i += 500)
        ids.push(
          ...(
            await rheo.appendBatch(
              'mp',
              Array.from({ length: 500 }, (_, j) => ({ key: `k${i + j}`, payload: i + j })),
            )
          ).map((e) => e.id),
        );
      for (let i = 0; i < 600 && consumers.children[0].handled < 300; i++) await sleep(50);
      expect(consumers.children[0].handled).toBeGreaterThanOrEqual(300);
      await consumers.kill(0);
      for (let i = 0; i < 1200 && (await rheo.lag('mp', 'g')).lag > 0; i++) await sleep(100);
    } finally {
      await consumers.stop();
    }
    expect(leaseViolations(leaseHistories(consumers.records), ids, [0])).toEqual([]);
    expect(await rheo.groupInfo('mp', 'g')).toMatchObject({ inflight: 0, deadLetters: 0, lag: { lag: 0 } });
    expect(consumers.children[1].handled).toBeGreaterThan(0);
  }, 180_000);
});
