// `npm run bench -- overhead <memory|sqlite|postgres|redis> --before <checkout> [--events N] [--rounds N]`:
// this checkout's append and consume against another checkout of the project
// (`git worktree add /tmp/before <rev>`), both loaded into this one process and
// measured in alternating rounds on the same workload, so machine noise falls on
// both alike. It answers "what did a change cost on the hot path" (issue 11: the
// diagnostics channels with no subscriber must stay within 3%).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { dropSchema, PG_URL } from './pg-schema';
import { round } from './harness';
import { deleteKeysUnder, REDIS_URL } from './redis-keys';

type Harness = typeof import('./harness');
type Lib = typeof import('../lib');

interface Checkout {
  label: string;
  lib: Lib;
  harness: Harness;
}

const BACKENDS = ['memory', 'sqlite', 'postgres', 'redis'] as const;
type BackendName = (typeof BACKENDS)[number];

function load(label: string, root: string): Checkout {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- two copies of the library, by path
  return { label, lib: require(join(root, 'lib')) as Lib, harness: require(join(root, 'bench', 'harness')) as Harness };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

let serial = 0;

/** One round on a fresh store: append `events` in batches of 500, then consume them (maxDemand 100 × concurrency 16). */
async function round1(c: Checkout, backend: BackendName, events: number): Promise<{ append: number; consume: number }> {
  const { lib, harness } = c;
  const name = `overhead_${process.pid}_${serial++}`;
  let cleanup = async () => undefined as void;
  let store: InstanceType<Lib['Rheo']>['backend'];
  if (backend === 'memory') store = lib.memoryBackend();
  else if (backend === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'rheo-overhead-'));
    store = lib.sqliteBackend({ database: join(dir, 'rheo.db') });
    cleanup = async () => rmSync(dir, { recursive: true, force: true });
  } else if (backend === 'redis') {
    // A fresh key prefix per round, its keys deleted after.
    store = lib.redisBackend({ url: REDIS_URL, prefix: name });
    cleanup = () => deleteKeysUnder(name);
  } else {
    store = lib.postgresBackend({ url: PG_URL, schema: name });
    cleanup = () => dropSchema(name);
  }
  const rheo = new lib.Rheo(store);
  try {
    await rheo.createStream('bench', { partitions: 4 });
    await rheo.createGroup('bench', 'consumers');
    const append = await harness.benchAppend(rheo, 'bench', events, 500);
    const consume = await harness.benchConsume(rheo, 'bench', 'consumers', events, { maxDemand: 100, concurrency: 16 });
    return { append: append.eventsPerSec, consume: consume.eventsPerSec };
  } finally {
    await rheo.close();
    await cleanup();
  }
}

export async function main(args: string[]): Promise<void> {
  const [backend, ...rest] = args;
  let before: string | undefined;
  let events = 20_000;
  let rounds = 7;
  for (let i = 0; i < rest.length; i += 2) {
    if (rest[i] === '--before') before = rest[i + 1];
    else if (rest[i] === '--events') events = Number(rest[i + 1]);
    else if (rest[i] === '--rounds') rounds = Number(rest[i + 1]);
    else throw new Error(`unknown option ${rest[i]}`);
  }
  if (!BACKENDS.includes(backend as BackendName) || !before || !(events > 0) || !(rounds > 0)) {
    throw new Error('usage: npm run bench -- overhead <memory|sqlite|postgres|redis> --before <checkout> [--events N] [--rounds N]');
  }
  const checkouts = [load('before', resolve(before)), load('this', resolve(__dirname, '..'))];
  // Checkouts before 2026-12-01 let a process exit in the middle of a SQLite close (the
  // checkpoint worker was unref'd): hold the loop open for the whole run.
  const keepAlive = setInterval(() => undefined, 60_000);
  const figures = new Map(checkouts.map((c) => [c.label, { append: [] as number[], consume: [] as number[] }]));
  // One warm-up round each (JIT, connections), then alternate, starting with a different one each round.
  for (const c of checkouts) await round1(c, backend as BackendName, events);
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? checkouts : [...checkouts].reverse();
    for (const c of order) {
      const f = await round1(c, backend as BackendName, events);
      figures.get(c.label)!.append.push(f.append);
      figures.get(c.label)!.consume.push(f.consume);
    }
  }
  clearInterval(keepAlive);
  const b = figures.get('before')!;
  const t = figures.get('this')!;
  for (const op of ['append', 'consume'] as const) {
    const ours = median(t[op]);
    const theirs = median(b[op]);
    // The same line format as the other benches, plus the other checkout's figure and each round.
    console.log(
      JSON.stringify({
        backend,
        op,
        events,
        eventsPerSec: ours,
        before: theirs,
        ratio: round(ours / theirs),
        rounds: t[op],
        roundsBefore: b[op],
      }),
    );
  }
}
