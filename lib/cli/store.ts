// Opening the store a command names (--url or RHEO_URL, with --schema or
// --prefix), and closing it whatever happens: a CLI that leaves a pool or a
// Redis connection open never exits.
import { backendFromUrl } from '../admin/backend-from-url';
import { RheoAdmin } from '../admin/rheo-admin';
import type { Backend } from '../backends/backend';
import { RheoError } from '../core/errors';
import { Rheo } from '../core/rheo';
import { UsageError } from './usage';

/** The options every command takes (commander merges them in with optsWithGlobals). */
export interface GlobalOptions {
  url?: string;
  schema?: string;
  prefix?: string;
  json?: boolean;
}

/** Run `work` with an admin service over the named store; the store is closed after, even on failure. */
export async function withAdmin<T>(globals: GlobalOptions, work: (admin: RheoAdmin) => Promise<T>): Promise<T> {
  if (!globals.url) throw new UsageError('no store named: pass --url or set RHEO_URL (postgres://…, redis://…, sqlite:<file>)');
  const rheo = new Rheo(openBackend(globals.url, globals));
  try {
    return await work(new RheoAdmin(rheo, { actor: 'cli' }));
  } finally {
    await rheo.close();
  }
}

/** The fields of backendFromUrl's refusals that are this command line's options. */
const USAGE_FIELDS = new Set(['url', 'schema', 'prefix']);

/** The backend --url names. A URL, schema or prefix that names no store is the command line's fault: usage (exit 2). */
function openBackend(url: string, globals: GlobalOptions): Backend {
  try {
    return backendFromUrl(url, { schema: globals.schema, prefix: globals.prefix });
  } catch (err) {
    // A missing driver is no usage error: the command line was right, the installation is not.
    if (err instanceof RheoError && USAGE_FIELDS.has(err.field ?? '')) throw new UsageError(`${err.code}: ${err.message}`);
    throw err;
  }
}
