// Where a profiled run keeps its events: one Rheo per store, on a location of its
// own (a schema, a key prefix, a file) that the parent prepares and removes and
// the profiled child opens by name. Memory has no location to share: its child
// appends the backlog itself, outside the profiled window.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dropSchema, PG_URL } from '../pg-schema';
import { postgresBackend, redisBackend, Rheo, sqliteBackend } from '../../lib';
import { MemoryBackend } from '../../lib/backends/memory/memory-backend';
import { deleteKeysUnder, REDIS_URL } from '../redis-keys';

export const PROFILED_STORES = ['memory', 'sqlite', 'postgres', 'redis'] as const;
export type ProfiledStore = (typeof PROFILED_STORES)[number];

/** Partitions per store, as the throughput benches use. */
export function partitionsOf(store: ProfiledStore): number {
  return store === 'redis' || store === 'memory' ? 4 : 1;
}

/** A new location for `store`: a schema name, a key prefix, a database file, or '' (memory). */
export function newLocation(store: ProfiledStore): string {
  if (store === 'postgres') return `rheo_profile_${process.pid}`;
  if (store === 'redis') return `rheo-profile:${process.pid}`;
  if (store === 'sqlite') return join(mkdtempSync(join(tmpdir(), 'rheo-profile-')), 'rheo.db');
  return '';
}

/** A Rheo on `location`. */
export function openRheo(store: ProfiledStore, location: string): Rheo {
  if (store === 'postgres') return new Rheo(postgresBackend({ url: PG_URL, schema: location }));
  if (store === 'redis') return new Rheo(redisBackend({ url: REDIS_URL, prefix: location }));
  if (store === 'sqlite') return new Rheo(sqliteBackend({ database: location }));
  return new Rheo(new MemoryBackend());
}

/** Remove `location` and everything in it. */
export async function removeLocation(store: ProfiledStore, location: string): Promise<void> {
  if (store === 'postgres') {
    await dropSchema(location);
  } else if (store === 'redis') {
    await deleteKeysUnder(location);
  } else if (store === 'sqlite') {
    rmSync(join(location, '..'), { recursive: true, force: true });
  }
}
