// The test tiers, by path: which spec files `npm run test:<tier>` runs, which
// specs `npm test` runs one at a time after the parallel run, and which it starts first. jest.config.js and
// scripts/test.mjs read this file; docs/contributing.md shows the table.
//
// A pattern is a path from the repository root: a folder (ending in `/`), a file,
// or either with `*` (any characters but `/`). A leading `!` takes files out again.
const { readdirSync, statSync } = require('node:fs');
const { join, relative, sep } = require('node:path');

const ROOT = join(__dirname, '..');

// The specs that run every backend: they need PostgreSQL and Redis both, so they
// are in both tiers.
const EVERY_BACKEND = [
  'test/conformance/hostile-input.spec.ts',
  'test/runtime/trimmer.spec.ts',
  'test/cli/cli.spec.ts',
  'test/cli/cli-bin.spec.ts',
  'test/admin/backend-from-url.spec.ts',
  'test/e2e/metrics-groups.e2e.spec.ts',
];

/** Each tier: what it needs running, and its specs. */
const TIERS = {
  unit: {
    needs: 'nothing',
    specs: ['test/unit/', 'test/property/', 'test/cli/output.spec.ts'],
  },
  memory: {
    needs: 'nothing (the memory backend; a few Nest apps on a SQLite file)',
    specs: [
      'test/conformance/memory.conformance.spec.ts',
      'test/runtime/',
      'test/e2e/',
      'test/otel/',
      'test/admin/',
      'test/dashboard/',
      '!test/otel/cross-process.spec.ts',
      '!test/e2e/health-clock-skew.e2e.spec.ts',
      '!test/e2e/health-dead-letters.e2e.spec.ts',
      '!test/e2e/logs.e2e.spec.ts',
      '!test/e2e/metrics.e2e.spec.ts',
      '!test/e2e/readme-postgres-wiring.e2e.spec.ts',
      '!test/e2e/transactional.e2e.spec.ts',
      '!test/e2e/typeorm-postgres.e2e.spec.ts',
      '!test/dashboard/*.browser.spec.ts',
      ...EVERY_BACKEND.map((p) => `!${p}`),
    ],
  },
  sqlite: {
    needs: 'nothing (SQLite files)',
    specs: [
      'test/conformance/sqlite.conformance.spec.ts',
      'test/sql/sqlite*.spec.ts',
      'test/sql/upgrade-sqlite.spec.ts',
      'test/sql/nest-batch.e2e.spec.ts',
      'test/cli/group-set.spec.ts',
      'test/cli/pause.spec.ts',
      'test/cli/waiting.spec.ts',
    ],
  },
  postgres: {
    needs: 'PostgreSQL (and Redis for the specs that run every backend)',
    specs: [
      'test/conformance/postgres.conformance.spec.ts',
      'test/sql/',
      '!test/sql/sqlite*.spec.ts',
      '!test/sql/upgrade-sqlite.spec.ts',
      '!test/sql/nest-batch.e2e.spec.ts',
      'test/e2e/health-clock-skew.e2e.spec.ts',
      'test/e2e/health-dead-letters.e2e.spec.ts',
      'test/e2e/logs.e2e.spec.ts',
      'test/e2e/metrics.e2e.spec.ts',
      'test/e2e/readme-postgres-wiring.e2e.spec.ts',
      'test/e2e/transactional.e2e.spec.ts',
      'test/e2e/typeorm-postgres.e2e.spec.ts',
      'test/otel/cross-process.spec.ts',
      ...EVERY_BACKEND,
    ],
  },
  redis: {
    needs: 'Redis on 6379 (and PostgreSQL for the specs that run every backend)',
    specs: [
      'test/conformance/redis.conformance.spec.ts',
      'test/redis/',
      '!test/redis/cluster*.spec.ts',
      '!test/redis/durability-wait.spec.ts',
      ...EVERY_BACKEND,
    ],
  },
  cluster: {
    needs: 'the Redis Cluster on 7100-7105; redis-server for the servers the failover specs start',
    specs: ['test/conformance/redis-cluster.conformance.spec.ts', 'test/redis/cluster*.spec.ts', 'test/redis/durability-wait.spec.ts'],
  },
  browser: {
    needs: 'Chromium (/usr/bin/chromium); PostgreSQL',
    specs: ['test/dashboard/*.browser.spec.ts'],
  },
};

