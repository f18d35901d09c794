import type { GroupConfig, Ordering } from '../../core/types';

/**
 * A group's settings as its `cfg` hash stores them, under readable names
 * (delays in ms, `createdAt` in ms since the epoch).
 */
export interface GroupConfigFields {
  maxAttempts: number;
  retryInitialMs: number;
  retryFactor: number;
  retryMaxMs: number;
  ordering: Ordering;
  createdAt: number;
  /** Flow limits (docs/adr/049-flow-control.md): '' when the group has none; a rate limit as `<max>:<perMs>`. */
  keyConcurrency: number | '';
  groupConcurrency: number | '';
  rateLimit: string;
}

/**
 * Readable name -> the field name stored in the group's `cfg` hash. The stored
 * names are the data format: groups written by earlier versions have them, so they
 * never change. The Lua scripts read two of them under their stored name: `ord`
 * (fetch) and `maxAttempts` (settle). The rest of the hash is the group's
 * positions, kept by the scripts: `f:<p>` frontier, `c:<p>` cursor, `rw:<p>`
 * rewind target, `rr` fetch rotation (docs/redis.md lists every stored field).
 */
export const STORED_GROUP_FIELDS = {
  maxAttempts: 'maxAttempts',
  retryInitialMs: 'ri',
  retryFactor: 'rf',
  retryMaxMs: 'rm',
  ordering: 'ord',
  createdAt: 'createdAt',
  keyConcurrency: 'kc',
  groupConcurrency: 'gc',
  rateLimit: 'rl',
} as const satisfies Record<keyof GroupConfigFields, string>;

const NAMES = Object.keys(STORED_GROUP_FIELDS) as Array<keyof GroupConfigFields>;

/** The stored field names, in the order {@link decodeGroupConfig} expects their values. */
export const STORED_GROUP_FIELD_NAMES: readonly string[] = NAMES.map((name) => STORED_GROUP_FIELDS[name]);

/** A group's config as the stored field/value pairs the create-group script writes. */
export function encodeGroupConfig(config: GroupConfig): Array<string | number> {
  const fields: GroupConfigFields = {
    maxAttempts: config.maxAttempts,
    retryInitialMs: config.retry.initialMs,
    retryFactor: config.retry.factor,
    retryMaxMs: config.retry.maxMs,
    ordering: config.ordering,
    createdAt: config.createdAt.getTime(),
    keyConcurrency: config.keyConcurrency ?? '',
    groupConcurrency: config.groupConcurrency ?? '',
    rateLimit: config.rateLimit ? `${config.rateLimit.max}:${config.rateLimit.perMs}` : '',
  };
  return NAMES.flatMap((name) => [STORED_GROUP_FIELDS[name], fields[name]]);
}

/**
 * A group's config from the values of {@link STORED_GROUP_FIELD_NAMES} (an HMGET
 * of the cfg hash), or null when the group does not exist.
 */
export function decodeGroupConfig(stream: string, group: string, values: ReadonlyArray<string | null>): GroupConfig | null {
  const stored = (name: keyof GroupConfigFields) => values[NAMES.indexOf(name)] ?? null;
  if (stored('maxAttempts') === null) return null;
  return {
    stream,
    group,
    maxAttempts: Number(stored('maxAttempts')),
    retry: { initialMs: Number(stored('retryInitialMs')), factor: Number(stored('retryFactor')), maxMs: Number(stored('retryMaxMs')) },
    ordering: stored('ordering') as Ordering,
    keyConcurrency: storedInt(stored('keyConcurrency')),
    groupConcurrency: storedInt(stored('groupConcurrency')),
    rateLimit: storedRate(stored('rateLimit')),
    createdAt: new Date(Number(stored('createdAt'))),
  };
}

/**
 * A group's pause (docs/adr/046-pausing-a-group.md), as fields of its `cfg` hash:
 * present all four, or none. `pu` is the claim's gate, read by the fetch script in
 * the HMGET it already makes: the pause's `until` (ms, the backend's clock), or
 * {@link NO_UNTIL} when it holds until resumed. `pa` is when it was set (ms),
 * `pr` and `pb` the reason and who paused ('' when not given: the facade refuses an
 * empty one). The scripts (pause-group, resume-group, fetch, inspect) name them as
 * stored. A process of a version before pausing never reads nor removes them.
 */
export const STORED_PAUSE_FIELDS = {
  until: 'pu',
  pausedAt: 'pa',
  reason: 'pr',
  by: 'pb',
} as const;

/** The stored `pu` of a pause with no `until`. */
export const NO_UNTIL = '-';

/** A stored limit: absent (a group from before flow limits) or '' is none. */
function storedInt(v: string | null): number | null {
  return v === null || v === '' ? null : Number(v);
}

function storedRate(v: string | null): GroupConfig['rateLimit'] {
  if (v === null || v === '') return null;
  const [max, perMs] = v.split(':');
  return { max: Number(max), perMs: Number(perMs) };
}
