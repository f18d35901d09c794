import Redis from 'ioredis';
import { Consumer, Rheo, redisBackend } from '../../lib';
import { appendRetrying, deleteKeys, freshPrefix, REDIS_URL } from './support';
import { until } from '../support/until';

const prefix = freshPrefix('kill');
const connectionName = `rheo-kill-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;

/** Kill every server-side connection of ours (by our unique connection name); returns how many. */
async function killOurConnections(admin: Redis): Promise<number> {
  const list = String(await admin.client('LIST'));
  const ids = list
    .split('\n')
    .filter((line) => line.includes(` name=${connectionName} `))
    .map((line) => /\bid=(\d+)/.exec(line)![1]);
  for (const id of ids) await admin.client('KILL', 'ID', id);
  return ids.length;
}

afterAll(async () => {
  await deleteKeys(prefix);
});

it('CLIENT KILL of both connections mid-consumption: the group recovers and loses nothing', async () => {
  const N = 3000;
  // The blocking connection is a duplicate(), so it carries the same connection name.
  const backend = redisBackend({ url: REDIS_URL, prefix, options: { connectionName } });
  const rheo = new Rheo(backend);
  const admin = new Redis(REDIS_URL);
  const stream = 'kill-stream';
  await rheo.createStream(stream, { partitions: 4 });
  await rheo.createGroup(stream, 'g', { maxAttempts: 1000, retry: { initialMs: 0, maxMs: 0 } });

  const handled = new Map<string, number>();
  const group = new Consumer(rheo, { stream, group: 'g', maxDemand: 50, concurrency: 8, leaseMs: 1000, pollMs: 100 }, async (lease) => {
    handled.set(lease.event.id, (handled.get(lease.event.id) ?? 0) + 1);
    await new Promise((r) => setImmediate(r));
  });
  group.start();

  const appended: string[] = [];
  let kills = 0;
  try {
    for (let batch = 0; batch < 30; batch++) {
      const events = await appendRetrying(rheo, stream, batch);
      appended.push(...events);
      if (batch % 6 === 3) {
        // Let the group go idle on a blocking read at least once, then kill both connections.
        await new Promise((r) => setTimeout(r, 120));
        kills += await killOurConnections(admin);
      }
    }
    expect(appended).toHaveLength(N);
    // Both connections (main + blocking) were killed each round.
    expect(kills).toBeGreaterThanOrEqual(2 * 5);
    const wakeUpsBefore = group.stats.wakeUps;
    await until(
      'lag 0',
      async () => {
        const lag = await rheo.lag(stream, 'g').catch(() => null);
        return lag?.lag === 0;
      },
      60_000,
      50,
    );
    // The blocking connection came back: appends after the kills still wake the idle group.
    await rheo.append(stream, { id: 'after-kills', payload: 'last' });
    appended.push('after-kills');
    await until('the last event', async () => handled.has('after-kills'), 60_000, 50);
    expect(group.stats.wakeUps).toBeGreaterThan(wakeUpsBefore);
    await until('lag 0 again', async () => (await rheo.lag(stream, 'g')).lag === 0, 60_000, 50);
  } finally {
    await group.drain(5000);
    admin.disconnect();
  }
  // Nothing lost: every appended event handled (at least once), all acked, nothing dead, nothing leased.
  expect(new Set(handled.keys())).toEqual(new Set(appended));
  const info = await rheo.groupInfo(stream, 'g');
  expect(info.lag.lag).toBe(0);
  expect(info.inflight).toBe(0);
  expect(info.deadLetters).toBe(0);
  await rheo.close();
}, 120_000);
