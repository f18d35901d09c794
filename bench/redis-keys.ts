// The benches' Redis: where it is, and how a bench deletes what it wrote.
import Redis from 'ioredis';

export const REDIS_URL = process.env.RHEO_REDIS_URL ?? 'redis://127.0.0.1:6379';

/**
 * Delete every key under `prefix` (SCAN, never KEYS) on one server: `redis`, or a
 * connection opened (and closed) for it. One UNLINK per key, pipelined per page:
 * UNLINK frees a 1M-entry stream in the background, not while Redis serves others,
 * and on a cluster node keys of several slots cannot share one command.
 */
export async function deleteKeysUnder(prefix: string, redis?: Redis): Promise<void> {
  const r = redis ?? new Redis(REDIS_URL);
  try {
    let cursor = '0';
    do {
      const [next, keys] = await r.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) {
        const pipeline = r.pipeline();
        for (const key of keys) pipeline.unlink(key);
        await pipeline.exec();
      }
    } while (cursor !== '0');
  } finally {
    if (!redis) r.disconnect();
  }
}
