// The least work a durable queue can do on Redis Streams, to measure our design
// against the store's limit (issue 15). One stream key of its own, one field per
// entry (`d`: the payload's JSON), one consumer group.
// Append: one pipeline of `XADD key * d <json>` per batch (no MAXLEN: nothing
// trimmed), one batch after another, on one connection.
// Consume: `workers` concurrent loops on that one connection (ioredis queues their
// commands on it), each `XREADGROUP GROUP g c<i> COUNT <claim> STREAMS key >`,
// JSON.parse of each payload handed to a no-op async handler, then one
// `XACK key g id…` for the batch. Until all `n` entries are acked.
// What it skips, compared with ours: partitions (one stream) and our own
// sequences (the entry id is the order), the log kept per group beside a pending
// list we manage (XACK forgets an entry; nothing records its outcome), per-key
// ordering, the frontier, fencing tokens and attempt counts (the XACK does not
// check it still holds the entry), retries, dead letters, delays, lease expiry
// and renewal (no XAUTOCLAIM), Lua scripts (plain commands), wake-ups (workers
// read again at once, no BLOCK), event ids, types, keys, metadata and timestamps.
import type Redis from 'ioredis';
import { payload, rate, timeIt } from '../harness';

/** Append `n` payload() entries to `key` in pipelines of `batch`. Events per second. */
export async function minimalAppend(redis: Redis, key: string, n: number, batch: number): Promise<number> {
  const { ms } = await timeIt(async () => {
    for (let i = 0; i < n; i += batch) {
      const p = redis.pipeline();
      for (let j = i; j < Math.min(n, i + batch); j++) p.xadd(key, '*', 'd', JSON.stringify(payload(j)));
      const results = (await p.exec()) ?? [];
      for (const [err] of results) if (err) throw err;
    }
  });
  return rate(n, ms);
}

/** Consume the `n` entries of `key` through a new group, `workers` loops reading `claim` at a time. Events per second. */
export async function minimalConsume(redis: Redis, key: string, n: number, options: { workers: number; claim: number }): Promise<number> {
  await redis.xgroup('CREATE', key, 'g', '0');
  const handler = async (_payload: unknown) => undefined;
  let consumed = 0;
  const worker = async (w: number) => {
    while (consumed < n) {
      const res = (await redis.xreadgroup('GROUP', 'g', `c${w}`, 'COUNT', options.claim, 'STREAMS', key, '>')) as Array<
        [string, Array<[string, string[]]>]
      > | null;
      const entries = res?.[0]?.[1] ?? [];
      if (entries.length === 0) continue; // the rest are read by other workers
      await Promise.all(entries.map(([, fields]) => handler(JSON.parse(fields[1]))));
      await redis.xack(key, 'g', ...entries.map(([id]) => id));
      consumed += entries.length;
    }
  };
  const { ms } = await timeIt(() => Promise.all(Array.from({ length: options.workers }, (_, w) => worker(w))));
  return rate(n, ms);
}
