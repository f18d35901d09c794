// The store under test, built the way the other benches build it: a fresh
// PostgreSQL schema, Redis key prefix or SQLite file per run, dropped afterwards.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { postgresBackend, redisBackend, Rheo, sqliteBackend } from '../../lib';
import { MemoryBackend } from '../../lib/backends/memory/memory-backend';
import type { BackendName } from './options';
import { deleteKeysUnder, REDIS_URL } from '../redis-keys';
import { dropSchema, PG_URL } from '../pg-schema';

export interface ScaleTarget {
  rheo: Rheo;
  /**
   * What the store's own housekeeping would have done by now in production,
   * done at once after a bulk step (the bench loads in seconds what production
   * writes over hours). PostgreSQL: VACUUM ANALYZE of the run's schema, since
   * plans and index scans depend on it (and autovacuum may be off, as it is on
   * the test server). The others need none.
   */
  maintain(): Promise<void>;
  /** Facts about the store that move the figures, for the config line. */
  describe(): Promise<Record<string, unknown>>;
  /** Close the store and remove what the run created. */
  dispose(): Promise<void>;
}

export async function openTarget(name: BackendName): Promise<ScaleTarget> {
  switch (name) {
    case 'memory':
      return closing(new Rheo(new MemoryBackend()), async () => undefined);
    case 'sqlite': {
      const dir = mkdtempSync(join(tmpdir(), 'rheo-scale-sqlite-'));
      return closing(new Rheo(sqliteBackend({ database: join(dir, 'rheo.db') })), async () =>
        rmSync(dir, { recursive: true, force: true }),
      );
    }
    case 'postgres': {
      const schema = `rheo_scale_${process.pid}`;
      return {
        ...closing(new Rheo(postgresBackend({ url: PG_URL, schema })), () => dropSchema(schema)),
        maintain: () => vacuumAnalyze(schema),
        describe: async () => ({ autovacuum: await withClient((c) => c.query('SHOW autovacuum')).then((r) => r.rows[0]?.autovacuum) }),
      };
    }
    case 'redis': {
      const prefix = `rheo-scale:${process.pid}`;
      return closing(new Rheo(redisBackend({ url: REDIS_URL, prefix })), () => deleteKeysUnder(prefix));
    }
  }
}

function closing(rheo: Rheo, cleanup: () => Promise<void>): ScaleTarget {
  return {
    rheo,
    maintain: async () => undefined,
    describe: async () => ({}),
    dispose: async () => {
      try {
        await rheo.close();
      } finally {
        await cleanup();
      }
    },
  };
}

async function withClient<T>(fn: (c: Client) => Promise<T>): Promise<T> {
  const c = new Client({ connectionString: PG_URL });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

/** One table at a time: VACUUM takes no list across schemas, and a database-wide one would touch other users' tables. */
async function vacuumAnalyze(schema: string): Promise<void> {
  await withClient(async (c) => {
    const { rows } = await c.query<{ t: string }>(`SELECT tablename AS t FROM pg_tables WHERE schemaname = $1`, [schema]);
    for (const { t } of rows) await c.query(`VACUUM (ANALYZE) "${schema}"."${t.replace(/"/g, '""')}"`);
  });
}
