// BullMQ 6 doing the bench's work on the same Redis, in the same run: addBulk
// of N jobs (`batch` per call, default 1000), then a Worker with concurrency 16 and a no-op processor. Jobs are
// removed on completion, BullMQ's cheapest settings.
import { randomBytes } from 'node:crypto';
import { Queue, Worker } from 'bullmq';
import { payload, rate, timeIt } from '../harness';

export async function benchBullmq(url: string, n: number, batch = 1000): Promise<{ append: number; consume: number }> {
  const prefix = `bullbench${randomBytes(4).toString('hex')}`;
  const connection = { url, maxRetriesPerRequest: null };
  const queue = new Queue('quotes', { connection, prefix });
  let worker: Worker | undefined;
  try {
    const append = await timeIt(async () => {
      for (let i = 0; i < n; i += batch) {
        const jobs = [];
        for (let j = i; j < Math.min(n, i + batch); j++) jobs.push({ name: 'quote', data: payload(j), opts: { removeOnComplete: true } });
        await queue.addBulk(jobs);
      }
    });
    let done = 0;
    let onAll!: () => void;
    const all = new Promise<void>((r) => (onAll = r));
    const consume = await timeIt(async () => {
      worker = new Worker('quotes', async () => undefined, { connection, prefix, concurrency: 16 });
      worker.on('completed', () => {
        if (++done >= n) onAll();
      });
      await all;
    });
    return { append: rate(n, append.ms), consume: rate(n, consume.ms) };
  } finally {
    await worker?.close();
    await queue.obliterate({ force: true }).catch(() => undefined);
    await queue.close();
  }
}
