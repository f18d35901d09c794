// The CLI's printing helpers, in process: the progress line (on a terminal only,
// first drawn after a second, erased at the end), durations and tables.
import { duration, escapeControls, fields, limitsText, table } from '../../lib/cli/output';
import { progress } from '../../lib/cli/progress';

/** A stand-in for process.stderr that records what was written. */
function stderr(isTTY: boolean) {
  const written: string[] = [];
  return { isTTY, written, write: (text: string) => written.push(text) };
}

describe('progress', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('draws nothing when stderr is not a terminal', () => {
    const err = stderr(false);
    const p = progress(err, 'replaying s/g');
    p.update('1/2');
    jest.advanceTimersByTime(5000);
    p.done();
    expect(err.written).toEqual([]);
  });

  it('on a terminal: nothing for a quick operation; a redrawn line with the elapsed seconds for a long one, erased at the end', () => {
    const quick = stderr(true);
    progress(quick, 'trimming s').done();
    jest.advanceTimersByTime(5000);
    expect(quick.written).toEqual([]);

    const err = stderr(true);
    const p = progress(err, 'redriving s/g');
    p.update('100/300 ids');
    expect(err.written).toEqual([]);
    jest.advanceTimersByTime(1000);
    p.update('200/300 ids');
    jest.advanceTimersByTime(1000);
    p.done();
    jest.advanceTimersByTime(5000);
    expect(err.written).toEqual([
      '\r\x1b[Kredriving s/g 100/300 ids (1s)',
      '\r\x1b[Kredriving s/g 200/300 ids (1s)',
      '\r\x1b[Kredriving s/g 200/300 ids (2s)',
      '\r\x1b[K',
    ]);
  });
});

describe('output', () => {
  it('durations at a glance', () => {
    expect([null, 0, 850, 12_000, 184_000, 180_000, 7_500_000, 7 * 86_400_000, 90_000_000].map(duration)).toEqual([
      '-',
      '0ms',
      '850ms',
      '12s',
      '3m 4s',
      '3m',
      '2h 5m',
      '7d',
      '1d 1h',
    ]);
  });

  it('tables: text left, numbers right, absent as -, and an empty message', () => {
    const rows = [
      { name: 'orders', n: 3, note: null },
      { name: 'a', n: 1200, note: 'x' },
    ];
    const columns = [
      { header: 'NAME', cell: (r: (typeof rows)[number]) => r.name },
      { header: 'N', cell: (r: (typeof rows)[number]) => r.n },
      { header: 'NOTE', cell: (r: (typeof rows)[number]) => r.note },
    ];
    expect(table(rows, columns, 'none')).toBe('NAME       N  NOTE\norders     3  -\na       1200  x\n');
    expect(table([], columns, 'No rows.')).toBe('No rows.\n');
  });
});

describe('escapeControls', () => {
  it('writes every C0, DEL and C1 character as an escape, and leaves all other text as it is', () => {
    expect(escapeControls('a\x1b[2Jb\x07c\rd\ne\tf\x00g\x7fh\u0085i\u009b')).toBe(
      'a\\x1b[2Jb\\x07c\\rd\\ne\\tf\\x00g\\x7fh\\u0085i\\u009b',
    );
    for (let c = 0; c < 0xa0; c++) {
      const ch = String.fromCharCode(c);
      const control = c < 0x20 || c >= 0x7f;
      expect(escapeControls(ch) === ch).toBe(!control);
    }
    expect(escapeControls('café ☕ 日本 \\x1b \u00a0')).toBe('café ☕ 日本 \\x1b \u00a0');
  });

  it('is what every table and field cell goes through', () => {
    expect(table([{ r: 'x\x1b]0;title\x07' }], [{ header: 'R', cell: (row) => row.r }], '')).toBe('R\nx\\x1b]0;title\\x07\n');
    expect(fields([['reason', '\rgone']])).toBe('reason  \\rgone\n');
  });
});

describe('limitsText', () => {
  it("names each flow limit a group has, in one cell, and 'none' when it has none", () => {
    const none = { keyConcurrency: null, groupConcurrency: null, rateLimit: null };
    expect(limitsText(none)).toBe('none');
    expect(limitsText({ ...none, keyConcurrency: 2 })).toBe('key 2');
    expect(limitsText({ keyConcurrency: 2, groupConcurrency: 10, rateLimit: { max: 100, perMs: 1000 } })).toBe(
      'key 2, group 10, rate 100 per 1000 ms',
    );
    expect(limitsText({ ...none, rateLimit: { max: 5, perMs: 60_000 } })).toBe('rate 5 per 60000 ms');
  });
});
