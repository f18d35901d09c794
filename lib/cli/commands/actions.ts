// The commands that change a group or a stream: redrive, replay, reset, trim,
// purge. The destructive ones pass --confirm through to the service, which
// refuses without it (the CLI turns that refusal into exit code 2).
import { Command, Option } from 'commander';
import type { RheoAdmin } from '../../admin/rheo-admin';
import { type Column, type Io, json, table } from '../output';
import { progress } from '../progress';
import { type GlobalOptions, withAdmin } from '../store';
import { exactlyOne, jsonObject, wholeNumber } from '../usage';

/** Ids per redrive call: a long --id list is redriven in slices, with progress between them. */
const REDRIVE_SLICE = 100;

async function redriveIds(admin: RheoAdmin, io: Io, stream: string, group: string, ids: string[]): Promise<number> {
  const status = progress({ isTTY: io.errIsTTY, write: io.err }, `redriving ${stream}/${group}`);
  let redriven = 0;
  try {
    for (let i = 0; i < ids.length; i += REDRIVE_SLICE) {
      redriven += (await admin.redrive(stream, group, { eventIds: ids.slice(i, i + REDRIVE_SLICE) })).redriven;
      status.update(`${Math.min(i + REDRIVE_SLICE, ids.length)}/${ids.length} ids`);
    }
  } finally {
    status.done();
  }
  return redriven;
}

/** One long call with an elapsed-time line on a terminal. */
async function timed<T>(io: Io, label: string, work: () => Promise<T>): Promise<T> {
  const status = progress({ isTTY: io.errIsTTY, write: io.err }, label);
  try {
    return await work();
  } finally {
    status.done();
  }
}

export function actionCommands(program: Command, io: Io): void {
  program
    .command('redrive <stream> <group>')
    .description('make dead letters deliverable again: some (--id), or all (--all --confirm)')
    .addOption(new Option('--all', 'every dead letter of the group (needs --confirm)').conflicts('id'))
    .option('--id <eventId...>', 'the dead letters to redrive, by event id')
    .option('--confirm', 'confirm --all')
    .action((stream: string, group: string, opts: { all?: boolean; id?: string[]; confirm?: boolean }, cmd: Command) => {
      exactlyOne(opts, { all: '--all', id: '--id' });
      return withAdmin(cmd.optsWithGlobals<GlobalOptions>(), async (admin) => {
        const redriven = opts.all
          ? (
              await timed(io, `redriving ${stream}/${group}`, () =>
                admin.redrive(stream, group, { all: true, confirm: opts.confirm === true }),
              )
            ).redriven
          : await redriveIds(admin, io, stream, group, opts.id ?? []);
        io.out(
          cmd.optsWithGlobals<GlobalOptions>().json ? json({ redriven }) : `Redrove ${redriven} dead letter(s) of ${stream}/${group}.\n`,
        );
      });
    });

  program
    .command('replay <stream> <group>')
    .description("re-open a group's deliveries: after a sequence, from a time, or the events a filter matches")
    .option('--after-sequence <n>', 'events after sequence n, in every partition (0: all)', wholeNumber)
    .option('--from <time>', 'events stamped at or after this ISO 8601 time')
    .option('--where <json>', 'the events matching this query filter, e.g. \'{"type":"order.paid"}\'', jsonObject)
    .action(
      (stream: string, group: string, opts: { afterSequence?: number; from?: string; where?: Record<string, unknown> }, cmd: Command) => {
        const kind = exactlyOne(opts, { afterSequence: '--after-sequence', from: '--from', where: '--where' });
        const from =
          kind === 'afterSequence'
            ? { afterSequence: opts.afterSequence! }
            : kind === 'from'
              ? { from: opts.from! }
              : { where: opts.where! };
        return withAdmin(cmd.optsWithGlobals<GlobalOptions>(), async (admin) => {
          const { replayed } = await timed(io, `replaying ${stream}/${group}`, () => admin.replay(stream, group, from));
          io.out(
            cmd.optsWithGlobals<GlobalOptions>().json ? json({ replayed }) : `Re-opened ${replayed} event(s) of ${stream}/${group}.\n`,
          );
        });
      },
    );

  program
    .command('reset <stream> <group>')
    .description('forget every delivery of a group and restart it at --start (needs --confirm)')
    .option('--start <position>', 'beginning (default), end, a sequence N, per partition 0:N,1:M, or an ISO time')
    .option('--confirm', 'confirm the reset')
    .action((stream: string, group: string, opts: { start?: string; confirm?: boolean }, cmd: Command) =>
      withAdmin(cmd.optsWithGlobals<GlobalOptions>(), async (admin) => {
        const result = await admin.reset(stream, group, { start: opts.start, confirm: opts.confirm === true });
        io.out(
          cmd.optsWithGlobals<GlobalOptions>().json
            ? json(result)
            : `Reset ${stream}/${group}: it restarts from ${opts.start ?? 'beginning'}.\n`,
        );
      }),
    );

  program
    .command('trim <stream>')
    .description("apply the stream's retention now; --force also past groups that have not finished (needs --confirm)")
    .option('--force', 'trim events groups have not finished too')
    .option('--confirm', 'confirm --force')
    .action((stream: string, opts: { force?: boolean; confirm?: boolean }, cmd: Command) =>
      withAdmin(cmd.optsWithGlobals<GlobalOptions>(), async (admin) => {
        const result = await timed(io, `trimming ${stream}`, () =>
          admin.trim(stream, { force: opts.force === true, confirm: opts.confirm === true }),
        );
        if (cmd.optsWithGlobals<GlobalOptions>().json) return io.out(json(result));
        const skipped = Object.entries(result.skipped).filter(([, n]) => n > 0);
        const columns: Column<[string, number]>[] = [
          { header: 'GROUP', cell: ([g]) => g },
          { header: 'UNFINISHED EVENTS REMOVED', cell: ([, n]) => n },
        ];
        io.out(`Removed ${result.removed} event(s) from ${stream}.\n${skipped.length ? table(skipped, columns, '') : ''}`);
      }),
    );

  program
    .command('purge <stream> <group>')
    .description("delete a group's dead letters: those dead-lettered before a time, or all")
    .option('--before <time>', 'dead-lettered before this ISO 8601 time')
    .option('--all', 'every dead letter of the group')
    .action((stream: string, group: string, opts: { before?: string; all?: boolean }, cmd: Command) => {
      exactlyOne(opts, { before: '--before', all: '--all' });
      return withAdmin(cmd.optsWithGlobals<GlobalOptions>(), async (admin) => {
        const { purged } = await timed(io, `purging ${stream}/${group}`, () => admin.purgeDeadLetters(stream, group, opts));
        io.out(cmd.optsWithGlobals<GlobalOptions>().json ? json({ purged }) : `Purged ${purged} dead letter(s) of ${stream}/${group}.\n`);
      });
    });
}
