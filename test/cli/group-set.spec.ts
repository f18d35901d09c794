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
      out: 'Changed the settings of orders/billing:\nmax attempts  10\nretry         1000 ms x1.5 up to 60000 ms\nordering      none\n',
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
    });
  });

  it('refuses without --confirm, without a change, and a bad value, changing nothing', async () => {
    const before = await stored();
    const unconfirmed = await rheoCli('group', 'set', 'orders', 'billing', '--max-attempts', '10');
    expect(unconfirmed.code).toBe(2);
    expect(unconfirmed.err).toMatch(/confirm_required: updateGroup changes how every process of the group retries/);
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

  it('answers group_not_found for a group that does not exist', async () => {
    const missing = await rheoCli('group', 'set', 'orders', 'shipping', '--max-attempts', '3', '--confirm');
    expect(missing).toMatchObject({ code: 1, err: 'error: group_not_found: group "shipping" does not exist on stream "orders"\n' });
  });
});
