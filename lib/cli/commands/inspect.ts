// The read-only commands: streams, groups, lag, info, dead-letters (and tail, in events.ts).
import type { Command } from 'commander';
import type { GroupSummary, StreamSummary } from '../../admin/types';
import type { Retention } from '../../core/types';
import { type Column, duration, escapeControls, fields, type Io, json, limitsText, oneLine, preview, retryText, table } from '../output';
import { type GlobalOptions, withReadOnlyAdmin } from '../store';
import { positiveNumber } from '../usage';
import { pauseFields } from './pause';

function retention(r: Retention | null): string {
  if (!r) return 'keep all';
  const parts: string[] = [];
  if (r.maxEvents !== undefined) parts.push(`${r.maxEvents} events`);
  if (r.maxAgeMs !== undefined) parts.push(duration(r.maxAgeMs));
  if (r.deadLetterMaxAgeMs !== undefined) parts.push(`dead letters ${duration(r.deadLetterMaxAgeMs)}`);
  return parts.join(', ');
}

const STREAM_COLUMNS: Column<StreamSummary>[] = [
  { header: 'STREAM', cell: (s) => s.name },
  { header: 'PARTITIONS', cell: (s) => s.partitions },
  { header: 'EVENTS', cell: (s) => s.highWatermark },
  { header: 'RETENTION', cell: (s) => retention(s.retention) },
  { header: 'CREATED', cell: (s) => s.createdAt },
];

const GROUP_COLUMNS: Column<GroupSummary>[] = [
  { header: 'GROUP', cell: (g) => g.group },
  { header: 'LAG', cell: (g) => g.lag },
  { header: 'INFLIGHT', cell: (g) => g.inflight },
  { header: 'DEAD LETTERS', cell: (g) => g.deadLetters },
  { header: 'OLDEST UNSETTLED', cell: (g) => duration(g.oldestUnsettledAgeMs) },
  { header: 'MAX ATTEMPTS', cell: (g) => g.maxAttempts },
  { header: 'ORDERING', cell: (g) => g.ordering },
  { header: 'LIMITS', cell: (g) => limitsText(g) },
  { header: 'WAITING FOR KEY', cell: (g) => g.waitingForKey },
  { header: 'PAUSED', cell: (g) => (g.paused ? (g.paused.until ? `until ${g.paused.until}` : 'yes') : 'no') },
];

type Partition = GroupSummary['partitions'][number];
const PARTITION_COLUMNS: Column<Partition>[] = [
  { header: 'PARTITION', cell: (p) => p.partition },
  { header: 'FRONTIER', cell: (p) => p.frontier },
  { header: 'HIGH WATERMARK', cell: (p) => p.highWatermark },
  { header: 'LAG', cell: (p) => p.lag },
];

/** The lag figures of a group, as `lag --json` prints them. */
function lagOf(g: GroupSummary) {
  return { stream: g.stream, group: g.group, lag: g.lag, partitions: g.partitions };
}

function warnings(g: GroupSummary): string {
  return g.warnings.map((w) => `warning: ${escapeControls(w)}\n`).join('');
}

