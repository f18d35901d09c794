// Runs TypeScript in a child process where every optional peer (drivers,
// Terminus) is unresolvable, as on a machine where the user installed none of
// them (see block-drivers.js). Returns what the child printed.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

const root = join(__dirname, '..', '..');

/** `code` is evaluated with `-e` from the repository root (`require('./lib')` works). */
export function evalWithoutDrivers(code: string): string {
  return runWithoutDrivers(['-e', code]);
}

/** Run a script file without the optional peers. */
export function scriptWithoutDrivers(file: string): string {
  return runWithoutDrivers([file]);
}

function runWithoutDrivers(args: string[]): string {
  return execFileSync(process.execPath, ['-r', 'ts-node/register/transpile-only', '-r', './test/support/block-drivers.js', ...args], {
    cwd: root,
    encoding: 'utf8',
    env: { ...process.env, TS_NODE_PROJECT: join(root, 'tsconfig.json') },
  });
}
