import { murmur3, partitionForKey } from '../../lib/core/partitioner';

const utf8 = (s: string) => new TextEncoder().encode(s);

describe('partitioner', () => {
  // Published MurmurHash3 x86_32 vectors (seed 0 unless given); docs/adr/001-partitioner.md lists them.
  it.each([
    ['', 0, 0x00000000],
    ['', 1, 0x514e28b7],
    ['hello', 0, 0x248bfa47],
    ['Hello, world!', 0, 0xc0363e43],
    ['The quick brown fox jumps over the lazy dog', 0, 0x2e4ff723],
  ])('murmur3(%j, seed %i) = %i', (input, seed, expected) => {
    expect(murmur3(utf8(input), seed)).toBe(expected);
  });

  it.each([
    ['USD', 8, 5],
    ['EUR', 4, 2],
    ['日本', 16, 2],
    ['order-42', 12, 2],
    ['a', 2, 0],
  ])('routes %j over %i partitions to the documented partition', (key, n, expected) => {
    expect(partitionForKey(key, n)).toBe(expected);
  });

  it('routes every key to partition 0 of a single-partition stream', () => {
    expect(partitionForKey('anything', 1)).toBe(0);
  });
});
