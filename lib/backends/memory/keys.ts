import { keyPlaces } from '../../core/flow';
import type { Delivery, GroupPartition, MemGroup, MemStream } from './context';

// Key places (docs/adr/049-flow-control.md): a group with `ordering: 'key'` or
// `keyConcurrency` keeps, per partition, how many deliveries of each key are open
// and which of the key's events wait for a place, in sequence order. A delivery
// waiting for its key is a record in state 'waiting': open (it holds the frontier)
// but never claimable. Every path that ends an open delivery of a key calls
// `keyEnded`, which hands the place to the key's earliest waiting event.

/** Per partition: open deliveries per key (not counting waiting ones), and each key's waiting sequences, ascending. */
export interface KeyBook {
  open: Map<string, number>;
  waiting: Map<string, number[]>;
}

function bookOf(part: GroupPartition): KeyBook {
  return (part.keys ??= { open: new Map(), waiting: new Map() });
}

/**
 * Whether a fresh event of `key` may be claimed now (and its place taken): none of
 * the key's events waits, and it has a free place. Keyless events always may.
 */
export function admit(g: MemGroup, part: GroupPartition, key: string | null): boolean {
  const places = keyPlaces(g.config);
  if (places === null || key === null) return true;
  const book = bookOf(part);
  if (book.waiting.has(key)) return false;
  const open = book.open.get(key) ?? 0;
  if (open >= places) return false;
  book.open.set(key, open + 1);
  return true;
}

/** Set delivery `d` (new, of `key`) waiting for its key. */
export function waitForKey(part: GroupPartition, d: Delivery, key: string): void {
  d.state = 'waiting';
  const list = bookOf(part).waiting.get(key);
  if (list) list.push(d.sequence);
  else bookOf(part).waiting.set(key, [d.sequence]);
}

/**
 * Delivery `d` is about to end (ack, dead letter, skip, cancel): its place (or, if it
 * waited, its turn) is given up, and the key's earliest waiting event gets the
 * place, due at once or at its deliverAt. True when an event got one.
 */
export function keyEnded(s: MemStream, g: MemGroup, part: GroupPartition, p: number, d: Delivery, now: number): boolean {
  const places = keyPlaces(g.config);
  if (places === null || d.key === null || !part.keys) return false;
  const book = part.keys;
  const key = d.key;
  if (d.state === 'waiting') {
    const list = book.waiting.get(key) ?? [];
    const i = list.indexOf(d.sequence);
    if (i >= 0) list.splice(i, 1);
    if (list.length === 0) book.waiting.delete(key);
    return false;
  }
  const open = (book.open.get(key) ?? 1) - 1;
  if (open > 0) book.open.set(key, open);
  else book.open.delete(key);
  return promote(s, part, p, key, places, now) > 0;
}

/** Give free places of `key` to its earliest waiting events; how many got one. */
function promote(s: MemStream, part: GroupPartition, p: number, key: string, places: number, now: number): number {
  const book = part.keys!;
  const list = book.waiting.get(key);
  let n = 0;
  while (list && list.length > 0 && (book.open.get(key) ?? 0) < places) {
    const d = part.deliveries.get(list.shift()!)!;
    d.state = 'available';
    d.availableAt = Math.max(now, s.log[p].get(d.sequence)?.deliverAt ?? 0);
    book.open.set(key, (book.open.get(key) ?? 0) + 1);
    n++;
  }
  if (list && list.length === 0) book.waiting.delete(key);
  return n;
}

/**
 * Count every key of a partition again from its records, after a path that moved
 * many at once (replay, reset, redrive, a forced trim), then give free places to
 * waiting events. A re-opened delivery of a key comes back waiting (`reopened`), so
 * it takes a place only here, in sequence order.
 */
export function recountKeys(s: MemStream, g: MemGroup, part: GroupPartition, p: number, now: number): void {
  const places = keyPlaces(g.config);
  if (places === null) return;
  const book: KeyBook = { open: new Map(), waiting: new Map() };
  part.keys = book;
  for (const seq of [...part.open].sort((a, b) => a - b)) {
    const d = part.deliveries.get(seq)!;
    if (d.key === null) continue;
    if (d.state === 'waiting') {
      const list = book.waiting.get(d.key);
      if (list) list.push(seq);
      else book.waiting.set(d.key, [seq]);
    } else {
      book.open.set(d.key, (book.open.get(d.key) ?? 0) + 1);
    }
  }
  for (const key of [...book.waiting.keys()]) promote(s, part, p, key, places, now);
}

/** Deliveries of the group waiting for their key. */
export function waitingForKey(g: MemGroup): number {
  let n = 0;
  for (const part of g.parts) for (const list of part.keys?.waiting.values() ?? []) n += list.length;
  return n;
}