// The specs `npm test` runs one at a time, after the parallel run, and why: each
// changes state every other spec on that server shares, or depends on timing that
// a loaded machine stretches.
const SERIAL = [
  'test/redis/cluster.spec.ts', // SCRIPT FLUSH and slot moves on the shared cluster
  'test/redis/clock-skew.spec.ts', // consumer processes under faketime
  'test/sql/postgres.clock-skew.spec.ts', // consumer processes under faketime
  'test/dashboard/*.browser.spec.ts', // Chromium
];

// The specs that take ten seconds or more alone (processes killed and restarted,
// servers of their own, the CLI built and run as a process): the parallel run starts them first, so
// its lanes end together instead of one long spec running alone at the end. Longest
// first, as measured alone. The failover spec, on a cluster of its own, mostly waits
// for a promotion: started early, its waits overlap the other lane's work.
// test/sequencer.js reads this; Jest's own timings, when it has them, order the rest.
const SLOW = [
  'test/sql/postgres.transactional-kill.spec.ts',
  'test/redis/cluster-failover.spec.ts',
  'test/sql/postgres.multiprocess.spec.ts',
  'test/sql/postgres.pause.spec.ts',
  'test/redis/pause.spec.ts',
  'test/redis/bounded.spec.ts',
  'test/sql/upgrade-postgres.spec.ts',
  'test/cli/cli-bin.spec.ts',
  'test/sql/bulk.spec.ts',
  'test/redis/multiprocess.spec.ts',
  'test/conformance/postgres.conformance.spec.ts',
  'test/redis/broadcast.spec.ts',
  'test/sql/postgres.broadcast.spec.ts',
  'test/sql/postgres.flow.spec.ts',
  'test/redis/flow.multiprocess.spec.ts',
  'test/sql/sqlite.flow.spec.ts',
  'test/runtime/memory.flow.spec.ts',
];

/** Every spec file under test/, as a path from the root with `/` separators. */
function allSpecs() {
  const out = [];
  const walk = (dir) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (name === 'node_modules') continue;
      if (statSync(path).isDirectory()) walk(path);
      else if (name.endsWith('.spec.ts')) out.push(relative(ROOT, path).split(sep).join('/'));
    }
  };
  walk(join(ROOT, 'test'));
  return out.sort();
}

function matcher(pattern) {
  const source = pattern.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*');
  return new RegExp(pattern.endsWith('/') ? `^${source}` : `^${source}$`);
}

/** The files of `files` that `patterns` select (any positive pattern, no `!` pattern). */
function select(patterns, files) {
  const include = patterns.filter((p) => !p.startsWith('!')).map(matcher);
  const exclude = patterns.filter((p) => p.startsWith('!')).map((p) => matcher(p.slice(1)));
  return files.filter((f) => include.some((r) => r.test(f)) && !exclude.some((r) => r.test(f)));
}

/**
 * The spec files of a selection: a tier's name, `parallel` (every spec but the
 * serial ones) or `serial`. Throws on an unknown name.
 */
function specsOf(selection, files = allSpecs()) {
  if (selection === 'serial') return select(SERIAL, files);
  if (selection === 'parallel') {
    const serial = new Set(select(SERIAL, files));
    return files.filter((f) => !serial.has(f));
  }
  const tier = TIERS[selection];
  if (!tier) throw new Error(`unknown test selection "${selection}": one of ${[...Object.keys(TIERS), 'parallel', 'serial'].join(', ')}`);
  return select(tier.specs, files);
}

/** What is wrong with the tiers: a spec in no tier, a pattern that selects nothing. */
function problems(files = allSpecs()) {
  const found = [];
  const tiered = new Set(Object.keys(TIERS).flatMap((name) => specsOf(name, files)));
  for (const f of files) if (!tiered.has(f)) found.push(`${f} is in no tier (add it to test/tiers.js)`);
  const patterns = [...Object.values(TIERS).flatMap((t) => t.specs), ...SERIAL, ...SLOW].map((p) => p.replace(/^!/, ''));
  for (const p of new Set(patterns)) if (select([p], files).length === 0) found.push(`test/tiers.js: "${p}" matches no spec`);
  return found;
}

module.exports = { TIERS, SERIAL, SLOW, allSpecs, specsOf, problems };
