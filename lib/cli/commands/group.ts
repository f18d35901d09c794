// `rheo group set`: a group's stored settings changed in place (Rheo#updateGroup,
// docs/adr/047-changing-a-group-in-place.md). It changes how every process of the
// group retries and dead-letters, so it needs --confirm, as the other commands that
// change a group for every process do.
import { Command, InvalidArgumentError } from 'commander';
import type { UpdateGroupInput } from '../../admin/types';
import { fields, type Io, json, retryText } from '../output';
import { type GlobalOptions, withAdmin } from '../store';
import { UsageError, wholeNumber } from '../usage';

/** A retry factor: a plain decimal number (the facade checks its range). */
function decimal(value: string): number {
  if (!/^\d{1,6}(\.\d{1,6})?$/.test(value)) throw new InvalidArgumentError('must be a number such as 2 or 1.5');
  return Number(value);
}

interface SetOptions {
  maxAttempts?: number;
  retryInitialMs?: number;
  retryFactor?: number;
  retryMaxMs?: number;
  confirm?: boolean;
}

export function groupCommands(program: Command, io: Io): void {
  const group = program.command('group').description("change a consumer group's stored settings");
  group
    .command('set <stream> <group>')
    .description(
      "change a group's settings in place, its deliveries kept; every process applies them at its next claim or settle (needs --confirm)",
    )
    .option('--max-attempts <n>', 'deliveries per event before it is dead-lettered', wholeNumber)
    .option('--retry-initial-ms <ms>', 'the delay before the first retry', wholeNumber)
    .option('--retry-factor <x>', 'the factor each later retry waits longer by', decimal)
    .option('--retry-max-ms <ms>', 'the longest delay between retries', wholeNumber)
    .option('--confirm', 'confirm the change')
    .action((stream: string, name: string, opts: SetOptions, cmd: Command) => {
      const input: UpdateGroupInput = { confirm: opts.confirm === true };
      if (opts.maxAttempts !== undefined) input.maxAttempts = opts.maxAttempts;
      const retry: NonNullable<UpdateGroupInput['retry']> = {};
      if (opts.retryInitialMs !== undefined) retry.initialMs = opts.retryInitialMs;
      if (opts.retryFactor !== undefined) retry.factor = opts.retryFactor;
      if (opts.retryMaxMs !== undefined) retry.maxMs = opts.retryMaxMs;
      if (Object.keys(retry).length > 0) input.retry = retry;
      if (input.maxAttempts === undefined && input.retry === undefined)
        throw new UsageError('nothing to change: give --max-attempts, --retry-initial-ms, --retry-factor or --retry-max-ms');
      const globals = cmd.optsWithGlobals<GlobalOptions>();
      return withAdmin(globals, async (admin) => {
        const s = await admin.updateGroup(stream, name, input);
        if (globals.json) return io.out(json(s));
        io.out(
          `Changed the settings of ${stream}/${name}:\n` +
            fields([
              ['max attempts', s.maxAttempts],
              ['retry', retryText(s.retry)],
              ['ordering', s.ordering],
            ]),
        );
      });
    });
}
