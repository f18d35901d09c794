// The decisions of a trim, shared by both dialects: from what the store holds
// (per partition its high watermark and trim point; per group and partition the
// cursor in effect and the first delivery in flight), each partition's new trim
// point and, forced, what moves for the groups behind it. Pure: each dialect
// reads the rows and applies the result in its own statements.
import type { TrimRequest } from '../backend';

/** A partition's high watermark and trim point. */
export interface PartitionMark {
  hwm: number;
  trimmedTo: number;
}

/** Where a group stands in one partition: the cursor in effect (>= trimmedTo + 1) and its first delivery in flight. */
export interface GroupPosition {
  group: string;
  partition: number;
  cursor: number;
  firstOpen: number | null;
}

/** What a trim does in one partition. */
export interface TrimDecision {
  /** Per partition, the new trim point (>= the old one). */
  points: number[];
  /** Per group, the events it had not finished that the points remove and that no delivery row stands for: never offered. */
  neverOffered: Map<string, number>;
  /** Forced: the (group, partition) pairs whose frontier is below the point (their cursors move to point + 1). */
  lagging: Array<{ group: string; partition: number; point: number }>;
}

/** The highest sequence with every event up to it terminal for the group in that partition. */
export function frontierOf(g: GroupPosition): number {
  return Math.min(g.cursor - 1, g.firstOpen === null ? Infinity : g.firstOpen - 1);
}

/**
 * Per partition p: point(p) = max(hwm - maxEvents, lastBefore[p]) over the limits
 * given, within [trimmedTo, hwm]. Not forced, further capped at every group's
 * frontier (never below trimmedTo). Forced, each group whose frontier is below
 * the point skips the events up to it: the never-offered ones (from its cursor
 * up) are counted here; the offered, unfinished ones are its deliveries in
 * (trimmedTo, point], which the dialect counts as it drops them.
 */
export function decideTrim(
  marks: PartitionMark[],
  request: Pick<TrimRequest, 'maxEvents' | 'force'>,
  lastBefore: number[] | null,
  groups: GroupPosition[],
): TrimDecision {
  const points = marks.map((m, p) => {
    let point = m.trimmedTo;
    if (request.maxEvents !== undefined) point = Math.max(point, m.hwm - request.maxEvents);
    if (lastBefore) point = Math.max(point, lastBefore[p] ?? m.trimmedTo);
    return Math.min(Math.max(point, m.trimmedTo), m.hwm);
  });
  const neverOffered = new Map<string, number>();
  const lagging: TrimDecision['lagging'] = [];
  for (const g of groups) {
    neverOffered.set(g.group, neverOffered.get(g.group) ?? 0);
    const p = g.partition;
    if (p >= points.length) continue;
    const frontier = frontierOf(g);
    if (frontier >= points[p]) continue;
    if (!request.force) {
      points[p] = Math.max(marks[p].trimmedTo, Math.min(points[p], frontier));
      continue;
    }
    lagging.push({ group: g.group, partition: p, point: points[p] });
    // Forced points are final: from the cursor up to the point, events the group was never offered.
    neverOffered.set(g.group, neverOffered.get(g.group)! + Math.max(0, points[p] - (g.cursor - 1)));
  }
  return { points, neverOffered, lagging };
}
