// The `rheo` command line: global options and the commands, on commander.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Command, Option } from 'commander';
import { actionCommands } from './commands/actions';
import { eventCommands } from './commands/events';
import { groupCommands } from './commands/group';
import { inspectCommands } from './commands/inspect';
import { pauseCommands } from './commands/pause';
import { waitingCommands } from './commands/waiting';
import type { Io } from './output';

/** This package's version, from the nearest package.json named nestjs-rheo above this file (dist/cli/… when installed). */
function version(): string | undefined {
  for (let dir = __dirname; dirname(dir) !== dir; dir = dirname(dir)) {
    const file = join(dir, 'package.json');
    if (!existsSync(file)) continue;
    const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
    if (pkg.name === 'nestjs-rheo') return pkg.version;
  }
  return undefined;
}

const EXIT_CODES = `
Exit codes: 0 done, 1 failed (the error code and message on stderr),
2 bad usage (including a destructive command without --confirm).`;

/** The program, writing through `io`. It throws commander's errors instead of exiting (run.ts maps them). */
export function createProgram(io: Io): Command {
  const program = new Command('rheo')
    .description('Inspect and operate nestjs-rheo streams and consumer groups.')
    .addOption(new Option('--url <url>', 'the store: postgres://…, redis://… or sqlite:<file>').env('RHEO_URL'))
    .addOption(new Option('--schema <schema>', 'PostgreSQL schema of the tables (postgres URLs; default public)').env('RHEO_SCHEMA'))
    .option('--prefix <prefix>', 'Redis key prefix (redis URLs)')
    .option('--json', 'print one JSON document (tail --follow: one per line) instead of a table')
    .addHelpText('after', EXIT_CODES)
    .showHelpAfterError('(add --help for usage)')
    .configureOutput({ writeOut: (t) => io.out(t), writeErr: (t) => io.err(t) })
    // Set before the commands are added, so each inherits it: commander throws, run.ts picks the exit code.
    .exitOverride()
    // RHEO_SCHEMA goes with a PostgreSQL RHEO_URL: a command naming another store ignores it (an explicit --schema is refused).
    .hook('preAction', (root) => {
      const url = root.getOptionValue('url') as string | undefined;
      if (root.getOptionValueSource('schema') === 'env' && !/^postgres(ql)?:/i.test(url ?? '')) root.setOptionValue('schema', undefined);
    });
  const v = version();
  if (v) program.version(v);
  inspectCommands(program, io);
  actionCommands(program, io);
  eventCommands(program, io);
  groupCommands(program, io);
  pauseCommands(program, io);
  waitingCommands(program, io);
  return program;
}
