// PostgreSQL: the library next to the raw pg driver doing the same work.
// RHEO_PG_URL overrides the machine's database. Runs in a throwaway schema.
import { Pool } from 'pg';
import { postgresBackend, Rheo } from '../lib';
import { createMinimalQueue, minimalAppend, minimalConsume } from './minimal/postgres';
import { benchPgBoss } from './peers/pg-boss';
import {
  benchAppend,
  benchConsume,
  emit,
  emitLatency,
  emitPeer,
  emitRounds,
  payload,
  printTable,
  rate,
  round,
  roundsOf,
  timeIt,
} from './harness';
import { PG_URL } from './pg-schema';

// RHEO_BENCH_N: a smaller run to check the bench prints (the figures are for the default).
const N = Number(process.env.RHEO_BENCH_N ?? 20_000);
const BATCH = 500;
const CLAIM = 100;

/** Raw append: multi-row INSERT of the same rows (same columns, keys and indexes) into a plain table. */
async function rawAppend(pool: Pool, schema: string, k: number): Promise<number> {
  await pool.query(`CREATE TABLE "${schema}".raw_events${k} (
    stream text NOT NULL, partition int NOT NULL, sequence bigint NOT NULL, id text NOT NULL, ts bigint NOT NULL,
    key text, type text, metadata json NOT NULL, payload json NOT NULL,
    PRIMARY KEY (stream, partition, sequence), UNIQUE (stream, id))`);
  const { ms } = await timeIt(async () => {
    for (let i = 0; i < N; i += BATCH) {
      const values: string[] = [];
      const params: unknown[] = [];
      for (let j = i; j < Math.min(N, i + BATCH); j++) {
        const b = params.length;
        values.push(`($${b + 1}, $${b + 2}, $${b + 3}, $${b + 4}, $${b + 5}, $${b + 6}, $${b + 7}, $${b + 8}, $${b + 9})`);
        params.push('raw', 0, j + 1, `id-${j}`, Date.now(), `k${j % 64}`, 'quote', '{}', JSON.stringify(payload(j)));
      }
      await pool.query(
        `INSERT INTO "${schema}".raw_events${k} (stream, partition, sequence, id, ts, key, type, metadata, payload) VALUES ${values.join(',')}`,
        params,
      );
    }
  });
  return rate(N, ms);
}

/** Raw consume: a SKIP LOCKED claim of 100, then one batch ack (delete), until the queue is empty. */
async function rawConsume(pool: Pool, schema: string, k: number): Promise<number> {
  const q = `"${schema}".raw_queue${k}`;
  await pool.query(`CREATE TABLE ${q} (id bigint PRIMARY KEY, payload json NOT NULL, locked_until bigint NOT NULL DEFAULT 0)`);
  await pool.query(`INSERT INTO ${q} (id, payload) SELECT i, json_build_object('i', i) FROM generate_series(1, $1) i`, [N]);
  const { ms } = await timeIt(async () => {
    for (;;) {
      const now = Date.now();
      const { rows } = await pool.query(
        `WITH c AS (SELECT id FROM ${q} WHERE locked_until <= $1 ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED)
         UPDATE ${q} t SET locked_until = $1 + 30000 FROM c WHERE t.id = c.id RETURNING t.id, t.payload`,
        [now, CLAIM],
      );
      if (rows.length === 0) break;
      await pool.query(`DELETE FROM ${q} WHERE id = ANY($1::bigint[])`, [rows.map((r) => r.id)]);
    }
  });
  return rate(N, ms);
}

/**
 * append N in batches of 500, consume N through a Consumer (maxDemand 100, concurrency 16) and through a batch Consumer (size 100),
 * each next to the raw table and the minimal queue; pg-boss; latency idle (pollMs 1000) and while N drain.
 */
export async function main(args: string[] = []): Promise<void> {
  const rounds = roundsOf(args);
  const schema = `rheo_bench_${process.pid}`;
  const pool = new Pool({ connectionString: PG_URL, max: 4 });
  // The minimal queue's own pool, of our backend's default size (10).
  const minimalPool = new Pool({ connectionString: PG_URL, max: 10 });
  const rheo = new Rheo(postgresBackend({ url: PG_URL, schema }));
  try {
    await rheo.init();
    // Each round: a stream, a raw table pair and a minimal queue of its own.
    const ours = await emitRounds('postgres', N, rounds, async (k) => {
      const stream = `bench${k}`;
      await rheo.createStream(stream);
      await rheo.createGroup(stream, 'consumers');
      const minimalQ = await createMinimalQueue(minimalPool, schema, k);
      const append = {
        raw: await rawAppend(pool, schema, k),
        minimal: await minimalAppend(minimalPool, minimalQ, N, BATCH),
        ours: (await benchAppend(rheo, stream, N, BATCH)).eventsPerSec,
      };
      const consume = {
        raw: await rawConsume(pool, schema, k),
        minimal: await minimalConsume(minimalPool, minimalQ, N, { workers: 16, claim: CLAIM }),
        ours: (await benchConsume(rheo, stream, 'consumers', N, { maxDemand: 100, concurrency: 16 })).eventsPerSec,
      };
      return { append, consume };
    });

    // The same N events again, through a batch handler (a group of its own, from the beginning).
    await rheo.createGroup('bench0', 'batch-consumers');
    // A batch handler: one claim and one settleMany per batch instead of settles coalesced from single handlers.
    const batched = (await benchConsume(rheo, 'bench0', 'batch-consumers', N, { batch: { size: CLAIM, maxWaitMs: 50 } })).eventsPerSec;
    emit({
      backend: 'postgres',
      op: `consume (batch ${CLAIM})`,
      events: N,
      eventsPerSec: batched,
      ratio: round(batched / ours.consume.raw),
    });

    // The peer on the same database, same N, same payloads (beside our medians).
    const boss = await benchPgBoss(PG_URL, N, BATCH);
    emitPeer('pg-boss', 'append', N, boss.append, ours.append.ours);
    emitPeer('pg-boss', 'consume', N, boss.consume, ours.consume.ours);

    await emitLatency(rheo, 'postgres', { backlog: N, batch: BATCH });
    printTable();
  } finally {
    await rheo.close();
    await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
    await pool.end();
    await minimalPool.end();
  }
}
