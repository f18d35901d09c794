// `rheo group set`: a group's stored settings changed in place (Rheo#updateGroup,
// docs/adr/047-changing-a-group-in-place.md). It changes how every process of the
// group claims, retries and dead-letters, so it needs --confirm, as the other
// commands that change a group for every process do.
import { Command, InvalidArgumentError } from 'commander';
import type { UpdateGroupInput } from '../../admin/types';
import { fields, type Io, json, retryText } from '../output';
import { type GlobalOptions, withAdmin } from '../store';
import { UsageError, wholeNumber } from '../usage';
import { flowFields } from './inspect';

/** A retry factor: a plain decimal number (the facade checks its range). */
function decimal(value: string): number {
  if (!/^\d{1,6}(\.\d{1,6})?$/.test(value)) throw new InvalidArgumentError('must be a number such as 2 or 1.5');
  return Number(value);
}

// commander stores an empty string for a parser's null: `none` stays a word until the action maps it.
type None = 'none';

/** A limit, or `none` to remove it (the facade checks its range). */
function limitOrNone(value: string): number | None {
  return value === 'none' ? value : wholeNumber(value);
}

/** `<max>/<perMs>` (`100/1000`: 100 starts a second), or `none` to remove the limit. */
function rateLimit(value: string): { max: number; perMs: number } | None {
  if (value === 'none') return value;
  const m = /^(\d{1,15})\/(\d{1,15})$/.exec(value);
  if (!m) throw new InvalidArgumentError("must be <max>/<perMs>, such as 100/1000 (100 per second), or 'none'");
  return { max: Number(m[1]), perMs: Number(m[2]) };
}

interface SetOptions {
  maxAttempts?: number;
  retryInitialMs?: number;
  retryFactor?: number;
  retryMaxMs?: number;
  keyConcurrency?: number;
  groupConcurrency?: number | None;
  rateLimit?: { max: number; perMs: number } | None;
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
    .option('--key-concurrency <n>', 'most open deliveries per key, for a group created with keyConcurrency', wholeNumber)
    .option(
      '--group-concurrency <n|none>',
      'most leases of the group in flight at once, across every process; none removes it',
      limitOrNone,
    )
    .option(
      '--rate-limit <max/perMs|none>',
      'most deliveries started per perMs ms, across every process (100/1000); none removes it',
      rateLimit,
    )
    .option('--confirm', 'confirm the change')
    .action((stream: string, name: string, opts: SetOptions, cmd: Command) => {
      const input: UpdateGroupInput = { confirm: opts.confirm === true };
      if (opts.maxAttempts !== undefined) input.maxAttempts = opts.maxAttempts;
      const retry: NonNullable<UpdateGroupInput['retry']> = {};
      if (opts.retryInitialMs !== undefined) retry.initialMs = opts.retryInitialMs;
      if (opts.retryFactor !== undefined) retry.factor = opts.retryFactor;
      if (opts.retryMaxMs !== undefined) retry.maxMs = opts.retryMaxMs;
      if (Object.keys(retry).length > 0) input.retry = retry;
      if (opts.keyConcurrency !== undefined) input.keyConcurrency = opts.keyConcurrency;
      if (opts.groupConcurrency !== undefined) input.groupConcurrency = opts.groupConcurrency === 'none' ? null : opts.groupConcurrency;
      if (opts.rateLimit !== undefined) input.rateLimit = opts.rateLimit === 'none' ? null : opts.rateLimit;
      if (Object.keys(input).length === 1)
        throw new UsageError(
          'nothing to change: give --max-attempts, --retry-initial-ms, --retry-factor, --retry-max-ms, ' +
            '--key-concurrency, --group-concurrency or --rate-limit',
        );
      const globals = cmd.optsWithGlobals<GlobalOptions>();
      return withAdmin(globals, async (admin) => {
        const s = await admin.updateGroup(stream, name, input);
        if (globals.json) return io.out(json(s));
        io.out(
          `Changed the settings of ${stream}/${name}:\n` +
            fields([['max attempts', s.maxAttempts], ['retry', retryText(s.retry)], ['ordering', s.ordering], ...flowFields(s)]),
        );
      });
    });
}
