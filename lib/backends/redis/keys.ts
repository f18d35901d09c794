import { RheoError } from '../../core/errors';

/**
 * Escape a name for use inside a key: `%`, `{`, `}` and `:` are percent-encoded,
 * so a stream or group name can never open or close a hash tag or fake a key
 * separator. The mapping is injective: distinct names give distinct keys.
 */
export function escapeName(name: string): string {
  return name.replace(/[%{}:]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0'));
}

/** A key prefix: non-empty, no braces (they would start a hash tag), no whitespace or control characters. */
export function checkPrefix(prefix: unknown): string {
  if (typeof prefix !== 'string' || prefix.length === 0) throw RheoError.invalid('prefix', 'must be a non-empty string');
  // eslint-disable-next-line no-control-regex
  if (/[{}\s\u0000-\u001f\u007f]/.test(prefix))
    throw RheoError.invalid('prefix', 'must not contain braces, whitespace or control characters');
  return prefix;
}

/**
 * Every key of one stream, its groups and their deliveries. All of them carry the
 * escaped stream name as their hash tag (`<prefix>:{<stream>}:...`), so each Lua
 * script touches keys of a single Redis Cluster slot.
 *
 * The keys that span streams are the registry (`<prefix>:streams`, a set of
 * names), the layout version and the turns of background jobs. The registry is
 * only an index for `listStreams`: it is written before (not inside) the
 * stream's creation script, since on a cluster it lives in another slot, and the
 * stream's own `meta` hash stays the authority. See docs/redis.md.
 */
export class StreamKeys {
  private readonly base: string;

  constructor(
    prefix: string,
    readonly stream: string,
  ) {
    this.base = `${prefix}:{${escapeName(stream)}}`;
  }

  /** HASH: partitions, createdAt, `hw:<p>` = last sequence of partition p (the high watermark). */
  get meta(): string {
    return `${this.base}:meta`;
  }
  /** HASH: event id -> `<partition>:<sequence>`, for idempotent appends. */
  get ids(): string {
    return `${this.base}:ids`;
  }
  /** SET: the stream's group names. */
  get groups(): string {
    return `${this.base}:groups`;
  }
  /**
   * HASH: `<partition>:<sequence>` -> ms, the delayed events cancelled in every group
   * (cancelDelayed, docs/adr/048-skip-reschedule-cancel.md): fetch passes them as done.
   */
  get cancelled(): string {
    return `${this.base}:cx`;
  }
  /** STREAM (MAXLEN 1): bumped by every write that may create work; `wait()` blocks on it. */
  get wake(): string {
    return `${this.base}:wake`;
  }
  /** STREAM: the log of partition p; entry id `0-<sequence>`. */
  log(p: number): string {
    return `${this.base}:log:${p}`;
  }
  group(group: string): GroupKeys {
    return new GroupKeys(`${this.base}:g:${escapeName(group)}`);
  }
}

/** Keys of one group of one stream (same hash tag as the stream). */
export class GroupKeys {
  constructor(private readonly base: string) {}

  /**
   * HASH: the group's config (stored field names in group-config.ts), `f:<p>` frontier,
   * `c:<p>` cursor (next never-delivered sequence), `rw:<p>` rewind target, `rr` fetch rotation,
   * `pu`, `pa`, `pr`, `pb` the group's pause (STORED_PAUSE_FIELDS), `rlog` a rate limit's recent
   * claims (`<at>:<count>,...`, core/flow.ts RateLog).
   */
  get cfg(): string {
    return `${this.base}:cfg`;
  }
  /** HASH: `<p>:<seq>` -> `state|attempt|leaseId|expiresAt` for every delivered event above the frontier (scripts/includes/record.ts). */
  get deliveries(): string {
    return `${this.base}:dl`;
  }
  /** HASH: event id -> `p|seq|attempt|at|reason`. */
  get dead(): string {
    return `${this.base}:dead`;
  }
  /** ZSET (all scores 0): `ppppp:ssssssssssssssss:<event id>`, dead letters in (partition, sequence) order. */
  get deadOrder(): string {
    return `${this.base}:deadz`;
  }
  /**
   * ZSET: event id scored by when it was dead-lettered (ms): what a purge by time
   * reads, so it costs what it deletes (layout 2; backfilled from `dead` when shorter).
   */
  get deadTimes(): string {
    return `${this.base}:deadt`;
  }
  /** ZSET: sequences of partition p under a lease, scored by expiresAt. */
  leased(p: number): string {
    return `${this.base}:leased:${p}`;
  }
  /** ZSET: sequences of partition p waiting for redelivery, scored by the time they become available. */
  available(p: number): string {
    return `${this.base}:avail:${p}`;
  }
  /**
   * HASH: event key -> open deliveries of it in partition p (leased or available, not
   * waiting), for a group with key places (docs/adr/049-flow-control.md, scripts/includes/key-places.ts).
   */
  keyOpen(p: number): string {
    return `${this.base}:ko:${p}`;
  }
  /** ZSET (all scores 0): `<escaped key>\0<16-digit sequence>`, partition p's deliveries waiting for their key (state W). */
  keyWaiting(p: number): string {
    return `${this.base}:kw:${p}`;
  }
  /** Per partition, its key-place keys: keyOpen then keyWaiting. */
  keySlots(parts: number[]): string[] {
    return parts.flatMap((p) => [this.keyOpen(p), this.keyWaiting(p)]);
  }
  /** KEYS shared by reopen / redrive / reset / tidy / deleteGroup after their fixed part: per partition slot, leased then available. */
  slots(parts: number[]): string[] {
    return parts.flatMap((p) => [this.leased(p), this.available(p)]);
  }
}

/**
 * KEYS of the key places of `parts` (docs/adr/049-flow-control.md) for reopen / redrive /
 * reset / tidy / deleteGroup / skip, after their slots: per partition, ko, kw, then its log.
 */
export function flowSlots(k: StreamKeys, g: GroupKeys, parts: number[]): string[] {
  return parts.flatMap((p) => [g.keyOpen(p), g.keyWaiting(p), k.log(p)]);
}

/**
 * Fields of a stream's `meta` hash: the partition count, the creation time, the
 * retention limits (each only when set), and per partition p `hw:<p>`, its high
 * watermark (the last sequence appended), and `lw:<p>`, its trim point (every
 * sequence at or below it is gone; absent = 0).
 */
export const META_FIELDS = {
  partitions: 'partitions',
  createdAt: 'createdAt',
  retentionMaxAgeMs: 'ra',
  retentionMaxEvents: 're',
  retentionDeadLetterMaxAgeMs: 'rd',
  highWatermark: (p: number) => `hw:${p}`,
  trimmedTo: (p: number) => `lw:${p}`,
  /** The highest sequence of a delayed event in the partition (layout 3; absent: none): fetch reads `w` up to it. */
  delayedTo: (p: number) => `dz:${p}`,
} as const;

/** The registry of stream names (one of the few keys outside any stream's hash tag). */
export function registryKey(prefix: string): string {
  return `${prefix}:streams`;
}

/** STRING: the layout version of the data under the prefix (layout.ts); outside any stream's hash tag. */
export function layoutKey(prefix: string): string {
  return `${prefix}:layout`;
}

/** HASH `h` holder, `u` until (ms, the backend's clock): a named turn for background work (claimTurn). */
export function turnKey(prefix: string, job: string): string {
  return `${prefix}:turn:${escapeName(job)}`;
}

/**
 * The key objects of recently used streams, at most `capacity` of them (least
 * recently used dropped first). Names come from callers, including names that do
 * not exist (every `getStream` of an unknown name builds keys before Redis can
 * say so), so an unbounded map would grow with every name ever asked about. A
 * fixed-size LRU bounds it whatever the callers do, and a miss costs only an
 * escape and a string concatenation: rebuilding is cheap, keeping is not free.
 */
export class KeyCache {
  private readonly map = new Map<string, StreamKeys>();

  constructor(
    private readonly prefix: string,
    readonly capacity = 1024,
  ) {}

  get(stream: string): StreamKeys {
    let k = this.map.get(stream);
    if (k) {
      // Re-insert: a Map iterates in insertion order, so the first key is the least recently used.
      this.map.delete(stream);
    } else {
      k = new StreamKeys(this.prefix, stream);
      if (this.map.size >= this.capacity) this.map.delete(this.map.keys().next().value as string);
    }
    this.map.set(stream, k);
    return k;
  }

  get size(): number {
    return this.map.size;
  }
}
