import type { EventMetadata, JsonValue, Lease, Retention, RheoEvent } from '../../core/types';
import type { ClaimDeadLetter, FlowHeld, NewEvent, SettleOp } from '../backend';

/**
 * Stream entry fields of an event (stored names, one letter each: existing logs
 * have them). `key`, `type` and `deliverAt` (ms; a delayed event's, layout 3)
 * are stored only when present. Partition and
 * sequence are not stored in the entry: they are the log key and the entry id
 * (`0-<sequence>`). The append script writes these names; fetch reads them all (and
 * answers them as JSON, see {@link LeaseRows}), settle reads `i`, inspect reads `t`.
 */
export const ENTRY_FIELDS = {
  id: 'i',
  timestamp: 't',
  key: 'k',
  type: 'y',
  metadata: 'm',
  payload: 'd',
  deliverAt: 'w',
} as const;

/** An event from its log entry's flat field list (see {@link ENTRY_FIELDS}). */
export function eventFromEntry(stream: string, partition: number, sequence: number, fields: unknown): RheoEvent {
  const f = fields as string[];
  let id = '';
  let ts = 0;
  let key: string | null = null;
  let type: string | null = null;
  let metadata = '{}';
  let payload = 'null';
  let deliverAt: number | null = null;
  for (let i = 0; i + 1 < f.length; i += 2) {
    const v = String(f[i + 1]);
    switch (String(f[i])) {
      case ENTRY_FIELDS.id:
        id = v;
        break;
      case ENTRY_FIELDS.timestamp:
        ts = Number(v);
        break;
      case ENTRY_FIELDS.key:
        key = v;
        break;
      case ENTRY_FIELDS.type:
        type = v;
        break;
      case ENTRY_FIELDS.metadata:
        metadata = v;
        break;
      case ENTRY_FIELDS.payload:
        payload = v;
        break;
      case ENTRY_FIELDS.deliverAt:
        deliverAt = Number(v);
        break;
    }
  }
  const event: RheoEvent = {
    id,
    stream,
    partition,
    sequence,
    timestamp: new Date(ts),
    key,
    type,
    metadata: JSON.parse(metadata) as EventMetadata,
    payload: JSON.parse(payload) as JsonValue,
  };
  if (deliverAt !== null) event.deliverAt = new Date(deliverAt);
  return event;
}

/**
 * The leases of a fetch script reply (scripts/fetch.ts), from its JSON texts: one
 * JSON.parse of its strings and one of its rows joined, per call, instead of RESP
 * arrays and a parse of metadata and payload per entry. `strings` holds
 * STRINGS_PER_LEASE per lease: event id, key ('' = none), type ('' = none), lease
 * id; `rows` holds VALUES_PER_LEASE per lease: partition, sequence, attempt,
 * timestamp (ms), metadata, payload (as the append's JSON.stringify wrote them, now
 * parsed), deliverAt (ms, null when none).
 */
export interface LeaseRows {
  count: number;
  strings: string[];
  rows: unknown[];
}

const STRINGS_PER_LEASE = 4;
const VALUES_PER_LEASE = 7;

/** The leases of a fetch reply: its strings JSON at 3, then one JSON row text per lease. */
export function fetchedLeases(reply: unknown[]): LeaseRows {
  if (reply.length < 4) return { count: 0, strings: [], rows: [] };
  const strings = JSON.parse(String(reply[3])) as string[];
  const count = strings.length / STRINGS_PER_LEASE;
  const rows = count > 0 ? (JSON.parse(`[${reply.slice(4, 4 + count).join(',')}]`) as unknown[]) : [];
  return { count, strings, rows };
}

const STRINGS_PER_DEAD_LETTER = 5;

/**
 * The expired leases a fetch reply's claim dead-lettered: the JSON text after its
 * `count` rows, 5 strings each (event id, partition, sequence, attempt, reason);
 * undefined when the reply has none (nothing expired on its last attempt).
 */
