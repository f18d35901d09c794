// The one admin service behind the `rheo` command line, the dashboard's JSON API
// and RheoClient's admin methods. Thin over the facade (which validates every
// field): it reads what an operator looks at in as few backend calls as the
// facade allows, turns records into JSON-ready DTOs (summaries.ts), reads the
// operator's written inputs (inputs.ts), and refuses destructive actions that
// were not confirmed.
import { RheoError } from '../core/errors';
import { DEFAULT_PAGE_LIMIT } from '../core/limits';
import { checkPageLimit } from '../core/requests';
import type { Rheo } from '../core/rheo';
import type {
  EventMetadata,
  GroupChanges,
  GroupInfo,
  JsonValue,
  PauseGroupOptions,
  PurgeDeadLettersOptions,
  RedriveOptions,
  ReplayOptions,
  RescheduleOptions,
  ResetOptions,
  StreamInfo,
} from '../core/types';
import { checkName, checkObject } from '../core/validate';
import {
  cancelDelayedLine,
  pauseLine,
  purgeLine,
  redriveLine,
  replayLine,
  rescheduleLine,
  resetLine,
  resumeLine,
  skipLine,
  trimLine,
  updateGroupLine,
} from './admin-log';
import { fromLag, readHighWatermarks } from './high-watermarks';
import { checkInput, parseStart, parseTime, parseUntil, requireConfirm } from './inputs';
import { deadLetterSummary, eventSummary, flowSummary, groupSummary, pauseSummary, streamSummary } from './summaries';
import { checkTailOptions, decodeTailCursor, encodeTailCursor, tailAfter, tailLatest } from './tail';
import type {
  AdminActor,
  DeadLetterPage,
  EventSummary,
  GroupPauseSummary,
  GroupSettingsSummary,
  GroupSummary,
  Overview,
  PauseGroupInput,
  RheoAdminOperations,
  StreamSummary,
  UpdateGroupInput,
  CancelDelayedInput,
  RescheduleInput,
  SkipInput,
  WaitingResultSummary,
} from './types';

/** A consumer this process runs, as the dashboard shows it beside its group. */
export interface LocalConsumer {
  stream: string;
  group: string;
  /** The consumer's state: `running`, `backing_off`, … */
  state: string;
}

/** Options of a {@link RheoAdmin}. */
export interface RheoAdminOptions {
  /** The consumers this process runs, read on every summary (so each group shows its local consumer's state). */
  consumers?: () => LocalConsumer[];
  /** Who acts through this service, named in the log lines. Default `client`. */
  actor?: AdminActor;
  /** Where each successful action's line goes (a logger's `log`); nowhere when absent. */
  log?: (line: string) => void;
}

/**
 * The admin operations over one {@link Rheo}: what the `rheo` CLI, the dashboard
 * and scripts use, with JSON-ready results. `reset`, `redrive` of all, a
 * forced `trim`, `updateGroup`, `pauseGroup` and `resumeGroup` refuse without
 * `confirm: true` (`confirm_required`, field `confirm`).
 */
export class RheoAdmin implements RheoAdminOperations {
  private readonly consumers: () => LocalConsumer[];
  private readonly actor: AdminActor;
  private readonly log?: (line: string) => void;

  constructor(
    private readonly rheo: Rheo,
    options: RheoAdminOptions = {},
  ) {
    checkInput('admin', 'options', options);
    this.consumers = options.consumers ?? (() => []);
    this.actor = options.actor ?? 'client';
    this.log = options.log;
  }

  // ---------------------------------------------------------------- reads

