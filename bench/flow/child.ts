// A consumer process of the flow bench (bench/flow.ts): one Consumer of the bench's
// group on the library of the checkout at `root` (so a paired run can put two
// checkouts side by side), started when the parent says { type: 'go' }, drained and
// ended at { type: 'stop' }. Its handler waits `workMs` (0: settles at once).
import { join } from 'node:path';

type Lib = typeof import('../../lib');

/** The child's settings, passed as JSON in RHEO_BENCH_FLOW. */
export interface FlowBenchChild {
  /** The checkout whose lib/ this process runs. */
  root: string;
  backend: { name: 'postgres' | 'redis' | 'sqlite'; options: Record<string, unknown> };
  stream: string;
  group: string;
  concurrency: number;
  maxDemand: number;
  workMs: number;
}

/** The checkout's library at `root`. */
export function libAt(root: string): Lib {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- a checkout's library, by path
  return require(join(root, 'lib')) as Lib;
}

/** One Consumer of the bench's group (not started). */
export function benchConsumer(lib: Lib, rheo: InstanceType<Lib['Rheo']>, c: Omit<FlowBenchChild, 'root' | 'backend'>) {
  const wait = c.workMs > 0 ? () => new Promise<void>((r) => setTimeout(r, c.workMs)) : async () => undefined;
  return new lib.Consumer(
    rheo,
    { stream: c.stream, group: c.group, concurrency: c.concurrency, maxDemand: c.maxDemand, pollMs: 200, leaseMs: 30_000 },
    wait,
  );
}

async function main(): Promise<void> {
  const c = JSON.parse(process.env.RHEO_BENCH_FLOW ?? '{}') as FlowBenchChild;
  const lib = libAt(c.root);
  const o = c.backend.options as never;
  const backend =
    c.backend.name === 'postgres' ? lib.postgresBackend(o) : c.backend.name === 'redis' ? lib.redisBackend(o) : lib.sqliteBackend(o);
  const rheo = new lib.Rheo(backend);
  await rheo.init();
  const consumer = benchConsumer(lib, rheo, c);
  consumer.on('fetch_error', (error) => console.error('fetch error:', error.message));
  consumer.on('settle_error', ({ error }) => console.error('settle error:', error.message));
  process.on('message', (m: { type?: string }) => {
    if (m?.type === 'go') consumer.start();
    if (m?.type === 'stop')
      void consumer
        .drain(10_000)
        .then(() => rheo.close())
        .then(() => process.send?.({ k: 'bye' }, () => process.disconnect?.()));
  });
  process.send?.({ k: 'ready' });
}

if (require.main === module) {
  process.on('disconnect', () => process.exit(0));
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
