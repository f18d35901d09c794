// What the round-trip hooks record: one entry per round trip to the store, with
// a short label (the statement's first words, or the commands of a pipeline).
export class Counter {
  private labels: Array<string | (() => string)> = [];

  /** Record one round trip; a function label is read when the summary is taken. */
  add(label: string | (() => string)): void {
    this.labels.push(label);
  }

  /** Round trips recorded since the last reset. */
  get n(): number {
    return this.labels.length;
  }

  /** Forget what was recorded. */
  reset(): void {
    this.labels = [];
  }

  /** The labels recorded, identical ones folded: `BEGIN`, `2× EVALSHA append`. */
  summary(): string[] {
    const counts = new Map<string, number>();
    for (const entry of this.labels) {
      const l = typeof entry === 'function' ? entry() : entry;
      counts.set(l, (counts.get(l) ?? 0) + 1);
    }
    return [...counts].map(([l, c]) => (c === 1 ? l : `${c}× ${l}`));
  }
}

/** The first words of `sql`, whitespace folded, at most `max` characters. */
export function sqlLabel(sql: string, max = 60): string {
  const s = sql.replace(/\s+/g, ' ').trim();
  return s.length <= max ? s : `${s.slice(0, max - 1)}…`;
}
