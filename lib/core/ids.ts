import { randomFillSync, randomUUID } from 'node:crypto';

/**
 * A new random identifier (RFC 4122 v4, 122 random bits) for leases and
 * consumers. `randomUUID` draws from a cached entropy pool, so it stays cheap on
 * the hot path.
 */
export function newId(): string {
  return randomUUID();
}

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));
/** Random bytes drawn 4 KiB at a time: one system call per 512 ids, not one per id. */
const pool = Buffer.alloc(4096);
let poolAt = pool.length;
let lastMs = -1;
let counter = 0;

/**
 * A new event id: a UUIDv7 (RFC 9562), 48 bits of Unix milliseconds, then a 12-bit
 * counter that keeps ids of one millisecond ascending, then 62 random bits. Ids
 * made one after another sort in the order they were made, so the stream's id
 * index (the idempotency key) grows at its right edge like the log itself instead
 * of taking a random page per append: appends stay as fast at a million events
 * as at a thousand. Still unique without coordination (62 random bits per id
 * beside the time), and still a UUID to anything that parses one.
 */
export function newEventId(now: number = Date.now()): string {
  if (now > lastMs) {
    lastMs = now;
    counter = 0;
  } else if (++counter > 0xfff) {
    // 4096 ids in one millisecond: borrow the next one (RFC 9562 6.2), so order still holds.
    lastMs++;
    counter = 0;
  }
  if (poolAt + 8 > pool.length) {
    randomFillSync(pool);
    poolAt = 0;
  }
  const ms = lastMs;
  const b = pool;
  const r = poolAt;
  poolAt += 8;
  const hi = Math.floor(ms / 0x10000);
  const lo = ms % 0x10000;
  return (
    HEX[(hi >>> 24) & 0xff] +
    HEX[(hi >>> 16) & 0xff] +
    HEX[(hi >>> 8) & 0xff] +
    HEX[hi & 0xff] +
    '-' +
    HEX[(lo >>> 8) & 0xff] +
    HEX[lo & 0xff] +
    '-' +
    HEX[0x70 | (counter >>> 8)] +
    HEX[counter & 0xff] +
    '-' +
    HEX[0x80 | (b[r] & 0x3f)] +
    HEX[b[r + 1]] +
    '-' +
    HEX[b[r + 2]] +
    HEX[b[r + 3]] +
    HEX[b[r + 4]] +
    HEX[b[r + 5]] +
    HEX[b[r + 6]] +
    HEX[b[r + 7]]
  );
}
