// `rheo group set`, run in this process (lib/cli/run.ts) against a SQLite file:
// the stored group changes, its deliveries are kept, and what the command refuses
// changes nothing (exit code 2 for usage and a missing --confirm, 1 for a refusal
// of the store's or the facade's).
import { Rheo, sqliteBackend } from '../../lib';
import { sqliteCli } from './support';

describe('rheo group set', () => {
  const sqlite = sqliteCli('group-set');
  const { rheoCli } = sqlite;

  beforeEach(async () => {
    const rheo = new Rheo(sqliteBackend({ database: sqlite.file }));
    await rheo.createStream('orders');
    await rheo.createGroup('orders', 'billing', { maxAttempts: 5 });
    await rheo.append('orders', { payload: { n: 1 } });
    const [lease] = await rheo.fetch('orders', 'billing');
    await rheo.nack(lease, { reason: 'card declined', delayMs: 60_000 });
    await rheo.close();
  });

  async function stored() {
    const rheo = new Rheo(sqliteBackend({ database: sqlite.file }));
    try {
      const info = await rheo.groupInfo('orders', 'billing');
      return { config: info.config, inflight: info.inflight, lag: info.lag.lag, deadLetters: info.deadLetters };
    } finally {
      await rheo.close();
    }
  }

  it('changes maxAttempts and the retry backoff, keeping the deliveries, and prints the stored settings', async () => {
    const before = await stored();
    const set = await rheoCli('group', 'set', 'orders', 'billing', '--max-attempts', '10', '--retry-factor', '1.5', '--confirm');
    expect(set).toEqual({
      code: 0,
      out: 'Changed the settings of orders/billing:\nmax attempts  10\nretry         1000 ms x1.5 up to 60000 ms\nordering      none\nlimits        none\n',
      err: '',
    });
    const after = await stored();
    expect(after).toEqual({
      ...before,
      config: { ...before.config, maxAttempts: 10, retry: { initialMs: 1000, factor: 1.5, maxMs: 60_000 } },
    });
    expect(after.lag).toBe(1);
    const asJson = await rheoCli(
      '--json',
      'group',
      'set',
      'orders',
      'billing',
      '--retry-initial-ms',
      '250',
      '--retry-max-ms',
      '500',
      '--confirm',
    );
    expect(asJson.code).toBe(0);
    expect(JSON.parse(asJson.out)).toEqual({
      stream: 'orders',
      group: 'billing',
      maxAttempts: 10,
      retry: { initialMs: 250, factor: 1.5, maxMs: 500 },
      ordering: 'none',
      keyConcurrency: null,
      groupConcurrency: null,
      rateLimit: null,
    });
  });

  it('refuses without --confirm, without a change, and a bad value, changing nothing', async () => {
    const before = await stored();
    const unconfirmed = await rheoCli('group', 'set', 'orders', 'billing', '--max-attempts', '10');
    expect(unconfirmed.code).toBe(2);
    expect(unconfirmed.err).toMatch(/confirm_required: updateGroup changes how every process of the group claims, retries/);
    const nothing = await rheoCli('group', 'set', 'orders', 'billing', '--confirm');
    expect(nothing.code).toBe(2);
    expect(nothing.err).toMatch(/nothing to change: give --max-attempts/);
    const word = await rheoCli('group', 'set', 'orders', 'billing', '--max-attempts', 'ten', '--confirm');
    expect(word.code).toBe(2);
    expect(word.err).toMatch(/--max-attempts <n>' argument 'ten' is invalid. must be a whole number/);
    const zero = await rheoCli('group', 'set', 'orders', 'billing', '--max-attempts', '0', '--confirm');
    expect(zero).toMatchObject({ code: 1, err: 'error: invalid_argument: maxAttempts must be between 1 and 1000\n' });
    const backwards = await rheoCli('group', 'set', 'orders', 'billing', '--retry-max-ms', '10', '--confirm');
    expect(backwards).toMatchObject({ code: 1, err: 'error: invalid_argument: retry.maxMs must be >= retry.initialMs (1000)\n' });
    expect(await stored()).toEqual(before);
  });

  it('reads --key-concurrency, --group-concurrency <n|none> and --rate-limit <max>/<perMs>|none; a bad one is a usage error', async () => {
    const before = await stored();
    const rate = await rheoCli('group', 'set', 'orders', 'billing', '--rate-limit', '100', '--confirm');
    expect(rate.code).toBe(2);
    expect(rate.err).toMatch(/--rate-limit <max\/perMs\|none>' argument '100' is invalid. must be <max>\/<perMs>, such as 100\/1000/);
    const group = await rheoCli('group', 'set', 'orders', 'billing', '--group-concurrency', 'all', '--confirm');
    expect(group.code).toBe(2);
    expect(group.err).toMatch(/--group-concurrency <n\|none>' argument 'all' is invalid. must be a whole number/);
    const key = await rheoCli('group', 'set', 'orders', 'billing', '--key-concurrency', 'none', '--confirm');
    expect(key.code).toBe(2);
    const nothing = await rheoCli('group', 'set', 'orders', 'billing', '--confirm');
    expect(nothing.err).toMatch(/--key-concurrency, --group-concurrency or --rate-limit/);
    // Removing a limit the group does not have changes nothing, on any store.
    const none = await rheoCli('group', 'set', 'orders', 'billing', '--group-concurrency', 'none', '--rate-limit', 'none', '--confirm');
    expect(none).toMatchObject({ code: 0, err: '' });
    expect(none.out).toMatch(/^limits {8}none$/m);
    expect(await stored()).toEqual(before);
  });

  it('sets a group-wide limit where the store enforces it, and is refused naming the field where it does not', async () => {
    const flow = sqliteBackend({ database: sqlite.file }).capabilities.guarantees.flowControl;
    const set = await rheoCli('group', 'set', 'orders', 'billing', '--group-concurrency', '4', '--rate-limit', '100/1000', '--confirm');
    if (flow) {
      expect(set).toMatchObject({ code: 0, err: '' });
      expect(set.out).toMatch(/^limits {8}group 4, rate 100 per 1000 ms$/m);
      expect((await stored()).config).toMatchObject({ groupConcurrency: 4, rateLimit: { max: 100, perMs: 1000 } });
    } else {
      expect(set.code).toBe(1);
      expect(set.err).toMatch(/^error: invalid_argument: (groupConcurrency|rateLimit) is not supported by the sqlite backend/);
      expect((await stored()).config).toMatchObject({ groupConcurrency: null, rateLimit: null });
    }
  });

  it('answers group_not_found for a group that does not exist', async () => {
    const missing = await rheoCli('group', 'set', 'orders', 'shipping', '--max-attempts', '3', '--confirm');
    expect(missing).toMatchObject({ code: 1, err: 'error: group_not_found: group "shipping" does not exist on stream "orders"\n' });
  });
});
