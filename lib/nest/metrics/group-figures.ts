// The scrape-time figures of the groups an instance's gauges show (the
// `metrics.groups` option: the app's by default, all, or a list), read at most
// once per second: Prometheus scrapes (or a storm of them, from several
// scrapers) then cost one round of reads per second, not one each.
import { isRheoError } from '../../core/errors';
import type { Rheo } from '../../core/rheo';
import type { GroupInfo } from '../../core/types';

/** How long one round of reads serves scrapes, ms (by the backend's clock: ADR 002). */
export const GROUP_FIGURES_CACHE_MS = 1000;

/** Which groups to read: every group of the store, or the (stream, group) pairs named now. */
export type FiguresScope = { kind: 'all' } | { kind: 'some'; groups: () => Promise<Array<[stream: string, group: string]>> };

export class GroupFigures {
  private last?: { at: number; figures: Promise<GroupInfo[]> };

  constructor(
    private readonly rheo: Rheo,
    private readonly scope: FiguresScope,
  ) {}

  /** The figures of the last round if it started less than a second ago (or is still running), else a new round. */
  read(): Promise<GroupInfo[]> {
    const now = this.rheo.backend.clock.now();
    if (this.last && now - this.last.at < GROUP_FIGURES_CACHE_MS) return this.last.figures;
    const figures = this.load();
    const round = { at: now, figures };
    this.last = round;
    // A failed round is not cached: the next scrape tries again.
    figures.catch(() => {
      if (this.last === round) this.last = undefined;
    });
    return figures;
  }

  // One group after the other: a scrape waits a little longer, the store sees no burst.
  private async load(): Promise<GroupInfo[]> {
    const figures: GroupInfo[] = [];
    const seen = new Set<string>();
    for (const [stream, group] of await this.pairs()) {
      // JSON of the pair, not 'stream/group': names may hold '/'.
      const key = JSON.stringify([stream, group]);
      if (seen.has(key)) continue;
      seen.add(key);
      const info = await this.info(stream, group);
      if (info) figures.push(info);
    }
    return figures;
  }

  private async pairs(): Promise<Array<[string, string]>> {
    if (this.scope.kind === 'some') return this.scope.groups();
    const pairs: Array<[string, string]> = [];
    for (const stream of await this.rheo.listStreams()) {
      for (const group of await groupsOf(this.rheo, stream.name)) pairs.push([stream.name, group]);
    }
    return pairs;
  }

  private async info(stream: string, group: string): Promise<GroupInfo | undefined> {
    try {
      return await this.rheo.groupInfo(stream, group);
    } catch (err) {
      // Missing (a listed key naming nothing), or deleted between the listing and the read: no figures now.
      if (!isRheoError(err, 'group_not_found', 'stream_not_found')) throw err;
      return undefined;
    }
  }
}

/** The group names of a stream; none when the stream does not exist (yet). */
export async function groupsOf(rheo: Rheo, stream: string): Promise<string[]> {
  try {
    return (await rheo.listGroups(stream)).map((g) => g.group);
  } catch (err) {
    if (!isRheoError(err, 'stream_not_found')) throw err;
    return [];
  }
}