export function fetchedDeadLetters(reply: unknown[], count: number): ClaimDeadLetter[] | undefined {
  const at = 4 + count;
  if (reply.length <= at) return undefined;
  const v = JSON.parse(String(reply[at])) as string[];
  const dead: ClaimDeadLetter[] = [];
  for (let i = 0; i + STRINGS_PER_DEAD_LETTER <= v.length; i += STRINGS_PER_DEAD_LETTER) {
    dead.push({ eventId: v[i], partition: Number(v[i + 1]), sequence: Number(v[i + 2]), attempt: Number(v[i + 3]), reason: v[i + 4] });
  }
  return dead;
}

/** A fetch script reply (scripts/fetch.ts): its header, and its leases parsed from their JSON texts. */
export interface FetchAnswer {
  wakeId: string;
  pending: boolean;
  parked: number;
  leases: LeaseRows;
  deadLettered: ClaimDeadLetter[] | undefined;
  /** The group is paused: the script claimed nothing (leases empty). */
  paused?: true;
  /** The group has flow limits and the call lacked their KEYS: nothing was written, call again with them. */
  flowKeys?: true;
  /** What the group's flow limits held back (docs/adr/049-flow-control.md). */
  held?: FlowHeld;
  /** The time the call's leases were taken at when a rate limit moved it past the caller's now (core/flow.ts rateNow). */
  at?: number;
}

/**
 * The parked slot of a fetch reply: a count, or `<parked>:<limit>:<retryInMs>:<waitingForKey>:<at>` when a flow
 * limit held the call or a rate limit moved its time (`at`, 0 when it did not).
 */
function parkedOf(slot: unknown): { parked: number; held?: FlowHeld; at?: number } {
  if (typeof slot !== 'string' || !slot.includes(':')) return { parked: Number(slot) };
  const [parked, limit, retryInMs, waiting, at] = slot.split(':');
  const held: FlowHeld = {};
  if (limit === 'group_concurrency' || limit === 'rate_limit') {
    held.limit = limit;
    if (Number(retryInMs) > 0) held.retryInMs = Number(retryInMs);
  }
  if (Number(waiting) > 0) held.waitingForKey = Number(waiting);
  const moved = Number(at ?? 0) > 0 ? { at: Number(at) } : {};
  return held.limit || held.waitingForKey ? { parked: Number(parked), held, ...moved } : { parked: Number(parked), ...moved };
}

export function fetchAnswer(reply: unknown): FetchAnswer {
  const out = reply as unknown[];
  // A paused group's claim (docs/adr/046-pausing-a-group.md): its wake id, and nothing claimed.
  if (out[1] === 'paused')
    return { wakeId: String(out[0]), pending: false, parked: 0, leases: fetchedLeases([]), deadLettered: undefined, paused: true };
  if (out[1] === 'flow')
    return { wakeId: String(out[0]), pending: false, parked: 0, leases: fetchedLeases([]), deadLettered: undefined, flowKeys: true };
  const leases = fetchedLeases(out);
  const { parked, held, at } = parkedOf(out[2]);
  const answer: FetchAnswer = {
    wakeId: String(out[0]),
    pending: Number(out[1]) === 1,
    parked,
    leases,
    deadLettered: fetchedDeadLetters(out, leases.count),
  };
  if (held) answer.held = held;
  if (at !== undefined) answer.at = at;
  return answer;
}

/** Lease n's lease id and attempt (see {@link LeaseRows}). */
export function leaseOf(f: LeaseRows, n: number): { leaseId: string; attempt: number } {
  return { leaseId: f.strings[n * STRINGS_PER_LEASE + 3], attempt: f.rows[n * VALUES_PER_LEASE + 2] as number };
}

/** Lease n's event (see {@link LeaseRows}): the same object {@link eventFromEntry} builds. */
export function eventOfLease(stream: string, f: LeaseRows, n: number): RheoEvent {
  const s = n * STRINGS_PER_LEASE;
  const r = n * VALUES_PER_LEASE;
  const v = f.rows;
  const event: RheoEvent = {
    id: f.strings[s],
    stream,
    partition: v[r] as number,
    sequence: v[r + 1] as number,
    timestamp: new Date(v[r + 3] as number),
    key: f.strings[s + 1] || null,
    type: f.strings[s + 2] || null,
    metadata: v[r + 4] as EventMetadata,
    payload: v[r + 5] as JsonValue,
  };
  if (v[r + 6] !== null) event.deliverAt = new Date(v[r + 6] as number);
  return event;
}

