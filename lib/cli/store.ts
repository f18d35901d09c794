// Opening the store a command names (--url or RHEO_URL, with --schema /
// RHEO_SCHEMA or --prefix), and closing it whatever happens: a CLI that leaves a
// pool or a Redis connection open never exits. A command that only reads opens
// the store read-only, and none writes anything to open it (backendFromUrl's
// install: 'none'): a URL or prefix that names no store is refused untouched.
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

/** How a command uses the store. */
export interface StoreUse {
  /** The command only reads: the store is opened read-only (a SQLite file), and nothing is written to open it. */
  readOnly?: boolean;
}

/**
 * Run `work` with an admin service over the named store; the store is closed
 * after, even on failure. It is opened first, on its own: a store that is not
 * one (no tables, no rheo data under the prefix) fails there, before the command
 * reads or writes anything.
 */
export async function withAdmin<T>(globals: GlobalOptions, work: (admin: RheoAdmin) => Promise<T>, use: StoreUse = {}): Promise<T> {
  if (!globals.url) throw new UsageError('no store named: pass --url or set RHEO_URL (postgres://…, redis://…, sqlite:<file>)');
  const rheo = new Rheo(openBackend(globals.url, globals, use.readOnly === true));
  try {
    await rheo.init().catch((err: unknown) => {
      throw elsewhere(err);
    });
    return await work(new RheoAdmin(rheo, { actor: 'cli' }));
  } finally {
    await rheo.close();
  }
}

/** {@link withAdmin} for a command that only reads. */
export function withReadOnlyAdmin<T>(globals: GlobalOptions, work: (admin: RheoAdmin) => Promise<T>): Promise<T> {
  return withAdmin(globals, work, { readOnly: true });
}

/** No rheo tables in the schema searched: they may be in another one, which the command line can name. */
function elsewhere(err: unknown): unknown {
  if (!(err instanceof RheoError) || err.field !== 'schema') return err;
  const hint = 'if the tables are in another schema, pass --schema <name> or set RHEO_SCHEMA';
  return new RheoError(err.code, `${err.message}; ${hint}`, { field: err.field, cause: err });
}

/** The fields of backendFromUrl's refusals that are this command line's options. */
const USAGE_FIELDS = new Set(['url', 'schema', 'prefix']);

/** The backend --url names. A URL, schema or prefix that names no store is the command line's fault: usage (exit 2). */
function openBackend(url: string, globals: GlobalOptions, readOnly: boolean): Backend {
  try {
    return backendFromUrl(url, { schema: globals.schema, prefix: globals.prefix, readOnly });
  } catch (err) {
    // A missing driver is no usage error: the command line was right, the installation is not.
    if (err instanceof RheoError && USAGE_FIELDS.has(err.field ?? '')) throw new UsageError(`${err.code}: ${err.message}`);
    throw err;
  }
}