  /**
   * One page of the overview: at most `limit` streams (default 100, at most 1000)
   * in name order, those after the stream named `after`, each with all its groups.
   * `total` counts every stream, `offset` is the page's place among them, `next`
   * is the `after` of the next page (null on the last). A page costs reads for its
   * own streams and groups only, however many the store holds.
   */
  async overview(options: { limit?: number; after?: string } = {}): Promise<Overview> {
    checkInput('overview', 'options', options);
    const limit = checkPageLimit('limit', options.limit);
    const after = options.after === undefined ? undefined : checkName('after', options.after);
    const at = new Date(this.rheo.backend.clock.now()).toISOString();
    const infos = await this.streamInfos();
    const offset = after === undefined ? 0 : firstAfter(infos, after);
    const page = infos.slice(offset, offset + limit);
    const streams = await Promise.all(
      page.map(async (info) => {
        const groups = await this.groupInfos(info.name);
        // A group's lag already holds the stream's high watermarks: no extra read.
        const hwm = groups[0] ? fromLag(groups[0].lag, info.partitions) : await readHighWatermarks(this.rheo, info, undefined);
        return { ...streamSummary(info, hwm), groups: this.summarise(groups) };
      }),
    );
    const next = offset + limit < infos.length ? page[page.length - 1].name : null;
    return { at, total: infos.length, offset, next, streams };
  }

  async streams(): Promise<StreamSummary[]> {
    const infos = await this.streamInfos();
    return Promise.all(infos.map((info) => this.streamOf(info)));
  }

  async groups(stream: string): Promise<GroupSummary[]> {
    return this.summarise(await this.groupInfos(stream));
  }

  async group(stream: string, group: string): Promise<GroupSummary> {
    return this.summarise([await this.rheo.groupInfo(stream, group)])[0];
  }

  async deadLetters(
    stream: string,
    group: string,
    options: { limit?: number; after?: string; withPayloads?: boolean } = {},
  ): Promise<DeadLetterPage> {
    checkInput('deadLetters', 'options', options);
    const items = await this.rheo.deadLetters(stream, group, { limit: options.limit, after: options.after });
    const limit = options.limit ?? DEFAULT_PAGE_LIMIT;
    const last = items[items.length - 1];
    return {
      items: items.map((d) => deadLetterSummary(d, options.withPayloads === true)),
      next: items.length === limit && last ? last.eventId : null,
    };
  }

  /**
   * Without `cursor`, the newest `limit` events (default 100), newest last; with
   * one, the events after it, oldest first. `next` is always a cursor (a position
   * per partition), so a follower polls with it and misses nothing, whichever
   * partition moves; under `where` it moves past the events the filter passed
   * over too, so a poll reads only what was appended since the last.
   */
  async tail(
    stream: string,
    options: { where?: Record<string, unknown>; limit?: number; cursor?: string } = {},
  ): Promise<{ items: EventSummary[]; next: string | null }> {
    const { where, limit, cursor } = checkTailOptions(options);
    const info = await this.streamInfo(stream);
    const ends = async () => readHighWatermarks(this.rheo, info, (await this.rheo.listGroups(stream))[0]?.group);
    const page =
      cursor === undefined
        ? await tailLatest(this.rheo, info, ends, where, limit)
        : await tailAfter(this.rheo, info, ends, where, limit, decodeTailCursor(cursor, info.partitions));
    return { items: page.events.map(eventSummary), next: encodeTailCursor(page.positions) };
  }

  // ---------------------------------------------------------------- writes

  async append(
    stream: string,
    input: { payload: JsonValue; key?: string; type?: string; id?: string; metadata?: EventMetadata },
  ): Promise<EventSummary> {
    checkInput('append', 'input', input);
    const { payload, key, type, id, metadata } = input;
    return eventSummary(await this.rheo.append(stream, { payload, key, type, id, metadata }));
  }

  async redrive(
    stream: string,
    group: string,
    target: { eventIds: string[] } | { all: true; confirm: boolean },
  ): Promise<{ redriven: number }> {
    checkInput('redrive', 'target', target);
    let options: RedriveOptions;
    if ('all' in target && target.all === true) {
      requireConfirm(target.confirm, 'redrive of every dead letter makes them all deliverable again');
      options = { all: true };
    } else {
      options = { eventIds: (target as { eventIds: string[] }).eventIds };
    }
    const redriven = await this.rheo.redrive(stream, group, options);
    this.logged(redriveLine(stream, group, options, redriven));
    return { redriven };
  }