/** What the append script needs, built once per batch (see scripts/append.ts). */
export interface AppendCall {
  /** The batch's partitions by first appearance: partition slot j is partitions[j] (its log is KEYS[4+j]). */
  partitions: number[];
  args: string[];
  /** Whether an event of the batch is delayed (the stream must then be on the delayed layout). */
  delayed: boolean;
}

const SMALL_PER_EVENT = 5;

/**
 * The append script's arguments: the small fields of every event as one JSON text
 * (one argument and one cjson.decode for the batch instead of six arguments per
 * event), then each event's metadata and payload texts as they are, then the
 * delayed events' (index, deliverAt) pairs. Names go through toWellFormed, which is
 * what UTF-8 encoding each as its own argument did (cjson.decode refuses a lone surrogate).
 */
export function appendArgs(events: NewEvent[]): AppendCall {
  const small = new Array<string | number>(events.length * SMALL_PER_EVENT);
  const args = new Array<string>(1 + 2 * events.length);
  const seen = new Set<number>();
  const partitions: number[] = [];
  for (let i = 0; i < events.length; i++) {
    const e = events[i];
    if (!seen.has(e.partition)) {
      seen.add(e.partition);
      partitions.push(e.partition);
    }
    const s = i * SMALL_PER_EVENT;
    small[s] = e.id.toWellFormed();
    small[s + 1] = e.partition;
    small[s + 2] = String(e.timestamp.getTime());
    small[s + 3] = e.key === null ? '' : e.key.toWellFormed();
    small[s + 4] = e.type === null ? '' : e.type.toWellFormed();
    args[1 + 2 * i] = e.metadataJson;
    args[2 + 2 * i] = e.payloadJson;
  }
  args[0] = JSON.stringify(small);
  const delays = appendDelayArgs(events);
  for (const d of delays) args.push(d);
  return { partitions, args, delayed: delays.length > 0 };
}

/**
 * The append script's trailing arguments: per delayed event of the batch, its
 * index in the batch (from 0) and its deliverAt (ms). None for a batch without one.
 */
function appendDelayArgs(events: NewEvent[]): string[] {
  const out: string[] = [];
  events.forEach((e, i) => {
    if (e.deliverAt !== undefined) out.push(String(i), String(e.deliverAt.getTime()));
  });
  return out;
}

/** Per event of an append: its new sequence, or for a stored id `[ref, entry fields]`, or just the ref `<p>:<seq>`. */
export type AppendOutcome = number | string | [string, string[]];

/**
 * The append script's reply (first new sequence per partition slot, then index and
 * answer of each event whose id was stored) expanded to one outcome per event: new
 * events of a partition take its first sequence and the next ones, in batch order,
 * as the script allocated them.
 */
export function appendOutcomes(reply: unknown[], events: NewEvent[], partitions: number[]): AppendOutcome[] {
  const next = new Map<number, number>();
  const firsts = reply[0] as number[];
  partitions.forEach((p, j) => next.set(p, Number(firsts[j])));
  const stored = new Map<number, string | [string, string[]]>();
  for (let r = 1; r + 1 < reply.length; r += 2) stored.set(Number(reply[r]), reply[r + 1] as string | [string, string[]]);
  const out = new Array<AppendOutcome>(events.length);
  for (let i = 0; i < events.length; i++) {
    const s = stored.get(i);
    if (s !== undefined) {
      out[i] = s;
    } else {
      const p = events[i].partition;
      const seq = next.get(p)!;
      next.set(p, seq + 1);
      out[i] = seq;
    }
  }
  return out;
}

