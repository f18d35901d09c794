// What the CLI specs share. cli.spec.ts calls the CLI in this process, through
// run() with an Io that captures what it prints; cli-bin.spec.ts runs the built
// bin. Both answer { code, stdout, stderr }, so a case reads alike on either.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { backendFromUrl, Rheo, type RheoEvent } from '../../lib';
import { run } from '../../lib/cli/run';
import { deleteKeys, freshPrefix, REDIS_URL } from '../redis/support';
import { dropSchema, freshSchema, PG_URL } from '../sql/pg-helpers';

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

type Vars = Record<string, string | undefined>;

/** The variables the calls running now have set, what they replaced, and how many calls share them. */
let current: { key: string; saved: Vars; calls: number } | undefined;

function assign(vars: Vars): void {
  for (const [name, value] of Object.entries(vars)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
}

/**
 * Set `vars` in process.env for a call (commander reads RHEO_URL and RHEO_SCHEMA
 * there). Calls side by side share one setting; two that need different ones
 * cannot overlap, as process.env is one for all: that throws.
 */
function enter(vars: Vars): void {
  const key = JSON.stringify(Object.entries(vars).map(([name, value]) => [name, value ?? null]));
  if (current) {
    if (current.key !== key) throw new Error(`CLI calls with different environments overlap (${current.key} and ${key})`);
    current.calls++;
    return;
  }
  current = { key, saved: Object.fromEntries(Object.keys(vars).map((name) => [name, process.env[name]])), calls: 1 };
  assign(vars);
}

/** The end of a call: the last of those sharing a setting puts the environment back as it was. */
function leave(): void {
  if (!current || --current.calls > 0) return;
  assign(current.saved);
  current = undefined;
}

/** The CLI with `args`, in this process; RHEO_URL only when given in `env` (as for the bin). */
export async function cli(args: string[], env: Record<string, string> = {}): Promise<Run> {
  const printed = { stdout: '', stderr: '' };
  enter({ RHEO_URL: undefined, ...env });
  try {
    const code = await run(['node', 'rheo', ...args], {
      out: (text) => void (printed.stdout += text),
      err: (text) => void (printed.stderr += text),
      errIsTTY: false,
    });
    return { code, ...printed };
  } finally {
    leave();
  }
}

/** A run that must succeed; its stdout parsed as one JSON document. */
export async function jsonOf(args: string[]): Promise<unknown> {
  const run = await cli([...args, '--json']);
  expect({ code: run.code, stderr: run.stderr.replace(/^warning: .*\n/gm, '') }).toEqual({ code: 0, stderr: '' });
  return JSON.parse(run.stdout);
}

export interface SqliteCli {
  /** The SQLite file of the test running now, in a folder of its own. */
  readonly file: string;
  /** The CLI with `--url sqlite:<file>` and `args`, in this process: its exit code and what it printed. */
  rheoCli(...args: string[]): Promise<{ code: number | null; out: string; err: string }>;
}

/**
 * A fresh SQLite file for each test of the describe block this is called in
 * (made before the block's own beforeEach hooks, removed after each test), and
 * the CLI on it. `label` names the folder.
 */
export function sqliteCli(label: string): SqliteCli {
  let dir = '';
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), `rheo-${label}-`));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));
  const store = {
    get file() {
      return join(dir, 'rheo.db');
    },
    async rheoCli(...args: string[]) {
      const ran = await cli(['--url', `sqlite:${store.file}`, ...args]);
      return { code: ran.code, out: ran.stdout, err: ran.stderr };
    },
  };
  return store;
}

/** An event as tail and append print it. */
export function summary(e: RheoEvent) {
  return {
    id: e.id,
    partition: e.partition,
    sequence: e.sequence,
    timestamp: e.timestamp.toISOString(),
    type: e.type,
    key: e.key,
    metadata: e.metadata,
    payload: e.payload,
  };
}

export interface Store {
  name: string;
  /** The global options naming this store on the command line. */
  args: string[];
  /** The same store for this process (install: 'auto' makes the tables, records the Redis layout). */
  open(): Rheo;
  cleanup(): Promise<unknown>;
}

/** A fresh PostgreSQL schema, Redis prefix and SQLite file (in `dir`): one case list runs on each. */
export function stores(dir: string): Store[] {
  const schema = freshSchema('cli');
  const prefix = freshPrefix('cli');
  const file = join(dir, 'store.db');
  return [
    {
      name: 'postgres',
      args: ['--url', PG_URL, '--schema', schema],
      open: () => new Rheo(backendFromUrl(PG_URL, { schema, install: 'auto' })),
      cleanup: () => dropSchema(schema),
    },
    {
      name: 'redis',
      args: ['--url', REDIS_URL, '--prefix', prefix],
      open: () => new Rheo(backendFromUrl(REDIS_URL, { prefix, install: 'auto' })),
      cleanup: () => deleteKeys(prefix),
    },
    {
      name: 'sqlite',
      args: ['--url', `sqlite:${file}`],
      open: () => new Rheo(backendFromUrl(`sqlite:${file}`, { install: 'auto' })),
      cleanup: async () => undefined,
    },
  ];
}

/**
 * `orders`: 2 partitions; o1, o3 in partition 0, o2 in 1. billing acked o1 and
 * o3 and dead-lettered o2; audit started at the end. Nothing is left unsettled,
 * so every figure is exact. Resolves to the stream's creation time.
 */
export async function seedOrders(rheo: Rheo): Promise<Date> {
  const created = (await rheo.createStream('orders', { partitions: 2 })).createdAt;
  await rheo.createGroup('orders', 'billing');
  await rheo.append('orders', { id: 'o1', partition: 0, type: 'placed', key: 'k1', payload: { n: 1 } });
  await rheo.append('orders', { id: 'o2', partition: 1, type: 'placed', key: 'k2', payload: { n: 2 } });
  await rheo.append('orders', { id: 'o3', partition: 0, type: 'paid', key: 'k1', payload: { n: 3 } });
  await rheo.createGroup('orders', 'audit', { start: 'end', maxAttempts: 3, ordering: 'partition' });
  for (const lease of await rheo.fetch('orders', 'billing', { limit: 3 })) {
    if (lease.event.id === 'o2') await rheo.reject(lease, { reason: 'card declined' });
    else await rheo.ack(lease);
  }
  return created;
}
