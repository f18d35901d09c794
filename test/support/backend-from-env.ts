// Maps a backend name and JSON options to a backend, so a child process can
// build the same backend as its parent from two environment variables. A new
// backend joins the multi-process tests by adding one entry here.
import type { Backend } from '../../lib';
import { postgresBackend, redisBackend, sqliteBackend } from '../../lib';
import { MemoryBackend } from '../../lib/backends/memory/memory-backend';

/** Builds a backend from JSON-able options. */
export type BackendFactory = (options: Record<string, unknown>) => Backend;

export const BACKEND_FACTORIES: Record<string, BackendFactory> = {
  memory: () => new MemoryBackend(),
  postgres: (o) => postgresBackend(o as never),
  sqlite: (o) => sqliteBackend(o as never),
  redis: (o) => redisBackend(o as never),
};

/** The environment variables a child reads. */
export const BACKEND_ENV = { name: 'RHEO_TEST_BACKEND', options: 'RHEO_TEST_BACKEND_OPTIONS' } as const;

/** Build the backend named by `name` with `options` (JSON text). */
export function backendFrom(name: string | undefined, options: string | undefined): Backend {
  const factory = name ? BACKEND_FACTORIES[name] : undefined;
  if (!factory) throw new Error(`unknown backend "${name}" (known: ${Object.keys(BACKEND_FACTORIES).join(', ')})`);
  return factory(options ? (JSON.parse(options) as Record<string, unknown>) : {});
}

/** The backend this process was told to use. */
export function backendFromEnv(env: NodeJS.ProcessEnv = process.env): Backend {
  return backendFrom(env[BACKEND_ENV.name], env[BACKEND_ENV.options]);
}
