import type { EventMetadata, JsonValue, RheoEvent } from '../../core/types';
import type { NewEvent } from '../backend';
import type { SqliteStatement } from '../sql/external';
import { metadataOf } from '../sql/rows';
import { EVENT_ROW_PARAMS, INSERT_ROWS, type RawEventRow } from './plans';

/** The chunks `count` rows go in: the largest size of INSERT_ROWS that fits, repeatedly (500: 128 × 3, 64, 32, 16, 4). */
export function insertChunks(count: number): number[] {
  const chunks: number[] = [];
  for (const size of INSERT_ROWS) for (; count >= size; count -= size) chunks.push(size);
  return chunks;
}

/**
 * The rows of one append's INSERTs, in the order they are added, run as
 * multi-row statements (plans.insertEvents): each chunk runs as soon as its last
 * row is in, so a unique violation still fails the append's savepoint whole.
 */
export class EventRowWriter {
  private readonly chunks: number[];
  private next = 0;
  private params: unknown[] = [];
  private at = 0;
  /** The statement's named parameter: the stream of every row. */
  private readonly named: { stream: string };

  /** `count` rows of `stream` in all; `statement(n)` is the prepared INSERT of n rows. */
  constructor(
    stream: string,
    count: number,
    private readonly statement: (rows: number) => SqliteStatement,
  ) {
    this.named = { stream };
    this.chunks = insertChunks(count);
    this.startChunk();
  }

  // The columns of plans.insertEvents after the stream, in order (a fixed list, not rest parameters: this runs once per event).
  row(
    partition: number,
    sequence: number,
    id: string,
    ts: number,
    key: string | null,
    type: string | null,
    metadata: string,
    payload: string,
    tsMax: number,
    bloom: number,
    deliverAt: number | null,
  ): void {
    const p = this.params;
    let i = this.at;
    p[i++] = partition;
    p[i++] = sequence;
    p[i++] = id;
    p[i++] = ts;
    p[i++] = key;
    p[i++] = type;
    p[i++] = metadata;
    p[i++] = payload;
    p[i++] = tsMax;
    p[i++] = bloom;
    p[i++] = deliverAt;
    this.at = i;
    if (i === p.length) {
      this.statement(this.chunks[this.next++]).run(p, this.named);
      this.startChunk();
    }
  }

  /** A chunk the size of the last reuses its array: the statement has bound (copied) the values already. */
  private startChunk(): void {
    const size = this.chunks[this.next] * EVENT_ROW_PARAMS;
    if (this.next < this.chunks.length && size !== this.params.length) this.params = new Array<unknown>(size);
    this.at = 0;
  }
}

/**
 * What an append returns for a new event, its metadata and payload copied when the
 * append began (see SqliteBackend.append), so they are what was serialised and
 * stored even if the caller changes its objects while the append waits. Same
 * fields, in the same order, as sql/rows.ts toEvent.
 */
export function appendedEvent(
  stream: string,
  e: NewEvent,
  sequence: number,
  ts: number,
  copy: { metadata: EventMetadata; payload: JsonValue },
): RheoEvent {
  const event: RheoEvent = {
    id: e.id,
    stream,
    partition: e.partition,
    sequence,
    timestamp: new Date(ts),
    key: e.key,
    type: e.type,
    metadata: copy.metadata,
    payload: copy.payload,
  };
  if (e.deliverAt !== undefined) event.deliverAt = new Date(e.deliverAt.getTime());
  return event;
}

/** An event read as a raw row (plans.eventRunRaw): sql/rows.ts toEvent's fields, in its order. */
export function eventFromRaw(stream: string, partition: number, r: RawEventRow): RheoEvent {
  const event: RheoEvent = {
    id: r[0],
    stream,
    partition,
    sequence: r[1],
    timestamp: new Date(r[2]),
    key: r[3],
    type: r[4],
    metadata: metadataOf(r[5]),
    payload: JSON.parse(r[6]) as JsonValue,
  };
  if (r[7] !== null) event.deliverAt = new Date(r[7]);
  return event;
}
