// `rheo skip`, `rheo reschedule`, `rheo cancel-delayed`: an operator's hand on the
// deliveries waiting in a group (docs/adr/048-skip-reschedule-cancel.md). Each
// changes what every process of the group runs, so each needs --confirm. A skip or
// reschedule answers per event; when some were left alone (in flight, settled,
// unknown), each is named and the command ends with exit code 1.
import { Command } from 'commander';
import type { WaitingResultSummary } from '../../admin/types';
import { RheoError, type RheoErrorCode } from '../../core/errors';
import { escapeControls, type Io, json } from '../output';
import { type GlobalOptions, withAdmin } from '../store';
import { exactlyOne, wholeNumber } from '../usage';

/** Print one line per event, and fail (exit code 1) when any was left alone. */
function report(io: Io, globals: GlobalOptions, verb: string, where: string, s: WaitingResultSummary): void {
  if (globals.json) io.out(json(s));
  else {
    const lines = s.results.map((r) =>
      r.ok ? `${verb} ${escapeControls(r.eventId)}` : `left ${escapeControls(r.eventId)}: ${r.code}: ${escapeControls(r.message)}`,
    );
    io.out(`${lines.join('\n')}\n${verb} ${s.done} of ${s.results.length} delivery(ies) of ${where}.\n`);
  }
  const refused = s.results.find((r) => !r.ok);
  if (refused && !refused.ok) {
    const left = s.results.length - s.done;
    throw new RheoError(refused.code as RheoErrorCode, `${left} of ${s.results.length} event(s) were left alone (see above)`);
  }
}

export function waitingCommands(program: Command, io: Io): void {
  program
    .command('skip <stream> <group>')
    .description('settle waiting deliveries as handled without running the handler: retries, parked delayed events (needs --confirm)')
    .requiredOption('--id <eventId...>', 'the events to skip, by id')
    .option('--reason <text>', 'why, shown in the group info')
    .option('--confirm', 'confirm the skip')
    .action((stream: string, group: string, opts: { id: string[]; reason?: string; confirm?: boolean }, cmd: Command) => {
      const globals = cmd.optsWithGlobals<GlobalOptions>();
      return withAdmin(globals, async (admin) => {
        const input = { eventIds: opts.id, confirm: opts.confirm === true, ...(opts.reason === undefined ? {} : { reason: opts.reason }) };
        report(io, globals, 'Skipped', `${stream}/${group}`, await admin.skip(stream, group, input));
      });
    });

  program
    .command('reschedule <stream> <group>')
    .description('make waiting deliveries due at another time, their attempt kept: --at a time or --delay-ms (needs --confirm)')
    .requiredOption('--id <eventId...>', 'the events to reschedule, by id')
    .option('--at <time>', 'an ISO 8601 time (at most a year ahead)')
    .option('--delay-ms <ms>', 'this many ms from now, by the store clock', wholeNumber)
    .option('--confirm', 'confirm the change')
    .action((stream: string, group: string, opts: { id: string[]; at?: string; delayMs?: number; confirm?: boolean }, cmd: Command) => {
      const kind = exactlyOne(opts, { at: '--at', delayMs: '--delay-ms' });
      const globals = cmd.optsWithGlobals<GlobalOptions>();
      return withAdmin(globals, async (admin) => {
        const when = kind === 'at' ? { deliverAt: opts.at! } : { delayMs: opts.delayMs! };
        const s = await admin.reschedule(stream, group, { eventIds: opts.id, confirm: opts.confirm === true, ...when });
        report(io, globals, 'Rescheduled', `${stream}/${group}`, s);
      });
    });

  program
    .command('cancel-delayed <stream> <eventId>')
    .description('cancel a delayed event in every group of the stream: no group runs it (needs --confirm)')
    .option('--reason <text>', 'why, shown in the info of each group it was still to run in')
    .option('--confirm', 'confirm the cancel')
    .action((stream: string, eventId: string, opts: { reason?: string; confirm?: boolean }, cmd: Command) => {
      const globals = cmd.optsWithGlobals<GlobalOptions>();
      return withAdmin(globals, async (admin) => {
        const input = { confirm: opts.confirm === true, ...(opts.reason === undefined ? {} : { reason: opts.reason }) };
        const { groups } = await admin.cancelDelayed(stream, eventId, input);
        io.out(
          globals.json ? json({ groups }) : `Cancelled ${escapeControls(eventId)} of ${stream}: ${groups} group(s) had it still to run.\n`,
        );
      });
    });
}