/** A dead-letter record: `partition|sequence|attempt|at|reason` (written by scripts/settle.ts, see scripts/includes/dead-letter.ts). */
export interface DeadRecord {
  partition: number;
  sequence: number;
  attempt: number;
  at: number;
  reason: string;
}

export function parseDeadRecord(rec: string): DeadRecord {
  const parts = rec.split('|');
  return {
    partition: Number(parts[0]),
    sequence: Number(parts[1]),
    attempt: Number(parts[2]),
    at: Number(parts[3]),
    // The reason is last and may itself contain '|'.
    reason: parts.slice(4).join('|'),
  };
}

/** Compare two stream entry ids (`ms-seq`) numerically. */
export function compareEntryIds(a: string, b: string): number {
  const [am, as] = a.split('-');
  const [bm, bs] = b.split('-');
  const x = BigInt(am) - BigInt(bm);
  if (x !== 0n) return x < 0n ? -1 : 1;
  const y = BigInt(as ?? '0') - BigInt(bs ?? '0');
  return y === 0n ? 0 : y < 0n ? -1 : 1;
}

/** One value of a bulk op (delivery.ts, bulk): an element of its call's JSON text. */
export type OpValue = string | number | boolean | null;

/**
 * A lease as the renew, release and settle scripts take it (scripts/renew.ts):
 * partition, sequence (strings, as they name keys), receiptOk, leaseId. The receipt
 * is compared here; the script still answers receipt_mismatch only for a lease that
 * fenced. The lease id is made well-formed as UTF-8 encoding of an argument made it
 * (a lone surrogate becomes U+FFFD): cjson.decode refuses a lone surrogate escape.
 */
export function leaseOpValues(lease: Lease<unknown>): OpValue[] {
  const seq = String(lease.event.sequence);
  return [String(lease.event.partition), seq, lease.receipt === `0-${seq}`, wellFormed(lease.leaseId)];
}

/**
 * One settle op's values (scripts/settle.ts), by kind: ack `a` then the lease's
 * values (leaseOpValues); reject `r`, the lease's, reason; nack `n`, the lease's,
 * reason, delayMs (null = the group's backoff).
 */
export function settleOpValues(op: SettleOp): OpValue[] {
  const lease = leaseOpValues(op.lease);
  if (op.kind === 'ack') return ['a', ...lease];
  const reason = wellFormed(op.reason ?? '');
  if (op.kind === 'reject') return ['r', ...lease, reason];
  return ['n', ...lease, reason, op.delayMs ?? null];
}

/** `s` as UTF-8 encoding would carry it: a lone surrogate replaced by U+FFFD. */
function wellFormed(s: string): string {
  return typeof s === 'string' ? s.toWellFormed() : String(s);
}

/**
 * A stream's retention as the meta hash stores it (`ra` maxAgeMs, `re` maxEvents,
 * `rd` deadLetterMaxAgeMs; keys.ts META_FIELDS), as script arguments: '' for a limit
 * that is not set (the scripts then remove its field; includes/retention.ts).
 */
export function retentionArgs(retention: Retention | undefined): string[] {
  const r = retention ?? {};
  return [r.maxAgeMs, r.maxEvents, r.deadLetterMaxAgeMs].map((v) => (v === undefined ? '' : String(v)));
}

/** The retention from the stored `ra`, `re`, `rd` values (in that order); undefined when none is set. */
export function decodeRetention(values: ReadonlyArray<string | null | undefined>): Retention | undefined {
  const [ra, re, rd] = values;
  const r: Retention = {};
  if (ra !== null && ra !== undefined) r.maxAgeMs = Number(ra);
  if (re !== null && re !== undefined) r.maxEvents = Number(re);
  if (rd !== null && rd !== undefined) r.deadLetterMaxAgeMs = Number(rd);
  return Object.keys(r).length > 0 ? r : undefined;
}

/** Only the limits that are set, or undefined when none is (StreamInfo.retention's form). */
export function setLimits(retention: Retention | undefined): Retention | undefined {
  return decodeRetention(retentionArgs(retention).map((v) => (v === '' ? null : v)));
}
