// pg-boss 10 doing the bench's work on the same PostgreSQL, in the same run:
// bulk insert of N jobs (`batch` per insert, default 1000), then draining them. pg-boss's `work()` sleeps its polling
// interval (>= 0.5 s) between batches, which would cap it at 200 jobs/s; its
// fastest path is what its own speed test does: `fetch` a batch, `complete` the
// batch in one call. Two such loops of 50 keep 100 jobs outstanding, the same
// bound as our maxDemand 100.
import { randomBytes } from 'node:crypto';
import { dropSchema } from '../pg-schema';
import PgBoss from 'pg-boss';
import { payload, rate, timeIt } from '../harness';

export async function benchPgBoss(url: string, n: number, batch = 1000): Promise<{ append: number; consume: number }> {
  const schema = `pgboss_bench_${randomBytes(4).toString('hex')}`;
  const boss = new PgBoss({ connectionString: url, schema, supervise: false, schedule: false, max: 10 });
  boss.on('error', (err) => console.error('pg-boss:', err.message));
  await boss.start();
  try {
    const queue = 'quotes';
    await boss.createQueue(queue);
    const append = await timeIt(async () => {
      for (let i = 0; i < n; i += batch) {
        const jobs = [];
        for (let j = i; j < Math.min(n, i + batch); j++) jobs.push({ name: queue, data: payload(j) as object });
        await boss.insert(jobs);
      }
    });
    let done = 0;
    let onAll!: () => void;
    const all = new Promise<void>((r) => (onAll = r));
    const consume = await timeIt(async () => {
      const loop = async () => {
        while (done < n) {
          const jobs = await boss.fetch(queue, { batchSize: 50 });
          if (jobs.length === 0) continue;
          await boss.complete(
            queue,
            jobs.map((j) => j.id),
          );
          done += jobs.length;
        }
        onAll();
      };
      await Promise.all([loop(), loop()]);
      await all;
    });
    return { append: rate(n, append.ms), consume: rate(n, consume.ms) };
  } finally {
    await boss.stop({ graceful: false, wait: true }).catch(() => undefined);
    await dropSchema(schema, url);
  }
}