  async replay(
    stream: string,
    group: string,
    from: { afterSequence: number } | { from: string | Date } | { where: Record<string, unknown> },
  ): Promise<{ replayed: number }> {
    checkInput('replay', 'from', from);
    const kinds = ['afterSequence', 'from', 'where'].filter((k) => k in from);
    if (kinds.length !== 1) throw RheoError.invalid('from', 'must have exactly one of afterSequence, from, where');
    let options: ReplayOptions;
    if ('afterSequence' in from) options = { afterSequence: from.afterSequence };
    else if ('from' in from) options = { from: parseTime('from', from.from) };
    else options = { query: { where: checkObject('where', from.where) } };
    const replayed = await this.rheo.replay(stream, group, options);
    this.logged(replayLine(stream, group, options, replayed));
    return { replayed };
  }

  async reset(stream: string, group: string, options: { start?: string; confirm: boolean }): Promise<{ reset: true }> {
    checkInput('reset', 'options', options);
    requireConfirm(options.confirm, 'reset forgets every delivery of the group');
    const reset: ResetOptions = { confirm: true, start: parseStart('start', options.start) };
    await this.rheo.reset(stream, group, reset);
    this.logged(resetLine(stream, group, reset));
    return { reset: true };
  }

  async trim(
    stream: string,
    options: { force?: boolean; confirm?: boolean } = {},
  ): Promise<{ removed: number; skipped: Record<string, number> }> {
    checkInput('trim', 'options', options);
    if (options.force === true) requireConfirm(options.confirm, 'a forced trim removes events groups have not finished');
    const result = await this.rheo.trim(stream, { force: options.force });
    this.logged(trimLine(result, { force: options.force }));
    return { removed: result.removed, skipped: { ...result.skipped } };
  }

  async updateGroup(stream: string, group: string, options: UpdateGroupInput): Promise<GroupSettingsSummary> {
    checkInput('updateGroup', 'options', options);
    requireConfirm(options.confirm, 'updateGroup changes how every process of the group claims, retries and dead-letters');
    const changes: GroupChanges = {};
    for (const k of ['maxAttempts', 'retry', 'keyConcurrency', 'groupConcurrency', 'rateLimit'] as const)
      if (options[k] !== undefined) (changes as Record<string, unknown>)[k] = options[k];
    const c = await this.rheo.updateGroup(stream, group, changes);
    this.logged(updateGroupLine(stream, group, changes));
    return { stream: c.stream, group: c.group, maxAttempts: c.maxAttempts, retry: { ...c.retry }, ordering: c.ordering, ...flowSummary(c) };
  }

  async pauseGroup(stream: string, group: string, options: PauseGroupInput): Promise<GroupPauseSummary> {
    checkInput('pauseGroup', 'options', options);
    requireConfirm(options.confirm, 'pauseGroup stops every process claiming the events of the group');
    const pause: PauseGroupOptions = {};
    // A duration counts from the store's clock, as the facade's check of `until` does.
    if (options.until !== undefined) pause.until = parseUntil('until', options.until, this.rheo.backend.clock.now());
    if (options.reason !== undefined) pause.reason = options.reason;
    if (options.by !== undefined) pause.by = options.by;
    const stored = await this.rheo.pauseGroup(stream, group, pause);
    this.logged(pauseLine(stream, group, stored));
    return pauseSummary(stored);
  }

  async resumeGroup(stream: string, group: string, options: { confirm: boolean }): Promise<{ resumed: boolean }> {
    checkInput('resumeGroup', 'options', options);
    requireConfirm(options.confirm, 'resumeGroup lets every process claim the events of the group again');
    const resumed = await this.rheo.resumeGroup(stream, group);
    this.logged(resumeLine(stream, group, resumed));
    return { resumed };
  }

  async skip(stream: string, group: string, options: SkipInput): Promise<WaitingResultSummary> {
    checkInput('skip', 'options', options);
    requireConfirm(options.confirm, 'skip settles the deliveries without running the handler');
    const ids = options.eventIds;
    const results = await this.rheo.skip(stream, group, ids, options.reason === undefined ? {} : { reason: options.reason });
    const summary = waitingSummary(ids, results);
    this.logged(skipLine(stream, group, ids.length, summary.done, options.reason));
    return summary;
  }

