import { Rheo, redisBackend } from '../../lib';
import { deleteKeys, freshPrefix, REDIS_URL } from './support';

const prefix = freshPrefix('release');

afterAll(async () => {
  await deleteKeys(prefix);
});

// The conformance suite covers release's semantics; this is the Redis wake-up:
// a consumer blocked in wait() is woken by a release as by a nack with no delay,
// not left to its poll timer.
it('release wakes a consumer waiting on the stream, which then claims the event with the same attempt', async () => {
  const backend = redisBackend({ url: REDIS_URL, prefix });
  const rheo = new Rheo(backend);
  try {
    await rheo.createStream('s');
    await rheo.createGroup('s', 'g', { ordering: 'partition' });
    await rheo.append('s', { payload: 1 });
    const [lease] = await rheo.fetch('s', 'g', { leaseMs: 60_000 });
    expect(lease.attempt).toBe(1);
    // Nothing else is claimable (partition-ordered head is held): this consumer waits.
    expect(await rheo.fetch('s', 'g')).toEqual([]);
    const controller = new AbortController();
    const waited = backend.wait({ stream: 's', group: 'g', timeoutMs: 25_000, signal: controller.signal }).then(() => 'woken' as const);
    const deadline = new Promise<'timed out'>((resolve) => setTimeout(() => resolve('timed out'), 15_000).unref());
    expect(await rheo.releaseMany([lease])).toEqual([{ ok: true }]);
    expect(await Promise.race([waited, deadline])).toBe('woken');
    controller.abort();
    const [again] = await rheo.fetch('s', 'g');
    expect(again).toMatchObject({ attempt: 1, event: { sequence: 1 } });
    await rheo.ack(again);
  } finally {
    await rheo.close();
  }
}, 30_000);
