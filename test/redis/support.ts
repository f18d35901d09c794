import Redis from 'ioredis';

/** The machine's Redis; override with RHEO_REDIS_URL. */
export const REDIS_URL = process.env.RHEO_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A key prefix no other test file (or run) uses. */
export function freshPrefix(label: string): string {
  return `rheo-test:${label}:${process.pid}:${Math.random().toString(36).slice(2, 8)}`;
}

/** Delete every key under `prefix` (SCAN, never KEYS). */
export async function deleteKeys(prefix: string): Promise<number> {
  const admin = new Redis(REDIS_URL);
  let deleted = 0;
  try {
    let cursor = '0';
    do {
      const [next, keys] = await admin.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length) deleted += await admin.del(...keys);
    } while (cursor !== '0');
  } finally {
    admin.disconnect();
  }
  return deleted;
}
