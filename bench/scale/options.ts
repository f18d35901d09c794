// Command line of `npm run bench -- scale <backend> [--events N] [--dead-letters N] [--samples N]`.

export const BACKENDS = ['memory', 'sqlite', 'postgres', 'redis'] as const;
export type BackendName = (typeof BACKENDS)[number];

export interface ScaleOptions {
  backend: BackendName;
  /** Events of the big stream: the 1M backlog consumed, queried and trimmed. */
  events: number;
  /** Dead letters made in one group before the second set of hot-path figures. */
  deadLetters: number;
  /** Append+claim+ack samples per figure. */
  samples: number;
  /** The small backlog, and the window every consume rate is measured over. */
  backlog: number;
}

export const USAGE =
  'usage: npm run bench -- scale <memory|sqlite|postgres|redis> [--events N (1000000)] [--dead-letters N (200000, or events/5)] [--samples N (500)]';

function count(flag: string, value: string | undefined, min: number): number {
  const n = value === undefined ? Number.NaN : Number(value.replace(/_/g, ''));
  if (!Number.isInteger(n) || n < min) throw new Error(`${flag} must be an integer >= ${min}`);
  return n;
}

/** Parse the arguments after `scale`; throws with a message fit for the user. */
export function parseOptions(args: string[]): ScaleOptions {
  const [backend, ...rest] = args;
  if (!BACKENDS.includes(backend as BackendName)) throw new Error(`unknown backend ${JSON.stringify(backend ?? '')}`);
  let events = 1_000_000;
  let deadLetters: number | undefined;
  let samples = 500;
  for (let i = 0; i < rest.length; i += 2) {
    const [flag, value] = [rest[i], rest[i + 1]];
    if (flag === '--events') events = count(flag, value, 1000);
    else if (flag === '--dead-letters') deadLetters = count(flag, value, 1);
    else if (flag === '--samples') samples = count(flag, value, 10);
    else throw new Error(`unknown option ${JSON.stringify(flag)}`);
  }
  // Scaled down for a quick check, the dead letters keep the 1M : 200k proportion.
  return {
    backend: backend as BackendName,
    events,
    deadLetters: deadLetters ?? Math.min(200_000, Math.ceil(events / 5)),
    samples,
    backlog: Math.min(10_000, events),
  };
}

/** 1000000 -> "1M", 200000 -> "200k": for the labels of the acceptance lines. */
export function short(n: number): string {
  if (n >= 1_000_000 && n % 100_000 === 0) return `${n / 1_000_000}M`;
  if (n >= 1000 && n % 1000 === 0) return `${n / 1000}k`;
  return String(n);
}
