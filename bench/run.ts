// `npm run bench -- <backend>`: runs bench/<backend>.ts's `main()`, with the
// arguments after the name (`npm run bench -- scale postgres --events 100000`).
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

const NOT_BENCHES = new Set(['harness', 'run']);

function available(): string[] {
  return readdirSync(__dirname)
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))
    .map((f) => f.slice(0, -3))
    .filter((name) => /^[a-z0-9-]+$/.test(name) && !NOT_BENCHES.has(name))
    .sort();
}

async function run(): Promise<void> {
  const name = process.argv[2];
  if (!name || !/^[a-z0-9-]+$/.test(name) || NOT_BENCHES.has(name) || !existsSync(join(__dirname, `${name}.ts`))) {
    console.error(`usage: npm run bench -- <bench> [arguments]   (one of: ${available().join(', ')}; scale takes a backend)`);
    process.exitCode = 2;
    return;
  }
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const bench = require(join(__dirname, name)) as { main?: (args: string[]) => Promise<void> };
  if (typeof bench.main !== 'function') throw new Error(`bench/${name}.ts exports no main()`);
  await bench.main(process.argv.slice(3));
}

run().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
