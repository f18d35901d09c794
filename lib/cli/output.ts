// What the CLI prints. Human output is aligned columns (text left, numbers
// right), every control character in it escaped; --json prints the service's DTO
// as it is, one document per command, so a script reads exactly what the
// dashboard's API returns.
import type { JsonValue } from '../core/types';

/** Where a command writes: stdout for results, stderr for errors and progress. */
export interface Io {
  out(text: string): void;
  err(text: string): void;
  /** stderr is a terminal: progress may be drawn there. */
  readonly errIsTTY: boolean;
}

export type Cell = string | number | null | undefined;

/** One column of a table: its header and how a row fills it (numbers align right). */
export interface Column<T> {
  header: string;
  cell: (row: T) => Cell;
}

const NAMED: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/**
 * `value` with every control character (C0, DEL, C1) written as an escape: `\n`,
 * `\r`, `\t`, `\x1b`, `\x7f`, `\u009b`. Text from the store (a reason, a payload,
 * a key) reaches a terminal only through here: raw, an ESC or a C1 CSI starts a
 * sequence the terminal obeys (clear the screen, set the title, write the
 * clipboard with OSC 52), and a CR overwrites what the line showed.
 */
export function escapeControls(value: string): string {
  // eslint-disable-next-line no-control-regex
  return value.replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => {
    const code = c.charCodeAt(0);
    return NAMED[c] ?? (code < 0x80 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`);
  });
}

function text(cell: Cell): string {
  return cell === null || cell === undefined ? '-' : escapeControls(String(cell));
}

function line(cells: Cell[], widths: number[], right: boolean[]): string {
  return cells
    .map((c, i) => {
      const t = text(c);
      if (right[i]) return t.padStart(widths[i]);
      return i === cells.length - 1 ? t : t.padEnd(widths[i]);
    })
    .join('  ')
    .trimEnd();
}

/**
 * Rows as an aligned table with a header, or `empty` when there are none. A
 * column of numbers aligns right, its header too. `widths` (kept by the caller)
 * makes later pages line up with earlier ones.
 */
export function table<T>(rows: T[], columns: Column<T>[], empty: string, widths?: number[], header = true): string {
  if (rows.length === 0) return `${escapeControls(empty)}\n`;
  const cells = rows.map((r) => columns.map((c) => c.cell(r)));
  const right = columns.map((_, i) => cells.some((row) => typeof row[i] === 'number'));
  const w = widths ?? [];
  columns.forEach((c, i) => (w[i] = Math.max(w[i] ?? 0, c.header.length, ...cells.map((row) => text(row[i]).length))));
  const lines = cells.map((row) => line(row, w, right));
  if (header)
    lines.unshift(
      line(
        columns.map((c) => c.header),
        w,
        right,
      ),
    );
  return `${lines.join('\n')}\n`;
}

/** Label / value pairs, the labels padded to one width. */
export function fields(pairs: Array<[string, Cell]>): string {
  const width = Math.max(...pairs.map(([k]) => k.length));
  return `${pairs.map(([k, v]) => `${k.padEnd(width)}  ${text(v)}`).join('\n')}\n`;
}

/** One JSON document, on one line (jq and line-based tools read it alike). */
export function json(value: unknown): string {
  return `${JSON.stringify(value)}\n`;
}

/** A retry backoff in one cell: the first delay, its factor and its cap. */
export function retryText(r: { initialMs: number; factor: number; maxMs: number }): string {
  return `${r.initialMs} ms x${r.factor} up to ${r.maxMs} ms`;
}

/** A rate limit as stored: `100 per 1000 ms`, or `none`. */
export function rateText(r: { max: number; perMs: number } | null): string {
  return r === null ? 'none' : `${r.max} per ${r.perMs} ms`;
}

/** A group's flow limits in one cell: `key 2, group 10, rate 100 per 1000 ms`, or `none`. */
export function limitsText(g: {
  keyConcurrency: number | null;
  groupConcurrency: number | null;
  rateLimit: { max: number; perMs: number } | null;
}): string {
  const parts: string[] = [];
  if (g.keyConcurrency !== null) parts.push(`key ${g.keyConcurrency}`);
  if (g.groupConcurrency !== null) parts.push(`group ${g.groupConcurrency}`);
  if (g.rateLimit !== null) parts.push(`rate ${rateText(g.rateLimit)}`);
  return parts.length === 0 ? 'none' : parts.join(', ');
}

/** A duration an operator reads at a glance: 850ms, 12s, 3m 4s, 2h 5m, 7d (the two largest units, zeros left out). */
export function duration(ms: number | null): string {
  if (ms === null) return '-';
  if (ms < 1000) return `${ms}ms`;
  const s = Math.floor(ms / 1000);
  const two = (a: number, unitA: string, b: number, unitB: string) => (b === 0 ? `${a}${unitA}` : `${a}${unitA} ${b}${unitB}`);
  if (s < 60) return `${s}s`;
  if (s < 3600) return two(Math.floor(s / 60), 'm', s % 60, 's');
  if (s < 86400) return two(Math.floor(s / 3600), 'h', Math.floor((s % 3600) / 60), 'm');
  return two(Math.floor(s / 86400), 'd', Math.floor((s % 86400) / 3600), 'h');
}

/** A JSON value on one line, cut to `max` characters (payloads in a table). */
export function preview(value: JsonValue | undefined, max = 60): string {
  const t = JSON.stringify(value) ?? '';
  return t.length > max ? `${t.slice(0, max - 1)}…` : t;
}

/** Text on one line (newlines become spaces), cut to `max` characters: a reason in a table. */
export function oneLine(value: string, max = 80): string {
  const t = value.replace(/\s*\n\s*/g, ' ');
  return t.length > max ? `${t.slice(0, max - 1)}…` : t;
}
