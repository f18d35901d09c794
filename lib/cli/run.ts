// One run of the CLI: parse, act, and map how it ended to an exit code
// (docs/adr/026-admin-service-and-cli.md): 0 done; 1 failed, with the RheoError's
// code and message on stderr; 2 bad usage, which includes a destructive command
// refused for want of --confirm.
import { CommanderError } from 'commander';
import { RheoError } from '../core/errors';
import { escapeControls, type Io } from './output';
import { createProgram } from './program';
import { UsageError } from './usage';

export const EXIT = { done: 0, failed: 1, usage: 2 } as const;

/** Run the command line `argv` (as process.argv: node, script, args…); resolves to the exit code. */
export async function run(argv: string[], io: Io): Promise<number> {
  const program = createProgram(io);
  try {
    await program.parseAsync(argv);
    return EXIT.done;
  } catch (err) {
    return exitCode(err, io);
  }
}

function exitCode(err: unknown, io: Io): number {
  // commander already printed its message (or the help / the version, exit code 0).
  if (err instanceof CommanderError) return err.exitCode === 0 ? EXIT.done : EXIT.usage;
  if (err instanceof UsageError) {
    io.err(`error: ${escapeControls(err.message)}\n(add --help for usage)\n`);
    return EXIT.usage;
  }
  if (err instanceof RheoError) {
    // A message may quote the store (a name, a value it found): it reaches the terminal escaped too.
    io.err(`error: ${err.code}: ${escapeControls(err.message)}\n`);
    if (err.code !== 'confirm_required') return EXIT.failed;
    io.err('Run it again with --confirm to go ahead.\n');
    return EXIT.usage;
  }
  io.err(`error: failed: ${escapeControls(err instanceof Error ? err.message : String(err))}\n`);
  return EXIT.failed;
}
