#!/usr/bin/env node
// `npm test` and `npm run test:<tier>`: Jest on the selections of test/tiers.js.
//
//   node scripts/test.mjs                 every spec: the isolated ones in parallel, then the serial ones one at a time
//   node scripts/test.mjs TIER            one tier (unit, memory, sqlite, postgres, redis, cluster, browser), in parallel
//   node scripts/test.mjs [TIER] ARGS     ARGS go to Jest (a file pattern, -t NAME, --maxWorkers=1, …)
//
// RHEO_TEST_WORKERS sets the parallel runs' worker count (default: half the cores, at least 2).
// Before running, the tiers are checked: a spec in no tier, or a pattern that selects nothing,
// fails here with its name.
import console from 'node:console';
import process from 'node:process';
import { spawnSync } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { TIERS, problems } = createRequire(import.meta.url)(join(root, 'test', 'tiers.js'));

const args = process.argv.slice(2);
// A first argument that names a tier picks it; anything else goes to Jest (`npm test -- test/e2e`).
const tier = args[0] && Object.hasOwn(TIERS, args[0]) ? args.shift() : undefined;
if (args[0] === '--') args.shift();

const wrong = problems();
if (wrong.length > 0) {
  for (const line of wrong) console.error(line);
  process.exit(2);
}

const workers = process.env.RHEO_TEST_WORKERS ?? String(Math.max(2, Math.floor(availableParallelism() / 2)));
const chosesWorkers = args.some((a) => /^(--maxWorkers|-w|--runInBand|-i)(=|$)/.test(a));
const jest = join(root, 'node_modules', 'jest', 'bin', 'jest.js');

/** One Jest run on a selection; returns whether it passed. */
function run(selection, serial) {
  const mode = chosesWorkers ? [] : serial ? ['--runInBand'] : [`--maxWorkers=${workers}`];
  // A file pattern given to `npm test` may match specs of one half only.
  if (!tier) mode.push('--passWithNoTests');
  const started = Date.now();
  const { status, signal } = spawnSync(process.execPath, [jest, ...mode, ...args], {
    cwd: root,
    stdio: 'inherit',
    env: { ...process.env, RHEO_TESTS: selection },
  });
  const seconds = ((Date.now() - started) / 1000).toFixed(0);
  return { selection, ok: status === 0, seconds, status: signal ?? status };
}

if (tier) {
  const result = run(tier, false);
  process.exit(result.ok ? 0 : 1);
}

// The serial half runs even when the parallel half failed, so one run reports every failure.
const results = [run('parallel', false), run('serial', true)];
for (const r of results) console.log(`npm test, ${r.selection} specs: ${r.ok ? 'passed' : `failed (exit ${r.status})`} in ${r.seconds} s`);
process.exit(results.every((r) => r.ok) ? 0 : 1);
