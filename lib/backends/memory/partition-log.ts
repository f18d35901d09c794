import type { EventMetadata, JsonValue, RheoEvent } from '../../core/types';

/** A stored event: the payload is kept as JSON text so callers can never mutate the log. */
export interface StoredEvent {
  id: string;
  partition: number;
  sequence: number;
  timestamp: number;
  key: string | null;
  type: string | null;
  metadata: string;
  payload: string;
  /** A delayed event's deliverAt, ms; absent on events without a delay. */
  deliverAt?: number;
  /** Set by cancelDelayed: a claim that reaches the event passes it as done, in every group (ADR 048). */
  cancelled?: true;
}

/**
 * One partition's log, trimmable from the front. A trim moves `trimmedTo` at once
 * (from then on the events at or below it do not exist for anyone) and frees their
 * memory in chunks afterwards ({@link dropTrimmed}); the array is compacted only
 * once its dead head outweighs its live part, so both cost amortised O(1) per event.
 */
export class PartitionLog {
  /** Every event at or below this sequence is trimmed. */
  trimmedTo = 0;
  /** Events still held, from sequence `base + 1`; those at or below trimmedTo await dropTrimmed. */
  private events: Array<StoredEvent | undefined> = [];
  private base = 0;
  /** Index in `events` of the first event not yet dropped. */
  private head = 0;

  /** The high watermark: the last sequence appended. */
  get hwm(): number {
    return this.base + this.events.length;
  }

  /** The event at `seq`, or undefined when it was trimmed or not appended yet. */
  get(seq: number): StoredEvent | undefined {
    if (seq <= this.trimmedTo || seq > this.hwm) return undefined;
    return this.events[seq - this.base - 1];
  }

  push(event: StoredEvent): void {
    this.events.push(event);
  }

  /**
   * Free at most `max` trimmed events; calls `forget` with each so the stream's
   * id index can let its id go. Returns how many were freed.
   */
  dropTrimmed(max: number, forget: (event: StoredEvent) => void): number {
    let n = 0;
    while (n < max && this.base + this.head < this.trimmedTo) {
      forget(this.events[this.head]!);
      this.events[this.head++] = undefined;
      n++;
    }
    if (this.head > 1024 && this.head * 2 > this.events.length) {
      this.events = this.events.slice(this.head);
      this.base += this.head;
      this.head = 0;
    }
    return n;
  }

  /** First sequence after the trim point whose timestamp is at or after `t` (hwm + 1 when none). */
  firstAtOrAfter(t: number): number {
    // Caller-supplied timestamps need not be ordered, so this scans.
    for (let seq = this.trimmedTo + 1; seq <= this.hwm; seq++) if (this.get(seq)!.timestamp >= t) return seq;
    return this.hwm + 1;
  }
}

// Records leave as deep copies (Dates included), so a caller can never change the store through them.

/** The event a stored record is, as a fresh copy. */
export function toEvent(stream: string, e: StoredEvent): RheoEvent {
  const event: RheoEvent = {
    id: e.id,
    stream,
    partition: e.partition,
    sequence: e.sequence,
    timestamp: new Date(e.timestamp),
    key: e.key,
    type: e.type,
    // Most events carry no metadata: a new empty object is the same copy without a parse.
    metadata: e.metadata === '{}' ? {} : (JSON.parse(e.metadata) as EventMetadata),
    payload: JSON.parse(e.payload) as JsonValue,
  };
  if (e.deliverAt !== undefined) event.deliverAt = new Date(e.deliverAt);
  return event;
}
