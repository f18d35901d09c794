// The lag of each group over the last minutes, as the dashboard's overview reads
// found it. Recorded on each overview read, not by a timer of its own: an app
// whose dashboard nobody opens does no extra reads, and a page (re)opened while
// another was watching starts with the chart that page saw.
import type { Overview } from '../../admin/types';

/** How far back the chart goes, ms. */
export const LAG_HISTORY_MS = 10 * 60_000;

/** Samples closer together than this are one (several open pages poll every 2 s each). */
const MIN_SPACING_MS = 1_000;

/** One group's lag over time: `[epoch ms, lag]`, oldest first. */
export interface LagSeries {
  stream: string;
  group: string;
  /** `[epoch ms by the backend's clock, lag]`, oldest first, at most one a second. */
  points: Array<[number, number]>;
}

/** What `GET <path>/api/lag-history` answers. */
export interface LagHistorySnapshot {
  /** How far back the history goes, ms. */
  windowMs: number;
  series: LagSeries[];
}

/** The lag samples of one dashboard (one process). */
export class LagHistory {
  private readonly series = new Map<string, LagSeries>();

  /** Record the lags `overview` read, at its time; forget what is older than the window. */
  record(overview: Overview): void {
    const at = Date.parse(overview.at);
    if (Number.isNaN(at)) return;
    for (const stream of overview.streams) {
      for (const g of stream.groups) {
        // JSON of the pair, not 'stream/group': names may hold '/'.
        const key = JSON.stringify([g.stream, g.group]);
        let s = this.series.get(key);
        if (!s) this.series.set(key, (s = { stream: g.stream, group: g.group, points: [] }));
        const last = s.points[s.points.length - 1];
        if (last && at - last[0] < MIN_SPACING_MS) last[1] = g.lag;
        else s.points.push([at, g.lag]);
      }
    }
    this.prune(at - LAG_HISTORY_MS);
  }

  /** A copy of what is held. */
  snapshot(): LagHistorySnapshot {
    return {
      windowMs: LAG_HISTORY_MS,
      series: [...this.series.values()].map((s) => ({ stream: s.stream, group: s.group, points: s.points.map((p) => [p[0], p[1]]) })),
    };
  }

  private prune(before: number): void {
    for (const [key, s] of this.series) {
      const keep = s.points.findIndex((p) => p[0] >= before);
      if (keep === -1) this.series.delete(key);
      else if (keep > 0) s.points.splice(0, keep);
    }
  }
}
