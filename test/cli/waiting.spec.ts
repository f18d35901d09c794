// `rheo skip`, `rheo reschedule`, `rheo cancel-delayed`, run in this process
// (lib/cli/run.ts) against a SQLite file: what each changes, that each needs
// --confirm (exit code 2, nothing changed), and that an event left alone is named
// and ends the run with exit code 1.
import { ManualClock, Rheo, sqliteBackend } from '../../lib';
import { sqliteCli } from './support';

describe('rheo skip, reschedule, cancel-delayed', () => {
  const sqlite = sqliteCli('waiting');
  const { rheoCli } = sqlite;
  let clock: ManualClock;
  /** retry: the first event, nacked (waits a minute); held: the second, leased; reminder: a delayed event. */
  let ids: { retry: string; held: string; reminder: string };

  beforeEach(async () => {
    // The CLI runs on the real clock: the test's clock starts there, so a lease it takes is live for the CLI too.
    clock = new ManualClock(Date.now());
    const rheo = open();
    await rheo.createStream('orders');
    await rheo.createGroup('orders', 'billing', { maxAttempts: 5, retry: { initialMs: 60_000, factor: 1, maxMs: 60_000 } });
    await rheo.createGroup('orders', 'audit');
    const [a, b] = await rheo.appendBatch('orders', [{ payload: { n: 1 } }, { payload: { n: 2 } }]);
    const reminder = await rheo.append('orders', { payload: 'remind', delayMs: 3_600_000 });
    const [retry] = await rheo.fetch('orders', 'billing', { limit: 1, leaseMs: 600_000 });
    await rheo.nack(retry, { reason: 'card declined' });
    await rheo.fetch('orders', 'billing', { limit: 1, leaseMs: 600_000 });
    await rheo.close();
    ids = { retry: a.id, held: b.id, reminder: reminder.id };
  });

  function open(): Rheo {
    return new Rheo(sqliteBackend({ database: sqlite.file, clock }));
  }

  async function info(group = 'billing') {
    const rheo = open();
    try {
      return await rheo.groupInfo('orders', group);
    } finally {
      await rheo.close();
    }
  }

  it('skip: settles the waiting retry, names the one in flight, shows the skip in info, exits 1 for the one left', async () => {
    const skipped = await rheoCli('skip', 'orders', 'billing', '--id', ids.retry, ids.held, '--reason', 'quote expired', '--confirm');
    expect(skipped.code).toBe(1);
    expect(skipped.out).toMatch(new RegExp(`^Skipped ${ids.retry}$`, 'm'));
    expect(skipped.out).toMatch(new RegExp(`^left ${ids.held}: lease_held: .*held until \\S+Z`, 'm'));
    expect(skipped.out).toMatch(/^Skipped 1 of 2 delivery\(ies\) of orders\/billing\.$/m);
    expect(skipped.err).toBe('error: lease_held: 1 of 2 event(s) were left alone (see above)\n');
    const after = await info();
    expect(after.skipped).toMatchObject({ count: 1, lastReason: 'quote expired' });
    expect(after.lag.partitions[0].frontier).toBe(1);
    const shown = await rheoCli('info', 'orders', 'billing');
    expect(shown.out).toMatch(/^skipped +1 \(last \S+Z: quote expired\)$/m);
    const asJson = await rheoCli('--json', 'info', 'orders', 'billing');
    expect(JSON.parse(asJson.out).skipped).toEqual({ count: 1, lastReason: 'quote expired', lastAt: expect.any(String) });
  });

  it('reschedule: moves the waiting retry to --delay-ms or --at, by id, in JSON on request', async () => {
    const moved = await rheoCli('--json', 'reschedule', 'orders', 'billing', '--id', ids.retry, '--delay-ms', '0', '--confirm');
    expect(moved.code).toBe(0);
    expect(JSON.parse(moved.out)).toEqual({ done: 1, results: [{ eventId: ids.retry, ok: true }] });
    // Due at the CLI's now: a little after the test clock's.
    clock.advance(5_000);
    const rheo = open();
    try {
      const [again] = await rheo.fetch('orders', 'billing', { leaseMs: 1000 });
      expect(again).toMatchObject({ attempt: 2, event: { id: ids.retry } });
      await rheo.nack(again);
    } finally {
      await rheo.close();
    }
    const at = new Date(Date.now() + 7_200_000).toISOString();
    const later = await rheoCli('reschedule', 'orders', 'billing', '--id', ids.retry, '--at', at, '--confirm');
    expect(later).toMatchObject({ code: 0, err: '' });
    expect(later.out).toMatch(/^Rescheduled 1 of 1 delivery\(ies\) of orders\/billing\.$/m);
  });

  it('cancel-delayed: no group runs the event, and the count of groups is printed', async () => {
    const cancelled = await rheoCli('cancel-delayed', 'orders', ids.reminder, '--reason', 'order cancelled', '--confirm');
    expect(cancelled).toEqual({ code: 0, out: `Cancelled ${ids.reminder} of orders: 2 group(s) had it still to run.\n`, err: '' });
    clock.advance(3_600_000 + 600_000);
    const rheo = open();
    try {
      for (const group of ['billing', 'audit']) {
        const got = [];
        for (
          let more = await rheo.fetch('orders', group, { limit: 10 });
          more.length;
          more = await rheo.fetch('orders', group, { limit: 10 })
        )
          got.push(...more);
        expect(got.map((l) => l.event.id)).not.toContain(ids.reminder);
      }
    } finally {
      await rheo.close();
    }
    expect((await info('audit')).skipped).toMatchObject({ count: 1, lastReason: 'order cancelled' });
  });

  it('refuses without --confirm and with bad usage, changing nothing', async () => {
    const before = await info();
    const unconfirmed = await rheoCli('skip', 'orders', 'billing', '--id', ids.retry);
    expect(unconfirmed.code).toBe(2);
    expect(unconfirmed.err).toMatch(/confirm_required: skip settles the deliveries without running the handler/);
    const cancel = await rheoCli('cancel-delayed', 'orders', ids.reminder);
    expect(cancel.code).toBe(2);
    const both = await rheoCli(
      'reschedule',
      'orders',
      'billing',
      '--id',
      ids.retry,
      '--delay-ms',
      '5',
      '--at',
      '2026-01-02T00:00:00Z',
      '--confirm',
    );
    expect(both.code).toBe(2);
    expect(both.err).toMatch(/give exactly one of --at, --delay-ms/);
    const noIds = await rheoCli('skip', 'orders', 'billing', '--confirm');
    expect(noIds.code).toBe(2);
    const badTime = await rheoCli('reschedule', 'orders', 'billing', '--id', ids.retry, '--at', 'tomorrow', '--confirm');
    expect(badTime).toMatchObject({
      code: 1,
      err: 'error: invalid_argument: deliverAt must be an ISO 8601 time, e.g. 2025-01-31T12:00:00Z\n',
    });
    const plain = await rheoCli('cancel-delayed', 'orders', ids.retry, '--confirm');
    expect(plain.code).toBe(1);
    expect(plain.err).toMatch(/^error: invalid_argument: id "\S+" is not a delayed event/);
    expect(await info()).toEqual(before);
  });
});
