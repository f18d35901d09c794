// The least work a durable queue can do on PostgreSQL, to measure our design
// against the store's limit (issue 15). One table of its own:
//   q (id bigserial PRIMARY KEY, state text, lease_until bigint, payload jsonb), logged, default commit settings.
// Append: one statement per batch, `INSERT INTO q (payload) SELECT unnest($1::jsonb[])`,
// one batch after another on one connection.
// Consume: `workers` loops sharing a pool of `poolSize` connections (our backend's
// default pool is 10); each claims `claim` rows with
//   WITH c AS (SELECT id FROM q WHERE state = 'ready' ORDER BY id FOR UPDATE SKIP LOCKED LIMIT $1)
//   UPDATE q SET state = 'leased', lease_until = $2 FROM c WHERE q.id = c.id RETURNING q.id, q.payload
// hands each row to a no-op async handler, then acks the batch in one statement
// (`DELETE FROM q WHERE id = ANY($1)`). Until all `n` rows are gone. Every
// statement is a named prepared statement (planned once per connection), as ours are.
// What it skips, compared with ours: streams, partitions and sequences (the id is
// the order), consumer groups (one queue, deleting is the ack: no log kept, no
// replay), per-key ordering, the frontier, fencing tokens and attempt counts (the
// ack does not check it still holds the lease), retries, dead letters, delays,
// lease expiry and renewal (lease_until is written, never read), wake-ups
// (workers claim again at once), event ids, types, keys, metadata and timestamps.
import type { Pool } from 'pg';
import { payload, rate, timeIt } from '../harness';

/** Create the table `"<schema>".minimal_queue<suffix>` (dropped first if there). Returns its qualified name. */
export async function createMinimalQueue(pool: Pool, schema: string, suffix: string | number = ''): Promise<string> {
  const q = `"${schema}".minimal_queue${suffix}`;
  await pool.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
  await pool.query(`DROP TABLE IF EXISTS ${q}`);
  await pool.query(
    `CREATE TABLE ${q} (id bigserial PRIMARY KEY, state text NOT NULL DEFAULT 'ready', lease_until bigint, payload jsonb NOT NULL)`,
  );
  return q;
}

/** Append `n` payload() rows in batches of `batch`. Events per second. */
export async function minimalAppend(pool: Pool, q: string, n: number, batch: number): Promise<number> {
  const client = await pool.connect();
  try {
    const { ms } = await timeIt(async () => {
      for (let i = 0; i < n; i += batch) {
        const rows: string[] = [];
        for (let j = i; j < Math.min(n, i + batch); j++) rows.push(JSON.stringify(payload(j)));
        await client.query({ name: `minimal_append:${q}`, text: `INSERT INTO ${q} (payload) SELECT unnest($1::jsonb[])`, values: [rows] });
      }
    });
    return rate(n, ms);
  } finally {
    client.release();
  }
}

/** Consume the `n` rows with `workers` concurrent loops claiming `claim` at a time. Events per second. */
export async function minimalConsume(pool: Pool, q: string, n: number, options: { workers: number; claim: number }): Promise<number> {
  const handler = async (_payload: unknown) => undefined;
  let consumed = 0;
  const worker = async () => {
    while (consumed < n) {
      const { rows } = await pool.query<{ id: string; payload: unknown }>({
        name: `minimal_claim:${q}`,
        text: `WITH c AS (SELECT id FROM ${q} WHERE state = 'ready' ORDER BY id FOR UPDATE SKIP LOCKED LIMIT $1)
          UPDATE ${q} SET state = 'leased', lease_until = $2 FROM c WHERE ${q}.id = c.id RETURNING ${q}.id, ${q}.payload`,
        values: [options.claim, Date.now() + 30_000],
      });
      if (rows.length === 0) {
        await new Promise((r) => setImmediate(r)); // the rest are claimed by other workers
        continue;
      }
      await Promise.all(rows.map((r) => handler(r.payload)));
      await pool.query({
        name: `minimal_ack:${q}`,
        text: `DELETE FROM ${q} WHERE id = ANY($1::bigint[])`,
        values: [rows.map((r) => r.id)],
      });
      consumed += rows.length;
    }
  };
  const { ms } = await timeIt(() => Promise.all(Array.from({ length: options.workers }, worker)));
  return rate(n, ms);
}