  async reschedule(stream: string, group: string, options: RescheduleInput): Promise<WaitingResultSummary> {
    checkInput('reschedule', 'options', options);
    requireConfirm(options.confirm, 'reschedule moves when every process of the group may run the deliveries');
    const ids = options.eventIds;
    const when: RescheduleOptions =
      options.deliverAt !== undefined
        ? { deliverAt: parseTime('deliverAt', options.deliverAt), ...(options.delayMs === undefined ? {} : { delayMs: options.delayMs }) }
        : { delayMs: options.delayMs };
    const results = await this.rheo.reschedule(stream, group, ids, when);
    const summary = waitingSummary(ids, results);
    const at = when.deliverAt ? when.deliverAt.toISOString() : `${String(when.delayMs)} ms from now`;
    this.logged(rescheduleLine(stream, group, ids.length, summary.done, at));
    return summary;
  }

  async cancelDelayed(stream: string, eventId: string, options: CancelDelayedInput): Promise<{ groups: number }> {
    checkInput('cancelDelayed', 'options', options);
    requireConfirm(options.confirm, 'cancelDelayed stops every group from running the event');
    const groups = await this.rheo.cancelDelayed(stream, eventId, options.reason === undefined ? {} : { reason: options.reason });
    this.logged(cancelDelayedLine(stream, eventId, groups, options.reason));
    return { groups };
  }

  async purgeDeadLetters(stream: string, group: string, options: { before?: string | Date; all?: boolean }): Promise<{ purged: number }> {
    checkInput('purgeDeadLetters', 'options', options);
    const all = options.all === true;
    if (all === (options.before !== undefined)) throw RheoError.invalid('before', 'give either before (a time) or all, not both');
    const purge: PurgeDeadLettersOptions = all ? { all: true } : { before: parseTime('before', options.before) };
    const purged = await this.rheo.purgeDeadLetters(stream, group, purge);
    this.logged(purgeLine(stream, group, purge, purged));
    return { purged };
  }

  // ---------------------------------------------------------------- helpers

  private async streamInfo(stream: string): Promise<StreamInfo> {
    checkName('stream', stream);
    await this.rheo.init();
    const info = await this.rheo.backend.getStream(stream);
    if (!info) throw RheoError.streamNotFound(stream);
    return info;
  }

  /** By name: every backend lists in its own order, and the CLI and the page should show the same. */
  private async streamInfos(): Promise<StreamInfo[]> {
    return (await this.rheo.listStreams()).sort((a, b) => compare(a.name, b.name));
  }

  private async streamOf(info: StreamInfo): Promise<StreamSummary> {
    const [first] = await this.rheo.listGroups(info.name);
    return streamSummary(info, await readHighWatermarks(this.rheo, info, first?.group));
  }

  private async groupInfos(stream: string): Promise<GroupInfo[]> {
    const configs = (await this.rheo.listGroups(stream)).sort((a, b) => compare(a.group, b.group));
    return Promise.all(configs.map((c) => this.rheo.groupInfo(stream, c.group)));
  }

  private summarise(infos: GroupInfo[]): GroupSummary[] {
    const local = this.consumers();
    return infos.map((info) => groupSummary(info, local.find((c) => c.stream === info.stream && c.group === info.group)?.state));
  }

  private logged(line: string): void {
    this.log?.(`${line} (by ${this.actor})`);
  }
}

/** Code-unit order, the same on every machine (no locale). */
function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The index of the first stream named after `name` in `sorted` (by name): a binary search. */
function firstAfter(sorted: StreamInfo[], name: string): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compare(sorted[mid].name, name) <= 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Per id of a skip or reschedule, JSON-ready: the refusal as its code and message. */
function waitingSummary(ids: string[], results: Awaited<ReturnType<Rheo['skip']>>): WaitingResultSummary {
  let done = 0;
  const out = results.map((r, i): WaitingResultSummary['results'][number] => {
    if (r.ok) {
      done++;
      return { eventId: ids[i], ok: true };
    }
    return { eventId: ids[i], ok: false, code: r.error.code, message: r.error.message };
  });
  return { done, results: out };
}
