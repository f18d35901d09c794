// `rheo pause` and `rheo resume`, run in this process (lib/cli/run.ts) against a
// SQLite file: the pause is stored with its until, reason and by, `info` and
// `groups` show it, no claim leases anything while it holds, and what the commands
// refuse changes nothing (exit code 2 for usage and a missing --confirm, 1 for a
// refusal of the facade's or the store's).
import { type GroupPause, Rheo, sqliteBackend } from '../../lib';
import { sqliteCli } from './support';

const MINUTE = 60_000;

describe('rheo pause / resume', () => {
  const sqlite = sqliteCli('pause');
  const { rheoCli } = sqlite;

  beforeEach(async () => {
    const rheo = new Rheo(sqliteBackend({ database: sqlite.file }));
    await rheo.createStream('orders');
    await rheo.createGroup('orders', 'billing');
    await rheo.append('orders', { payload: { n: 1 } });
    await rheo.close();
  });

  /** The stored pause, and what a claim of the group leases now. */
  async function stored(): Promise<{ paused: GroupPause | null; claimed: number }> {
    const rheo = new Rheo(sqliteBackend({ database: sqlite.file }));
    try {
      const { paused } = await rheo.groupInfo('orders', 'billing');
      const leases = await rheo.fetch('orders', 'billing', { leaseMs: 60_000 });
      // Given back at once, so the next look sees the event claimable again.
      for (const lease of leases) await rheo.nack(lease, { delayMs: 0, reason: 'looked at' });
      return { paused, claimed: leases.length };
    } finally {
      await rheo.close();
    }
  }

  it('pauses with an ISO --until, a reason and who; info and groups show it; no claim leases anything', async () => {
    const until = new Date(Date.now() + 60 * MINUTE).toISOString();
    const before = Date.now();
    const paused = await rheoCli('pause', 'orders', 'billing', '--until', until, '--reason', 'card API down', '--by', 'ana', '--confirm');
    const after = Date.now();
    expect(paused.code).toBe(0);
    expect(paused.err).toBe('');
    expect(paused.out).toMatch(
      new RegExp(
        '^Paused orders/billing: no process claims its events until it resumes\\.\\n' +
          'paused since  \\S+\\n' +
          `paused until  ${until.replace(/\./g, '\\.')}\\n` +
          'paused by     ana\\n' +
          'pause reason  card API down\\n$',
      ),
    );
    const s = await stored();
    expect(s).toEqual({ paused: { pausedAt: expect.any(Date), until: new Date(until), reason: 'card API down', by: 'ana' }, claimed: 0 });
    expect(s.paused!.pausedAt.getTime()).toBeGreaterThanOrEqual(before);
    expect(s.paused!.pausedAt.getTime()).toBeLessThanOrEqual(after);

    const info = await rheoCli('info', 'orders', 'billing');
    expect(info.code).toBe(0);
    expect(info.out).toContain(
      `paused            yes\npaused since      ${s.paused!.pausedAt.toISOString()}\npaused until      ${until}\n` +
        'paused by         ana\npause reason      card API down\n',
    );
    const groups = await rheoCli('groups', 'orders');
    expect(groups.out).toMatch(new RegExp(`^billing +1 +0 +0 +\\S+ +5 +none +none +0 +until ${until.replace(/\./g, '\\.')}$`, 'm'));
    const asJson = await rheoCli('--json', 'info', 'orders', 'billing');
    expect(JSON.parse(asJson.out).paused).toEqual({
      pausedAt: s.paused!.pausedAt.toISOString(),
      until,
      reason: 'card API down',
      by: 'ana',
    });
  });

  it('takes a duration for --until, counted from now; without --until it holds until resumed', async () => {
    const before = Date.now();
    const timed = await rheoCli('--json', 'pause', 'orders', 'billing', '--until', '30m', '--confirm');
    const after = Date.now();
    expect(timed.code).toBe(0);
    const printed = JSON.parse(timed.out) as { pausedAt: string; until: string; reason: null; by: null };
    expect(printed).toMatchObject({ reason: null, by: null });
    expect(Date.parse(printed.until)).toBeGreaterThanOrEqual(before + 30 * MINUTE);
    expect(Date.parse(printed.until)).toBeLessThanOrEqual(after + 30 * MINUTE);
    expect((await stored()).paused?.until?.toISOString()).toBe(printed.until);

    // Pausing a paused group replaces its pause.
    const open = await rheoCli('pause', 'orders', 'billing', '--confirm');
    expect(open.code).toBe(0);
    expect(open.out).toMatch(/^paused until {2}resumed$/m);
    expect(open.out).toMatch(/^paused by {5}-$/m);
    expect(await stored()).toEqual({ paused: { pausedAt: expect.any(Date), until: null, reason: null, by: null }, claimed: 0 });
    expect((await rheoCli('groups', 'orders')).out).toMatch(/^billing +1 +0 +0 +\S+ +5 +none +none +0 +yes$/m);
  });

  it('resumes at once: the next claim leases again; a second resume says it was not paused', async () => {
    await rheoCli('pause', 'orders', 'billing', '--reason', 'maintenance', '--confirm');
    const resumed = await rheoCli('resume', 'orders', 'billing', '--confirm');
    expect(resumed).toEqual({ code: 0, out: 'Resumed orders/billing.\n', err: '' });
    expect(await stored()).toEqual({ paused: null, claimed: 1 });
    expect(await rheoCli('resume', 'orders', 'billing', '--confirm')).toEqual({
      code: 0,
      out: 'orders/billing was not paused; nothing changed.\n',
      err: '',
    });
    expect(JSON.parse((await rheoCli('--json', 'resume', 'orders', 'billing', '--confirm')).out)).toEqual({ resumed: false });
    expect((await rheoCli('info', 'orders', 'billing')).out).toMatch(/^paused +no$/m);
  });

  it('refuses without --confirm, a bad --until, a reason too long and an unknown group, changing nothing', async () => {
    const unconfirmed = await rheoCli('pause', 'orders', 'billing', '--reason', 'x');
    expect(unconfirmed.code).toBe(2);
    expect(unconfirmed.err).toMatch(/confirm_required: pauseGroup stops every process claiming the events of the group/);
    expect(unconfirmed.err).toContain('Run it again with --confirm');
    const word = await rheoCli('pause', 'orders', 'billing', '--until', 'soon', '--confirm');
    expect(word).toMatchObject({
      code: 1,
      err: 'error: invalid_argument: until must be an ISO 8601 time (2025-01-31T12:00:00Z) or a duration such as 90s, 30m, 2h or 1d\n',
    });
    const past = await rheoCli('pause', 'orders', 'billing', '--until', '2020-01-01T00:00:00Z', '--confirm');
    expect(past).toMatchObject({ code: 1, err: expect.stringMatching(/^error: invalid_argument: until must be after now/) });
    const far = await rheoCli('pause', 'orders', 'billing', '--until', '400d', '--confirm');
    expect(far).toMatchObject({ code: 1, err: expect.stringMatching(/^error: invalid_argument: until must be at most \d+ ms after now/) });
    const long = await rheoCli('pause', 'orders', 'billing', '--reason', 'x'.repeat(1001), '--confirm');
    expect(long).toMatchObject({ code: 1, err: 'error: invalid_argument: reason must be at most 1000 characters (it has 1001)\n' });
    const missing = await rheoCli('pause', 'orders', 'shipping', '--confirm');
    expect(missing).toMatchObject({ code: 1, err: 'error: group_not_found: group "shipping" does not exist on stream "orders"\n' });
    expect(await stored()).toEqual({ paused: null, claimed: 1 });

    await rheoCli('pause', 'orders', 'billing', '--confirm');
    const keep = await rheoCli('resume', 'orders', 'billing');
    expect(keep.code).toBe(2);
    expect(keep.err).toMatch(/confirm_required: resumeGroup lets every process claim the events of the group again/);
    expect((await stored()).paused).not.toBeNull();
  });
});
