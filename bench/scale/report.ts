// Output of the scale bench: one JSON line per figure on stdout (the format of
// the other benches: `backend`, `op`, then the figures), progress on stderr so
// the JSON lines stay parseable. A step that throws (a backend that lacks trim
// yet, say) is reported as `{ op, error }` and the run goes on.
import { cpus, loadavg } from 'node:os';

export type Fields = Record<string, unknown>;

/** `>=`: the ratio must reach the target; `<=`: the value must stay under it. */
export type Rule = '>=' | '<=';

export function progress(message: string): void {
  console.error(`[scale ${new Date().toISOString().slice(11, 19)}] ${message}`);
}

export function errorMessage(err: unknown): string {
  if (err instanceof Error) return `${err.name === 'Error' ? '' : `${err.name}: `}${err.message}`;
  return String(err);
}

export class Report {
  private readonly flats: Fields[] = [];

  constructor(readonly backend: string) {}

  emit(op: string, fields: Fields, backend = this.backend): void {
    console.log(JSON.stringify({ backend, op, ...fields }));
  }

  /**
   * Run one measured step; a failure becomes `{ op, ...fields, error }` and
   * `undefined`, so one missing capability does not hide every other figure.
   */
  async step<T>(op: string, fields: Fields, fn: () => Promise<T>): Promise<T | undefined> {
    try {
      return await fn();
    } catch (err) {
      progress(`${op} failed: ${errorMessage(err)}`);
      this.emit(op, { ...fields, error: errorMessage(err) });
      return undefined;
    }
  }

  /** An acceptance figure of issue 10: `ratio` (or `value` for an absolute bound) against its target. */
  flat(what: string, figure: { ratio: number } | { value: number }, rule: Rule, target: number): void {
    const x = 'ratio' in figure ? figure.ratio : figure.value;
    const pass = Number.isFinite(x) && (rule === '>=' ? x >= target : x <= target);
    const line = { what, ...figure, rule, target, pass };
    this.flats.push(line);
    this.emit('flat', line);
  }

  /** A human-readable recap of the acceptance figures, after the JSON lines. */
  printSummary(totalMs: number): void {
    console.log('');
    console.log(`scale, ${this.backend}: acceptance figures (issue 10), whole run ${(totalMs / 1000).toFixed(0)} s`);
    const rows = this.flats.map((f) => [
      f.pass ? 'pass' : 'FAIL',
      String(f.what),
      `${'ratio' in f ? f.ratio : f.value} ${f.rule} ${f.target}`,
    ]);
    const widths = [4, ...[1, 2].map((c) => Math.max(...rows.map((r) => r[c].length), 0))];
    for (const r of rows)
      console.log(
        r
          .map((cell, c) => cell.padEnd(widths[c]))
          .join('  ')
          .trimEnd(),
      );
    // The figures are only comparable with the load they were taken under.
    console.log(
      `${cpus().length} CPUs, load average ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' / ')} (1/5/15 min), Node ${process.version}`,
    );
  }
}
