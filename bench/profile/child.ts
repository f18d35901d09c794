// The profiled process of `npm run bench -- profile` (bench/profile.ts starts it
// with --cpu-prof): opens the store at the location the parent prepared, warms up
// on a stream of its own (500 events appended and consumed, so module loading,
// JIT and prepared statements fall outside), then runs the one operation, the
// same as the throughput bench's: append N in batches of 500, or consume the N
// waiting events through a Consumer (maxDemand 100, concurrency 16, no-op handler).
// Writes the window it measured (process.hrtime in µs, the profile's own clock)
// to the file named in argv, so the summary counts only samples inside it, with
// the source maps of the TypeScript it ran.
import { writeFileSync } from 'node:fs';
import { findSourceMap } from 'node:module';
import { resolve } from 'node:path';
import { benchAppend, benchConsume } from '../harness';
import { openRheo, partitionsOf, type ProfiledStore } from './stores';

const BATCH = 500;

async function run(): Promise<void> {
  const [store, op, location, eventsArg, windowFile] = process.argv.slice(2) as [
    ProfiledStore,
    'append' | 'consume',
    string,
    string,
    string,
  ];
  const events = Number(eventsArg);
  const rheo = openRheo(store, location);
  try {
    await rheo.init();
    await rheo.createStream('warm', { partitions: partitionsOf(store) });
    await rheo.createGroup('warm', 'consumers');
    await benchAppend(rheo, 'warm', BATCH, BATCH);
    await benchConsume(rheo, 'warm', 'consumers', BATCH, { maxDemand: 100, concurrency: 16 });
    if (store === 'memory') {
      // Nothing is shared across processes: the stream, and the events to consume, are made here.
      await rheo.createStream('bench', { partitions: partitionsOf(store) });
      await rheo.createGroup('bench', 'consumers');
      if (op === 'consume') await benchAppend(rheo, 'bench', events, BATCH);
    }

    const startUs = process.hrtime.bigint() / 1000n;
    const result =
      op === 'append'
        ? await benchAppend(rheo, 'bench', events, BATCH)
        : await benchConsume(rheo, 'bench', 'consumers', events, { maxDemand: 100, concurrency: 16 });
    const endUs = process.hrtime.bigint() / 1000n;
    writeFileSync(
      windowFile,
      JSON.stringify({ startUs: Number(startUs), endUs: Number(endUs), eventsPerSec: result.eventsPerSec, sourceMaps: sourceMaps() }),
    );
  } finally {
    await rheo.close();
  }
}

/**
 * The source maps ts-node made for the project's TypeScript loaded here (the
 * process runs with --enable-source-maps so Node keeps them): the profile's
 * positions are in the compiled JavaScript, and the summary maps them back.
 */
function sourceMaps(): Record<string, unknown> {
  const root = resolve(__dirname, '..', '..');
  const out: Record<string, unknown> = {};
  for (const file of Object.keys(require.cache)) {
    if (!file.endsWith('.ts') || !file.startsWith(root) || file.includes('/node_modules/')) continue;
    const payload = findSourceMap(file)?.payload as { sourcesContent?: unknown } | undefined;
    if (payload) out[`file://${file}`] = { ...payload, sourcesContent: undefined };
  }
  return out;
}

run().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