export function inspectCommands(program: Command, io: Io): void {
  program
    .command('streams')
    .description('list the streams: partitions, events appended (the high watermark), retention')
    .action((_opts, cmd: Command) =>
      withReadOnlyAdmin(cmd.optsWithGlobals<GlobalOptions>(), async (admin) => {
        const streams = await admin.streams();
        io.out(cmd.optsWithGlobals<GlobalOptions>().json ? json(streams) : table(streams, STREAM_COLUMNS, 'No streams.'));
      }),
    );

  program
    .command('groups <stream>')
    .description("list a stream's consumer groups: lag, inflight, dead letters, oldest unsettled event, settings, flow limits, pause")
    .action((stream: string, _opts, cmd: Command) =>
      withReadOnlyAdmin(cmd.optsWithGlobals<GlobalOptions>(), async (admin) => {
        const groups = await admin.groups(stream);
        io.out(cmd.optsWithGlobals<GlobalOptions>().json ? json(groups) : table(groups, GROUP_COLUMNS, `No groups on ${stream}.`));
      }),
    );

  program
    .command('lag <stream> [group]')
    .description('how far behind its stream each group is; with a group, per partition')
    .action((stream: string, group: string | undefined, _opts, cmd: Command) =>
      withReadOnlyAdmin(cmd.optsWithGlobals<GlobalOptions>(), async (admin) => {
        const asJson = cmd.optsWithGlobals<GlobalOptions>().json;
        if (group === undefined) {
          const groups = await admin.groups(stream);
          const columns = GROUP_COLUMNS.slice(0, 2);
          io.out(asJson ? json(groups.map(lagOf)) : table(groups, columns, `No groups on ${stream}.`));
          return;
        }
        const g = await admin.group(stream, group);
        io.out(asJson ? json(lagOf(g)) : `${table(g.partitions, PARTITION_COLUMNS, '')}total lag ${g.lag}\n`);
      }),
    );

  program
    .command('info <stream> <group>')
    .description("a group's state: lag, inflight, dead letters, oldest unsettled event, settings, pause, partitions, warnings")
    .action((stream: string, group: string, _opts, cmd: Command) =>
      withReadOnlyAdmin(cmd.optsWithGlobals<GlobalOptions>(), async (admin) => {
        const g = await admin.group(stream, group);
        if (cmd.optsWithGlobals<GlobalOptions>().json) return io.out(json(g));
        const summary = fields([
          ['stream', g.stream],
          ['group', g.group],
          ['lag', g.lag],
          ['inflight', g.inflight],
          ['dead letters', g.deadLetters],
          ['oldest unsettled', duration(g.oldestUnsettledAgeMs)],
          ['max attempts', g.maxAttempts],
          ['retry', retryText(g.retry)],
          ['ordering', g.ordering],
          ...flowFields(g),
          ['waiting for key', g.waitingForKey],
          ['paused', g.paused ? 'yes' : 'no'],
          ...(g.paused ? pauseFields(g.paused) : []),
          ['skipped', skipped(g.skipped)],
        ]);
        io.out(`${summary}\n${table(g.partitions, PARTITION_COLUMNS, '')}${warnings(g)}`);
      }),
    );

  program
    .command('dead-letters <stream> <group>')
    .description("a page of a group's dead letters: event, reason, attempt, when")
    .option('--limit <n>', 'page size (1-1000)', positiveNumber, 20)
    .option('--after <eventId>', 'the page after this event id (printed as the next page)')
    .option('--payloads', 'include each event payload')
    .action((stream: string, group: string, opts: { limit: number; after?: string; payloads?: boolean }, cmd: Command) =>
      withReadOnlyAdmin(cmd.optsWithGlobals<GlobalOptions>(), async (admin) => {
        const page = await admin.deadLetters(stream, group, { limit: opts.limit, after: opts.after, withPayloads: opts.payloads });
        if (cmd.optsWithGlobals<GlobalOptions>().json) return io.out(json(page));
        const columns: Column<(typeof page.items)[number]>[] = [
          { header: 'EVENT ID', cell: (d) => d.eventId },
          { header: 'PARTITION', cell: (d) => d.partition },
          { header: 'SEQUENCE', cell: (d) => d.sequence },
          { header: 'ATTEMPT', cell: (d) => d.attempt },
          { header: 'DEAD-LETTERED AT', cell: (d) => d.deadLetteredAt },
          { header: 'TYPE', cell: (d) => d.type },
          { header: 'KEY', cell: (d) => d.key },
          { header: 'REASON', cell: (d) => oneLine(d.reason) },
        ];
        if (opts.payloads) columns.push({ header: 'PAYLOAD', cell: (d) => preview(d.payload) });
        const more = page.next ? `next page: --after ${escapeControls(page.next)}\n` : '';
        io.out(table(page.items, columns, `No dead letters in ${stream}/${group}.`) + more);
      }),
    );
}

/** A group's flow limits (docs/consumers.md#flow-control), in one field. */
export function flowFields(g: Pick<GroupSummary, 'keyConcurrency' | 'groupConcurrency' | 'rateLimit'>): Array<[string, string]> {
  return [['limits', limitsText(g)]];
}

/** A group's skips in a line: how many, and the last one's reason and time. */
function skipped(s: GroupSummary['skipped']): string {
  if (s.count === 0) return '0';
  return `${s.count} (last ${s.lastAt ?? '-'}${s.lastReason === null ? '' : `: ${s.lastReason}`})`;
}
