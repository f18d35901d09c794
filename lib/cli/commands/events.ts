// The commands on events: tail (and follow) a stream, append one event.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Command } from 'commander';
import type { RheoAdmin } from '../../admin/rheo-admin';
import type { EventSummary } from '../../admin/types';
import type { EventMetadata, JsonValue } from '../../core/types';
import { type Column, fields, type Io, json, preview, table } from '../output';
import { progress } from '../progress';
import { type GlobalOptions, withAdmin, withReadOnlyAdmin } from '../store';
import { intervalMs, jsonObject, jsonValue, positiveNumber } from '../usage';

const EVENT_COLUMNS: Column<EventSummary>[] = [
  { header: 'TIMESTAMP', cell: (e) => e.timestamp },
  { header: 'PARTITION', cell: (e) => e.partition },
  { header: 'SEQUENCE', cell: (e) => e.sequence },
  { header: 'TYPE', cell: (e) => e.type },
  { header: 'KEY', cell: (e) => e.key },
  { header: 'ID', cell: (e) => e.id },
  { header: 'PAYLOAD', cell: (e) => preview(e.payload) },
];

interface TailOptions {
  follow?: boolean;
  where?: Record<string, unknown>;
  limit: number;
  cursor?: string;
  interval: number;
}

/**
 * Follow: poll for what comes after the last page until SIGINT / SIGTERM, or
 * until stdout closes (`| head`); each stop is a normal end (exit code 0). With
 * --json, one event per line.
 */
async function follow(admin: RheoAdmin, io: Io, stream: string, opts: TailOptions, asJson: boolean, cursor: string | null): Promise<void> {
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  process.stdout.once('error', onSignal); // EPIPE: the reader went away
  const status = progress({ isTTY: io.errIsTTY, write: io.err }, `following ${stream} (Ctrl-C to stop)`);
  const widths: number[] = [];
  let header = true;
  try {
    while (!stop.signal.aborted) {
      const page = await admin.tail(stream, { where: opts.where, limit: opts.limit, cursor: cursor ?? undefined });
      cursor = page.next;
      if (page.items.length > 0) {
        io.out(asJson ? page.items.map(json).join('') : table(page.items, EVENT_COLUMNS, '', widths, header));
        header = false;
      }
      // A full page means more is waiting: read on at once.
      if (page.items.length < opts.limit) await sleep(opts.interval, undefined, { signal: stop.signal }).catch(() => undefined);
    }
  } finally {
    status.done();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    process.stdout.off('error', onSignal);
  }
}

export function eventCommands(program: Command, io: Io): void {
  program
    .command('tail <stream>')
    .description('the newest events of a stream (all partitions, newest last); --follow to keep printing new ones')
    .option('--follow', 'keep printing new events until interrupted (--json: one event per line)')
    .option('--where <json>', 'only events matching this query filter, e.g. \'{"type":"order.paid"}\'', jsonObject)
    .option('--limit <n>', 'events per page (1-1000)', positiveNumber, 20)
    .option('--cursor <cursor>', "start after a previous tail's `next` instead of at the latest events")
    .option('--interval <ms>', 'with --follow, how often to look for new events (1-2147483647)', intervalMs, 1000)
    .action((stream: string, opts: TailOptions, cmd: Command) =>
      withReadOnlyAdmin(cmd.optsWithGlobals<GlobalOptions>(), async (admin) => {
        const asJson = cmd.optsWithGlobals<GlobalOptions>().json === true;
        if (opts.follow) {
          // The first page is the latest events (or those after --cursor), printed like every later one.
          return follow(admin, io, stream, opts, asJson, opts.cursor ?? null);
        }
        const page = await admin.tail(stream, { where: opts.where, limit: opts.limit, cursor: opts.cursor });
        io.out(asJson ? json(page) : table(page.items, EVENT_COLUMNS, `No events in ${stream}.`));
      }),
    );

  program
    .command('append <stream>')
    .description('append one event')
    .requiredOption('--payload <json>', 'the payload, as JSON', jsonValue)
    .option('--key <key>', 'routing key (picks the partition)')
    .option('--type <type>', 'event type')
    .option('--id <id>', 'event id: appending a known id again writes nothing and prints the stored event')
    .option('--metadata <json>', 'metadata, a JSON object', jsonObject)
    .action(
      (stream: string, opts: { payload: JsonValue; key?: string; type?: string; id?: string; metadata?: EventMetadata }, cmd: Command) =>
        withAdmin(cmd.optsWithGlobals<GlobalOptions>(), async (admin) => {
          const e = await admin.append(stream, opts);
          if (cmd.optsWithGlobals<GlobalOptions>().json) return io.out(json(e));
          io.out(
            fields([
              ['id', e.id],
              ['partition', e.partition],
              ['sequence', e.sequence],
              ['timestamp', e.timestamp],
              ['type', e.type],
              ['key', e.key],
            ]),
          );
        }),
    );
}
