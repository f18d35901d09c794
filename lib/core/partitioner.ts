/**
 * The partitioner: which partition a key routes to. It is part of the ordering
 * contract, so it must give the same answer in every backend, every process and
 * every release: MurmurHash3 (x86, 32-bit, seed 0) of the key's UTF-8 bytes, as
 * an unsigned integer, modulo the partition count. See docs/adr/001-partitioner.md
 * for the test vectors.
 */

const encoder = new TextEncoder();

/** MurmurHash3 x86_32 of `bytes` with `seed`, as an unsigned 32-bit integer. */
export function murmur3(bytes: Uint8Array, seed = 0): number {
  return murmur3Of(bytes, bytes.length, seed);
}

/** MurmurHash3 x86_32 of the first `length` bytes of `bytes`. */
function murmur3Of(bytes: Uint8Array, length: number, seed: number): number {
  const c1 = 0xcc9e2d51;
  const c2 = 0x1b873593;
  let h = seed >>> 0;
  const blocks = length >>> 2;
  for (let i = 0; i < blocks; i++) {
    const o = i << 2;
    let k = bytes[o] | (bytes[o + 1] << 8) | (bytes[o + 2] << 16) | (bytes[o + 3] << 24);
    k = Math.imul(k, c1);
    k = (k << 15) | (k >>> 17);
    k = Math.imul(k, c2);
    h ^= k;
    h = (h << 13) | (h >>> 19);
    h = (Math.imul(h, 5) + 0xe6546b64) | 0;
  }
  const tail = blocks << 2;
  let k = 0;
  switch (length & 3) {
    case 3:
      k ^= bytes[tail + 2] << 16;
    // falls through
    case 2:
      k ^= bytes[tail + 1] << 8;
    // falls through
    case 1:
      k ^= bytes[tail];
      k = Math.imul(k, c1);
      k = (k << 15) | (k >>> 17);
      k = Math.imul(k, c2);
      h ^= k;
  }
  h ^= length;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/**
 * Room for the UTF-8 bytes of an ASCII key, which are its char codes: most keys
 * are ASCII, and hashing them here spares a new array per appended event.
 */
const scratch = new Uint8Array(512);

/** The partition (0-based) that `key` routes to in a stream of `partitions` partitions. */
export function partitionForKey(key: string, partitions: number): number {
  if (partitions <= 1) return 0;
  const n = key.length;
  if (n <= scratch.length) {
    let i = 0;
    for (; i < n; i++) {
      const c = key.charCodeAt(i);
      if (c >= 0x80) break;
      scratch[i] = c;
    }
    if (i === n) return murmur3Of(scratch, n, 0) % partitions;
  }
  return murmur3(encoder.encode(key)) % partitions;
}
