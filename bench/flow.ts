// `npm run bench -- flow <memory|sqlite|postgres|redis> [--events N] [--keys N] [--work-ms N] [--rounds N]`:
// 3 consumer processes × concurrency 16 on one group of a stream of 4 partitions and
// 1,000 keys, handlers that wait 20 ms: the time to complete N events (default 2,000)
// under `ordering: 'key'` and under `ordering: 'partition'`, and their ratio. Partition
// order runs one event per partition at a time; key order one per key, so the three
// processes' 48 handlers stay busy (docs/adr/049-flow-control.md).
//
// `npm run bench -- flow <backend> --plain [--before <checkout>] [--events N] [--rounds N]`:
// what a group with none of the flow settings costs: append N events (default 20,000)
// and consume them through the same 3 processes (no-op handler), in rounds. With
// `--before`, rounds of this checkout and of the other one alternate (each checkout's
// own library in its processes, the order switched every round), so machine noise
// falls on both alike; the medians and their ratio are printed.
//
// Memory lives in one process: its three consumers run in the bench's process.
// Output: one JSON line per figure, like the other benches.
import { type ChildProcess, fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { benchConsumer, type FlowBenchChild, libAt } from './flow/child';
import { dropSchema, PG_URL } from './pg-schema';
import { deleteKeysUnder, REDIS_URL } from './redis-keys';

type Lib = typeof import('../lib');
type Facade = InstanceType<Lib['Rheo']>;

const BACKENDS = ['memory', 'sqlite', 'postgres', 'redis'] as const;
type BackendName = (typeof BACKENDS)[number];
const PROCESSES = 3;
const CONCURRENCY = 16;
const PARTITIONS = 4;

interface Tree {
  label: string;
  root: string;
  lib: Lib;
}

interface Store {
  rheo: Facade;
  /** How a child builds the same store; null for memory (consumers in this process). */
  child: FlowBenchChild['backend'] | null;
  dispose(): Promise<void>;
}

let serial = 0;

function openStore(tree: Tree, backend: BackendName): Store {
  const name = `flow_bench_${process.pid}_${serial++}`;
  const { lib } = tree;
  const closing = (rheo: Facade, child: Store['child'], cleanup: () => Promise<void>): Store => ({
    rheo,
    child,
    async dispose() {
      try {
        await rheo.close();
      } finally {
        await cleanup();
      }
    },
  });
  switch (backend) {
    case 'memory':
      return closing(new lib.Rheo(lib.memoryBackend()), null, async () => undefined);
    case 'sqlite': {
      const dir = mkdtempSync(join(tmpdir(), 'rheo-flow-bench-'));
      const options = { database: join(dir, 'rheo.db') };
      return closing(new lib.Rheo(lib.sqliteBackend(options)), { name: 'sqlite', options }, async () =>
        rmSync(dir, { recursive: true, force: true }),
      );
    }
    case 'postgres': {
      const options = { url: PG_URL, schema: name, poolSize: 4 };
      return closing(new lib.Rheo(lib.postgresBackend(options)), { name: 'postgres', options }, () => dropSchema(name));
    }
    case 'redis': {
      const options = { url: REDIS_URL, prefix: name };
      return closing(new lib.Rheo(lib.redisBackend(options)), { name: 'redis', options }, () => deleteKeysUnder(name));
    }
  }
}

/** PROCESSES consumers of `group`, ready and not yet consuming. */
async function consumers(
  tree: Tree,
  store: Store,
  settings: Omit<FlowBenchChild, 'root' | 'backend'>,
): Promise<{ go(): void; stop(): Promise<void> }> {
  if (store.child === null) {
    const local = Array.from({ length: PROCESSES }, () => benchConsumer(tree.lib, store.rheo, settings));
    return {
      go: () => local.forEach((c) => c.start()),
      stop: async () => {
        await Promise.all(local.map((c) => c.drain(10_000)));
      },
    };
  }
  const backend = store.child;
  const children: Array<{ proc: ChildProcess; exited: Promise<void> }> = [];
  await Promise.all(
    Array.from({ length: PROCESSES }, async () => {
      const proc = fork(join(__dirname, 'flow', 'child.ts'), [], {
        execArgv: ['-r', 'ts-node/register/transpile-only'],
        env: {
          ...process.env,
          RHEO_BENCH_FLOW: JSON.stringify({ ...settings, root: tree.root, backend } satisfies FlowBenchChild),
          TS_NODE_TRANSPILE_ONLY: 'true',
        },
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      });
      const exited = new Promise<void>((r) => proc.on('close', () => r()));
      children.push({ proc, exited });
      await new Promise<void>((ready, fail) => {
        proc.on('message', (m: { k?: string }) => m?.k === 'ready' && ready());
        proc.on('exit', (code) => fail(new Error(`bench child exited (${code}) before it was ready`)));
      });
    }),
  );
  return {
    go: () => children.forEach((c) => c.proc.send({ type: 'go' })),
    stop: async () => {
      for (const c of children) if (c.proc.connected) c.proc.send({ type: 'stop' });
      await Promise.all(children.map((c) => c.exited));
    },
  };
}

/**
 * One run on a fresh store: a group with `groupOptions`, `events` events over `keys`
 * keys appended (batches of 500), then consumed by the processes; the consume is
 * timed from the go to a lag of 0.
 */
async function runOnce(
  tree: Tree,
  backend: BackendName,
  o: { groupOptions: Record<string, unknown>; events: number; keys: number; workMs: number },
): Promise<{ appendMs: number; consumeMs: number }> {
  const store = openStore(tree, backend);
  try {
    const { rheo } = store;
    await rheo.init();
    await rheo.createStream('bench', { partitions: PARTITIONS });
    await rheo.createGroup('bench', 'g', o.groupOptions as never);
    const fleet = await consumers(tree, store, {
      stream: 'bench',
      group: 'g',
      concurrency: CONCURRENCY,
      maxDemand: CONCURRENCY,
      workMs: o.workMs,
    });
    try {
      const a0 = performance.now();
      for (let i = 0; i < o.events; i += 500) {
        const batch = [];
        for (let j = i; j < Math.min(o.events, i + 500); j++) batch.push({ type: 'bench', key: `k${j % o.keys}`, payload: { n: j } });
        await rheo.appendBatch('bench', batch);
      }
      const appendMs = performance.now() - a0;
      const c0 = performance.now();
      fleet.go();
      while ((await rheo.lag('bench', 'g')).lag > 0) await new Promise((r) => setTimeout(r, 20));
      return { appendMs, consumeMs: performance.now() - c0 };
    } finally {
      await fleet.stop();
    }
  } finally {
    await store.dispose();
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const round2 = (x: number) => Math.round(x * 100) / 100;
const perSec = (n: number, ms: number) => Math.round((n / ms) * 1000);

function option(args: string[], name: string, fallback: number): number {
  const at = args.indexOf(name);
  if (at < 0) return fallback;
  const n = Number(args[at + 1]);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name} takes a whole number above 0`);
  return n;
}

function tree(label: string, root: string): Tree {
  return { label, root, lib: libAt(root) };
}

const USAGE =
  'usage: npm run bench -- flow <memory|sqlite|postgres|redis> [--events N] [--keys N] [--work-ms N] [--rounds N]\n' +
  '       npm run bench -- flow <memory|sqlite|postgres|redis> --plain [--before <checkout>] [--events N] [--rounds N]';

export async function main(args: string[]): Promise<void> {
  const [backend, ...rest] = args;
  const known = new Set(['--events', '--keys', '--work-ms', '--rounds', '--before', '--plain']);
  for (const a of rest) if (a.startsWith('--') && !known.has(a)) throw new Error(`unknown option ${a}\n${USAGE}`);
  if (!BACKENDS.includes(backend as BackendName)) throw new Error(USAGE);
  const name = backend as BackendName;
  const here = tree('this', resolve(__dirname, '..'));
  if (rest.includes('--plain')) return plain(name, here, rest);

  const events = option(rest, '--events', 2000);
  const keys = option(rest, '--keys', 1000);
  const workMs = option(rest, '--work-ms', 20);
  const rounds = option(rest, '--rounds', 1);
  const ms: Record<'key' | 'partition', number[]> = { key: [], partition: [] };
  for (let r = 0; r < rounds; r++) {
    // The order switches every round, so a slow start falls on both.
    for (const ordering of r % 2 === 0 ? (['key', 'partition'] as const) : (['partition', 'key'] as const)) {
      const { consumeMs } = await runOnce(here, name, { groupOptions: { ordering }, events, keys, workMs });
      ms[ordering].push(consumeMs);
    }
  }
  const config = { processes: PROCESSES, concurrency: CONCURRENCY, partitions: PARTITIONS, keys, workMs, rounds };
  for (const ordering of ['key', 'partition'] as const) {
    const m = median(ms[ordering]);
    console.log(
      JSON.stringify({
        backend: name,
        op: 'flow-consume',
        ordering,
        events,
        ms: Math.round(m),
        eventsPerSec: perSec(events, m),
        ...config,
        msByRound: ms[ordering].map(Math.round),
      }),
    );
  }
  console.log(
    JSON.stringify({
      backend: name,
      op: 'flow-consume',
      events,
      keyVsPartition: round2(median(ms.partition) / median(ms.key)),
      ...config,
    }),
  );
}

/** The paired rounds of a group without flow settings: this checkout, and `--before`'s if given. */
async function plain(backend: BackendName, here: Tree, args: string[]): Promise<void> {
  const events = option(args, '--events', 20_000);
  const rounds = option(args, '--rounds', 5);
  const at = args.indexOf('--before');
  const trees = at >= 0 ? [tree('before', resolve(args[at + 1])), here] : [here];
  // Checkouts before 2026-12-01 let a process exit in the middle of a SQLite close: hold the loop open.
  const keepAlive = setInterval(() => undefined, 60_000);
  const figures = new Map(trees.map((t) => [t.label, { append: [] as number[], consume: [] as number[] }]));
  const one = (t: Tree) => runOnce(t, backend, { groupOptions: {}, events, keys: 1000, workMs: 0 });
  // One warm-up round each (JIT, connections), not counted.
  for (const t of trees) await one(t);
  for (let r = 0; r < rounds; r++) {
    for (const t of r % 2 === 0 ? trees : [...trees].reverse()) {
      const f = await one(t);
      figures.get(t.label)!.append.push(perSec(events, f.appendMs));
      figures.get(t.label)!.consume.push(perSec(events, f.consumeMs));
    }
  }
  clearInterval(keepAlive);
  for (const op of ['append', 'consume'] as const) {
    const ours = figures.get('this')![op];
    const before = figures.get('before')?.[op];
    console.log(
      JSON.stringify({
        backend,
        op: `plain-${op}`,
        events,
        processes: PROCESSES,
        concurrency: CONCURRENCY,
        eventsPerSec: median(ours),
        rounds: ours,
        ...(before ? { before: median(before), ratio: round2(median(ours) / median(before)), roundsBefore: before } : {}),
      }),
    );
  }
}
