// The scrape-time figures of every group of every stream in one instance's
// store, read at most once per second: Prometheus scrapes (or a storm of them,
// from several scrapers) then cost one round of reads per second, not one each.
import { isRheoError } from '../../core/errors';
import type { Rheo } from '../../core/rheo';
import type { GroupInfo } from '../../core/types';

/** How long one round of reads serves scrapes, ms (by the backend's clock: ADR 002). */
export const GROUP_FIGURES_CACHE_MS = 1000;

export class GroupFigures {
  private last?: { at: number; figures: Promise<GroupInfo[]> };

  constructor(private readonly rheo: Rheo) {}

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
    const streams = await this.rheo.listStreams();
    const figures: GroupInfo[] = [];
    for (const stream of streams) {
      for (const group of await this.rheo.listGroups(stream.name)) {
        try {
          figures.push(await this.rheo.groupInfo(stream.name, group.group));
        } catch (err) {
          // Deleted between the listing and the read: it simply has no figures now.
          if (!isRheoError(err, 'group_not_found', 'stream_not_found')) throw err;
        }
      }
    }
    return figures;
  }
}
