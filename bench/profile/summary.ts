// Reads a .cpuprofile (V8's format: a call tree of nodes, a sample list and the
// µs between samples) and sums self time per function over the samples taken
// inside a window (the measured operation, not start-up). `(idle)` is the event
// loop waiting (on the store, for a round trip), `(garbage collector)` is GC,
// `(program)` is native work V8 does not attribute to a JS function.
import { readFileSync } from 'node:fs';
import { SourceMap, type SourceMapPayload } from 'node:module';
import { relative } from 'node:path';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
}
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface SelfTime {
  name: string;
  where: string;
  ms: number;
  /** Share of the window's busy (non-idle) time. */
  pct: number;
}

export interface ProfileSummary {
  windowMs: number;
  samples: number;
  idleMs: number;
  gcMs: number;
  busyMs: number;
  functions: SelfTime[];
  /** Self time grouped by where the code lives: lib/<dir>, a node_modules package, node: internals, native. */
  areas: SelfTime[];
}

/** Where `url` lives, for grouping: `lib/runtime`, `pg`, `node:internal`, `(native)`. */
function areaOf(url: string, root: string): string {
  if (!url) return '(native)';
  if (url.startsWith('node:')) return url.startsWith('node:internal') ? 'node:internal' : url.split('/')[0];
  const path = relative(root, url.replace(/^file:\/\//, ''));
  const nm = path.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const parts = path.slice(nm + 'node_modules/'.length).split('/');
    return parts[0].startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0];
  }
  const parts = path.split('/');
  return parts.length > 2 ? `${parts[0]}/${parts[1]}` : parts[0];
}

/**
 * Self time per function in [startUs, endUs], busiest first (the first `top`).
 * `sourceMaps` (by url) map a function's position in the compiled JavaScript
 * back to its line in the TypeScript.
 */
export function summarize(
  file: string,
  window: { startUs: number; endUs: number; sourceMaps?: Record<string, SourceMapPayload> },
  root: string,
  top = 25,
): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const maps = new Map<string, SourceMap>();
  const lineOf = (url: string, line: number, column: number): number => {
    const payload = window.sourceMaps?.[url];
    if (!payload) return line + 1;
    let map = maps.get(url);
    if (!map) maps.set(url, (map = new SourceMap(payload)));
    const entry = map.findEntry(line, column) as { originalLine?: number };
    return entry.originalLine === undefined ? line + 1 : entry.originalLine + 1;
  };
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<string, { name: string; where: string; us: number }>();
  const areas = new Map<string, number>();
  let t = profile.startTime;
  let idle = 0;
  let gc = 0;
  let total = 0;
  let count = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i];
    if (t < window.startUs || t > window.endUs) continue;
    // A sample stands for the time until the next one.
    const dt = i + 1 < profile.timeDeltas.length ? profile.timeDeltas[i + 1] : 0;
    const node = byId.get(profile.samples[i]);
    if (!node) continue;
    count++;
    total += dt;
    const { functionName, url, lineNumber, columnNumber } = node.callFrame;
    if (functionName === '(idle)') {
      idle += dt;
      continue;
    }
    if (functionName === '(garbage collector)') gc += dt;
    const where = url
      ? `${url.startsWith('node:') ? url : relative(root, url.replace(/^file:\/\//, ''))}:${lineOf(url, lineNumber, columnNumber)}`
      : '';
    const key = `${functionName}@${where}`;
    const entry = self.get(key) ?? { name: functionName || '(anonymous)', where, us: 0 };
    entry.us += dt;
    self.set(key, entry);
    const area = functionName.startsWith('(') ? functionName : areaOf(url, root);
    areas.set(area, (areas.get(area) ?? 0) + dt);
  }
  const busy = total - idle;
  const ms = (us: number) => Math.round(us / 100) / 10;
  const pct = (us: number) => (busy > 0 ? Math.round((us / busy) * 1000) / 10 : 0);
  return {
    windowMs: ms(window.endUs - window.startUs),
    samples: count,
    idleMs: ms(idle),
    gcMs: ms(gc),
    busyMs: ms(busy),
    functions: [...self.values()]
      .sort((a, b) => b.us - a.us)
      .slice(0, top)
      .map((e) => ({ name: e.name, where: e.where, ms: ms(e.us), pct: pct(e.us) })),
    areas: [...areas].sort((a, b) => b[1] - a[1]).map(([name, us]) => ({ name, where: '', ms: ms(us), pct: pct(us) })),
  };
}
