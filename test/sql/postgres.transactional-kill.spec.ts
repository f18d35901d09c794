// Issue 13's acceptance test for transactional consumers: 3 worker processes on
// PostgreSQL, the longest-running one SIGKILLed every second (and restarted)
// while 10,000 events flow; each handler inserts one business row keyed by
// nothing but a serial id. With `transactional: true` the table ends with exactly
// one row per event. The same run without it is reported (its duplicates depend
// on where each kill lands, so their count is printed, not asserted).
import { type ChildProcess, fork } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { postgresBackend, Rheo } from '../../lib';
import { childEnv, compileTree } from '../support/compiled-tree';
import type { WorkerConfig } from './fixtures/transactional-worker';
import { dropSchema, freshSchema, PG_URL } from './pg-helpers';

const schema = freshSchema('txkill');
const EVENTS = 10_000;
const WORKERS = 3;
const KILL_EVERY_MS = 1000;
/**
 * The run fails with what it saw when the lag has not gone down for this long
 * (a stall), or when it lasts longer than RUN_DEADLINE_MS in all. On a loaded
 * machine restarts are slow; progress, not a wall-clock figure, is what is checked.
 */
const STALL_MS = 30_000;
const RUN_DEADLINE_MS = 300_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Worker {
  proc: ChildProcess;
  /** When it said it consumes (null until then). */
  readyAt: number | null;
  exited: Promise<void>;
}

/** The worker and the library, as plain JavaScript: a worker restarted every second must start cheaply (compiled-tree.ts). */
let compiled: string;

function startWorker(config: WorkerConfig): Worker {
  const proc = fork(join(compiled, 'test', 'sql', 'fixtures', 'transactional-worker.js'), [], {
    env: childEnv({ RHEO_TX_WORKER: JSON.stringify(config) }),
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const worker: Worker = { proc, readyAt: null, exited: new Promise((resolve) => proc.on('close', () => resolve())) };
  proc.on('message', (m: { k?: string }) => {
    if (m?.k === 'ready') worker.readyAt = Date.now();
  });
  return worker;
}

describe('postgres: transactional consumers under SIGKILL', () => {
  const rheo = new Rheo(postgresBackend({ url: PG_URL, schema, poolSize: 4 }));
  let ds: DataSource;

  beforeAll(async () => {
    compiled = compileTree(['lib/core', 'lib/runtime', 'lib/backends', 'test/sql/fixtures/transactional-worker.ts']);
    await rheo.init();
    ds = new DataSource({ type: 'postgres', url: PG_URL, poolSize: 2 });
    await ds.initialize();
  });

  afterAll(async () => {
    await ds?.destroy();
    await rheo.close();
    await dropSchema(schema);
    if (compiled) rmSync(compiled, { recursive: true, force: true });
  });

  /** One run: workers up, events in, a kill a second until every event is acked; then the business table's counts. */
  async function run(transactional: boolean) {
    const stream = transactional ? 'tx' : 'plain';
    const table = `"${schema}"."business_${stream}"`;
    await ds.query(`CREATE TABLE ${table} (id bigserial PRIMARY KEY, event_id text NOT NULL)`);
    await rheo.createStream(stream, { partitions: 4 });
    // Kills charge attempts to every lease a worker held: attempts must not be what ends an event here.
    await rheo.createGroup(stream, 'g', { maxAttempts: 1000, retry: { initialMs: 10, maxMs: 100 } });
    const config: WorkerConfig = { url: PG_URL, schema, stream, group: 'g', table, transactional };
    const workers = Array.from({ length: WORKERS }, () => startWorker(config));
    const started = Date.now();
    let kills = 0;
    try {
      while (workers.some((w) => w.readyAt === null)) {
        if (Date.now() - started > RUN_DEADLINE_MS) throw new Error('workers did not start');
        await sleep(50);
      }
      for (let i = 0; i < EVENTS; i += 1000) {
        await rheo.appendBatch(
          stream,
          Array.from({ length: 1000 }, (_, j) => ({ key: `k${(i + j) % 101}`, payload: { n: i + j } })),
        );
      }
      let nextKill = Date.now() + KILL_EVERY_MS;
      let lowest = Infinity;
      let lastProgress = Date.now();
      for (;;) {
        const lag = (await rheo.lag(stream, 'g')).lag;
        if (lag === 0) break;
        if (lag < lowest) [lowest, lastProgress] = [lag, Date.now()];
        if (Date.now() - lastProgress > STALL_MS) throw new Error(`lag stuck at ${lag} for ${STALL_MS} ms (${kills} kills)`);
        if (Date.now() - started > RUN_DEADLINE_MS) throw new Error(`lag still ${lag} after ${RUN_DEADLINE_MS} ms (${kills} kills)`);
        if (Date.now() >= nextKill) {
          nextKill = Date.now() + KILL_EVERY_MS;
          // The worker consuming longest, once it has consumed for a whole period: a kill of one still
          // starting would prove nothing, and on a loaded machine would stop the run from progressing.
          const victim = workers
            .map((w, i) => ({ w, i }))
            .filter(({ w }) => w.readyAt !== null && Date.now() - w.readyAt >= KILL_EVERY_MS)
            .sort((a, b) => a.w.readyAt! - b.w.readyAt!)[0];
          if (victim) {
            victim.w.proc.kill('SIGKILL');
            await victim.w.exited;
            kills++;
            workers[victim.i] = startWorker(config);
          }
        }
        await sleep(50);
      }
    } finally {
      // Every event is acked (or the run failed): nothing a worker still does can commit a business row in a
      // transactional run, since its fence finds no live lease. Kill them all.
      for (const w of workers) w.proc.kill('SIGKILL');
      await Promise.all(workers.map((w) => w.exited));
    }
    const [counts] = (await ds.query(`SELECT count(*)::int AS rows, count(DISTINCT event_id)::int AS events FROM ${table}`)) as Array<{
      rows: number;
      events: number;
    }>;
    return { ...counts, kills, ms: Date.now() - started };
  }

  it(
    'with transactional: true, exactly one business row per event',
    async () => {
      const r = await run(true);
      process.stdout.write(
        `transactional: ${r.rows} business rows for ${r.events} events, ${r.kills} SIGKILLs, ${Math.round(r.ms / 1000)} s\n`,
      );
      expect(r.kills).toBeGreaterThan(0);
      expect(r.events).toBe(EVENTS);
      expect(r.rows).toBe(EVENTS);
      expect(await rheo.countDeadLetters('tx', 'g')).toBe(0);
    },
    RUN_DEADLINE_MS + 20_000,
  );

  it(
    'without it (at-least-once): every event has a row, and kills leave duplicates (reported)',
    async () => {
      const r = await run(false);
      process.stdout.write(
        `not transactional: ${r.rows} business rows for ${r.events} events: ${r.rows - r.events} duplicates, ` +
          `${r.kills} SIGKILLs, ${Math.round(r.ms / 1000)} s\n`,
      );
      expect(r.events).toBe(EVENTS);
      expect(r.rows).toBeGreaterThanOrEqual(EVENTS);
    },
    RUN_DEADLINE_MS + 20_000,
  );
});
