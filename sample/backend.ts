import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { type Backend, sqliteBackend } from '../lib';

/** Where the sample keeps its log: `sample/data/rheo.db` (delete it to reset the demo), or `RHEO_SAMPLE_DB`. */
export function sampleDatabase(): string {
  return process.env.RHEO_SAMPLE_DB ?? join(__dirname, 'data', 'rheo.db');
}

/**
 * The store the sample runs on: the one place to change it. Embedded SQLite, no
 * server. For PostgreSQL: `postgresBackend({ url: 'postgres://postgres@127.0.0.1:5432/test' })`.
 */
export function createBackend(): Backend {
  const database = sampleDatabase();
  mkdirSync(dirname(database), { recursive: true });
  return sqliteBackend({ database });
}
