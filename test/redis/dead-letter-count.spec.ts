// countDeadLetters on Redis beyond the conformance suite: dead letters written
// before the time index existed (layout 1: no `deadt`) are indexed by the first
// count by time, which is then exact; a count of all never needs the index.
import Redis from 'ioredis';
import { ManualClock, Rheo, redisBackend } from '../../lib';
import { escapeName } from '../../lib/backends/redis/keys';
import { deleteKeys, freshPrefix, REDIS_URL } from './support';

const prefix = freshPrefix('dlcount');
const clock = new ManualClock(Date.UTC(2026, 0, 1));
const rheo = new Rheo(redisBackend({ url: REDIS_URL, prefix, clock }));
const admin = new Redis(REDIS_URL);

afterAll(async () => {
  await rheo.close();
  admin.disconnect();
  await deleteKeys(prefix);
});

describe('redis countDeadLetters', () => {
  it('indexes dead letters that predate the time index on the first count by time, then counts exactly', async () => {
    await rheo.createStream('s');
    await rheo.appendBatch(
      's',
      Array.from({ length: 250 }, (_, i) => ({ payload: i })),
    );
    await rheo.createGroup('s', 'g');
    const t0 = clock.now();
    for (const at of [0, 1000]) {
      clock.set(t0 + at);
      const leases = await rheo.fetch('s', 'g', { limit: 125 });
      await rheo.settleMany(leases.map((lease) => ({ kind: 'reject' as const, lease, reason: 'x' })));
    }
    // As layout 1 left them: the records, no time index.
    const deadt = `${prefix}:{${escapeName('s')}}:g:g:deadt`;
    expect(await admin.del(deadt)).toBe(1);
    expect(await rheo.countDeadLetters('s', 'g')).toBe(250);
    expect(await admin.exists(deadt)).toBe(0);
    expect(await rheo.countDeadLetters('s', 'g', { since: new Date(t0 + 1000) })).toBe(125);
    expect(await admin.zcard(deadt)).toBe(250);
    expect(await rheo.countDeadLetters('s', 'g', { since: new Date(t0) })).toBe(250);
    expect(await rheo.countDeadLetters('s', 'g', { since: new Date(t0 + 1001) })).toBe(0);
  });
});
