// `rheo pause` and `rheo resume`: a group held back from claiming in every process,
// and let go again (Rheo#pauseGroup, docs/adr/046-pausing-a-group.md). Each changes
// what every process of the group does, so each needs --confirm, as `rheo group set` does.
import type { Command } from 'commander';
import type { GroupPauseSummary, PauseGroupInput } from '../../admin/types';
import { type Cell, fields, type Io, json } from '../output';
import { type GlobalOptions, withAdmin } from '../store';

interface PauseOptions {
  until?: string;
  reason?: string;
  by?: string;
  confirm?: boolean;
}

/** A pause as label / value pairs: `rheo pause` prints them, `rheo info` shows them under the group's figures. */
export function pauseFields(p: GroupPauseSummary): Array<[string, Cell]> {
  return [
    ['paused since', p.pausedAt],
    ['paused until', p.until ?? 'resumed'],
    ['paused by', p.by],
    ['pause reason', p.reason],
  ];
}

export function pauseCommands(program: Command, io: Io): void {
  program
    .command('pause <stream> <group>')
    .description(
      'stop every process claiming the events of a group, until --until or `rheo resume`; handlers running finish and settle (needs --confirm)',
    )
    .option('--until <time>', 'resume by itself then: an ISO 8601 time, or a duration from now such as 90s, 30m, 2h, 1d')
    .option('--reason <text>', 'why, shown by `rheo info`, the dashboard and the health check')
    .option('--by <who>', 'who paused it, shown beside the reason')
    .option('--confirm', 'confirm the pause')
    .action((stream: string, group: string, opts: PauseOptions, cmd: Command) => {
      const input: PauseGroupInput = { confirm: opts.confirm === true };
      if (opts.until !== undefined) input.until = opts.until;
      if (opts.reason !== undefined) input.reason = opts.reason;
      if (opts.by !== undefined) input.by = opts.by;
      const globals = cmd.optsWithGlobals<GlobalOptions>();
      return withAdmin(globals, async (admin) => {
        const pause = await admin.pauseGroup(stream, group, input);
        if (globals.json) return io.out(json(pause));
        io.out(`Paused ${stream}/${group}: no process claims its events until it resumes.\n${fields(pauseFields(pause))}`);
      });
    });

  program
    .command('resume <stream> <group>')
    .description('let every process claim the events of a paused group again, at once (needs --confirm)')
    .option('--confirm', 'confirm the resume')
    .action((stream: string, group: string, opts: { confirm?: boolean }, cmd: Command) => {
      const globals = cmd.optsWithGlobals<GlobalOptions>();
      return withAdmin(globals, async (admin) => {
        const result = await admin.resumeGroup(stream, group, { confirm: opts.confirm === true });
        if (globals.json) return io.out(json(result));
        io.out(result.resumed ? `Resumed ${stream}/${group}.\n` : `${stream}/${group} was not paused; nothing changed.\n`);
      });
    });
}
