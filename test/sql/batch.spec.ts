// Batch handlers on the SQL backends (issue 13, ADR 029): sizes, the maxWaitMs
// flush, per-event outcomes, a throw retrying the batch, and one settleMany per
// batch, counted on the `rheo:settleMany` diagnostics channel.
import { tracingChannel } from 'node:diagnostics_channel';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  Consumer,
  type ConsumerBatchHandler,
  type GroupRunOptions,
  type Lease,
  type OperationMessage,
  postgresBackend,
  Rheo,
  sqliteBackend,
} from '../../lib';
import type { BatchOptions } from '../../lib/runtime/options';
import { until } from '../support/until';
import { dropSchema, freshSchema, PG_URL } from './pg-helpers';

const dir = mkdtempSync(join(tmpdir(), 'rheo-batch-'));
const schema = freshSchema('batch');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The leases' payload numbers. */
const nums = (leases: readonly Lease[]) => leases.map((l) => (l.event.payload as { n: number }).n);

/** Settle calls as `rheo:settleMany` reports them: the number of leases in each. */
function recordSettleMany(): { counts: number[]; stop: () => void } {
  const counts: number[] = [];
  const ch = tracingChannel<OperationMessage>('rheo:settleMany');
  const handlers = {
    start: (m: OperationMessage) => counts.push(m.count ?? -1),
    end: () => undefined,
    asyncStart: () => undefined,
    asyncEnd: () => undefined,
    error: () => undefined,
  };
  ch.subscribe(handlers);
  return { counts, stop: () => ch.unsubscribe(handlers) };
}

describe.each([
  ['sqlite', () => sqliteBackend({ database: join(dir, 'batch.db') }), false],
  ['postgres', () => postgresBackend({ url: PG_URL, schema, poolSize: 4 }), true],
])('batch handlers on %s', (name, make, isPg) => {
  let rheo: Rheo;
  const groups: Consumer[] = [];
  let n = 0;

  beforeAll(async () => {
    rheo = new Rheo(make());
    await rheo.init();
  });
  afterEach(async () => {
    await Promise.all(groups.splice(0).map((g) => g.drain(2000)));
  });
  afterAll(async () => {
    await rheo.close();
    if (isPg) await dropSchema(schema);
  });

  /** A fresh stream and group, `count` events appended (payload `{ n }`). */
  async function fresh(count: number, options: { retryMs?: number } = {}) {
    const stream = `${name}-batch-${++n}`;
    await rheo.createStream(stream);
    const retry = options.retryMs === undefined ? undefined : { initialMs: options.retryMs, factor: 1, maxMs: options.retryMs };
    await rheo.createGroup(stream, 'g', retry ? { retry } : {});
    if (count > 0)
      await rheo.appendBatch(
        stream,
        Array.from({ length: count }, (_, i) => ({ payload: { n: i } })),
      );
    return stream;
  }

  function start(options: GroupRunOptions & { batch: BatchOptions }, handler: ConsumerBatchHandler): Consumer {
    const g = new Consumer(rheo, { pollMs: 20, leaseMs: 30_000, ...options }, handler);
    groups.push(g);
    g.start();
    return g;
  }

  it('hands out full batches of `size` without waiting, in order, each settled by one settleMany of its own', async () => {
    const stream = await fresh(30);
    const batches: number[][] = [];
    const rec = recordSettleMany();
    try {
      // maxWaitMs far beyond the test's bound: full batches must not wait for it.
      start({ stream, group: 'g', batch: { size: 10, maxWaitMs: 600_000 } }, async (leases) => {
        batches.push(nums(leases));
      });
      await until('all acked', async () => (await rheo.lag(stream, 'g')).lag === 0, 20_000);
    } finally {
      rec.stop();
    }
    expect(batches.map((b) => b.length)).toEqual([10, 10, 10]);
    expect(batches.flat()).toEqual(Array.from({ length: 30 }, (_, i) => i));
    expect(rec.counts).toEqual([10, 10, 10]);
  });

  it('runs with what it has after maxWaitMs', async () => {
    const stream = await fresh(3);
    const batches: number[][] = [];
    start({ stream, group: 'g', batch: { size: 100, maxWaitMs: 30 } }, async (leases) => {
      batches.push(nums(leases));
    });
    await until('the partial batch ran', () => batches.length === 1, 20_000);
    expect(batches).toEqual([[0, 1, 2]]);
    await rheo.appendBatch(stream, [{ payload: { n: 3 } }]);
    await until('the next one too', () => batches.length === 2, 20_000);
    expect(batches[1]).toEqual([3]);
  });

  it('settles per-event outcomes as given, the rest by the return (ack), in one call', async () => {
    const stream = await fresh(4, { retryMs: 10 });
    const seen: Array<[number, number]> = [];
    const rec = recordSettleMany();
    try {
      start({ stream, group: 'g', batch: { size: 4, maxWaitMs: 0 } }, async (leases, batch) => {
        for (const l of leases) seen.push([nums([l])[0], l.attempt]);
        if (leases[0].attempt > 1) return;
        batch.ack(leases[0].event);
        batch.reject(leases[1].event, 'malformed');
        batch.retry(leases[2], { delayMs: 0, reason: 'not yet' });
      });
      await until('all settled', async () => (await rheo.lag(stream, 'g')).lag === 0, 20_000);
    } finally {
      rec.stop();
    }
    expect(seen).toEqual([
      [0, 1],
      [1, 1],
      [2, 1],
      [3, 1],
      [2, 2],
    ]);
    expect(rec.counts).toEqual([4, 1]);
    const dead = await rheo.deadLetters(stream, 'g');
    expect(dead.map((d) => [d.reason, d.attempt])).toEqual([['malformed', 1]]);
  });

  it('retries every event of a batch that throws, on the group backoff', async () => {
    const stream = await fresh(3, { retryMs: 10 });
    const seen: Array<[number[], number[]]> = [];
    start({ stream, group: 'g', batch: { size: 3, maxWaitMs: 0 } }, async (leases) => {
      seen.push([nums(leases), leases.map((l) => l.attempt)]);
      if (leases[0].attempt === 1) throw new Error('downstream unavailable');
    });
    await until('all acked on the retry', async () => (await rheo.lag(stream, 'g')).lag === 0, 20_000);
    expect(seen[0]).toEqual([
      [0, 1, 2],
      [1, 1, 1],
    ]);
    expect(
      seen
        .slice(1)
        .flatMap(([ns]) => ns)
        .sort(),
    ).toEqual([0, 1, 2]);
    expect(seen.slice(1).every(([, attempts]) => attempts.every((a) => a === 2))).toBe(true);
    expect(await rheo.countDeadLetters(stream, 'g')).toBe(0);
  });
});
