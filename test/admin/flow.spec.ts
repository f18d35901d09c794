// RheoAdmin and a group's flow limits (docs/consumers.md#flow-control): the
// summaries carry them and what waits for a key, updateGroup changes them in
// place (a limit removed with null), each change is logged, and what cannot
// change in place is refused naming the field, changing nothing. On the backends
// of the list that enforce flow limits; one that does not refuses them by name.
import { ManualClock, Rheo, RheoAdmin, RheoError } from '../../lib';
import { CLOCKED_BACKENDS, removeTempFiles } from '../support/clocked-backends';

afterAll(() => removeTempFiles());

async function failure(p: Promise<unknown>): Promise<RheoError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(RheoError);
  return err as RheoError;
}

const enforces = (b: (typeof CLOCKED_BACKENDS)[number]) => {
  const probe = b.make(new ManualClock());
  void probe.close();
  return probe.capabilities.guarantees.flowControl;
};

describe.each(CLOCKED_BACKENDS.filter(enforces))('RheoAdmin and flow limits on $name', ({ make }) => {
  let rheo: Rheo;
  let admin: RheoAdmin;
  let lines: string[];

  beforeEach(async () => {
    rheo = new Rheo(make(new ManualClock()));
    lines = [];
    admin = new RheoAdmin(rheo, { actor: 'cli', log: (line) => lines.push(line) });
    await rheo.createStream('orders', { partitions: 1 });
  });

  afterEach(() => rheo.close());

  it('group and groups carry the limits and the events waiting for their key', async () => {
    await rheo.createGroup('orders', 'keyed', { keyConcurrency: 2, groupConcurrency: 10, rateLimit: { max: 100, perMs: 1000 } });
    await rheo.createGroup('orders', 'plain');
    await rheo.appendBatch(
      'orders',
      ['a', 'a', 'a', 'a', 'b'].map((key) => ({ key, payload: 1 })),
    );
    expect(await rheo.fetch('orders', 'keyed', { limit: 10 })).toHaveLength(3);
    const keyed = await admin.group('orders', 'keyed');
    expect(keyed).toMatchObject({
      ordering: 'none',
      keyConcurrency: 2,
      groupConcurrency: 10,
      rateLimit: { max: 100, perMs: 1000 },
      waitingForKey: 2,
      inflight: 3,
      lag: 5,
    });
    expect(
      (await admin.groups('orders')).map((g) => [g.group, g.keyConcurrency, g.groupConcurrency, g.rateLimit, g.waitingForKey]),
    ).toEqual([
      ['keyed', 2, 10, { max: 100, perMs: 1000 }, 2],
      ['plain', null, null, null, 0],
    ]);
    // JSON-ready: what the CLI's --json and the dashboard's API print.
    expect(JSON.parse(JSON.stringify(keyed))).toEqual(keyed);
  });

  it('updateGroup changes the limits in place, removes one with null, and logs each change', async () => {
    await rheo.createGroup('orders', 'keyed', { keyConcurrency: 2, groupConcurrency: 10 });
    const changed = await admin.updateGroup('orders', 'keyed', {
      keyConcurrency: 3,
      groupConcurrency: null,
      rateLimit: { max: 5, perMs: 60_000 },
      confirm: true,
    });
    expect(changed).toEqual({
      stream: 'orders',
      group: 'keyed',
      maxAttempts: 5,
      retry: { initialMs: 1000, factor: 2, maxMs: 60000 },
      ordering: 'none',
      keyConcurrency: 3,
      groupConcurrency: null,
      rateLimit: { max: 5, perMs: 60_000 },
    });
    expect((await rheo.groupInfo('orders', 'keyed')).config).toMatchObject({
      keyConcurrency: 3,
      groupConcurrency: null,
      rateLimit: { max: 5, perMs: 60_000 },
    });
    expect(lines).toEqual([
      'Changed the settings of orders/keyed: keyConcurrency 3, groupConcurrency none, rateLimit 5 per 60000 ms (by cli)',
    ]);
    await admin.updateGroup('orders', 'keyed', { rateLimit: null, groupConcurrency: 4, confirm: true });
    expect((await admin.group('orders', 'keyed')).rateLimit).toBeNull();
    expect(lines[1]).toBe('Changed the settings of orders/keyed: groupConcurrency 4, rateLimit none (by cli)');
  });

  it('refuses what cannot change in place, a bad limit and a missing confirm, naming the field and changing nothing', async () => {
    await rheo.createGroup('orders', 'plain', { groupConcurrency: 4 });
    const before = (await rheo.groupInfo('orders', 'plain')).config;
    const added = await failure(admin.updateGroup('orders', 'plain', { keyConcurrency: 2, confirm: true }));
    expect([added.code, added.field]).toEqual(['invalid_argument', 'keyConcurrency']);
    expect(added.message).toMatch(/cannot be added in place/);
    const zero = await failure(admin.updateGroup('orders', 'plain', { groupConcurrency: 0, confirm: true }));
    expect(zero.field).toBe('groupConcurrency');
    const rate = await failure(admin.updateGroup('orders', 'plain', { rateLimit: { max: 0, perMs: 1000 }, confirm: true }));
    expect(rate.field).toBe('rateLimit.max');
    const unconfirmed = await failure(admin.updateGroup('orders', 'plain', { groupConcurrency: 8, confirm: false }));
    expect([unconfirmed.code, unconfirmed.field]).toEqual(['confirm_required', 'confirm']);
    expect((await rheo.groupInfo('orders', 'plain')).config).toEqual(before);
    expect(lines).toEqual([]);
  });
});

// Once every backend of the list enforces flow limits, this block has no backend left to run on.
const WITHOUT = CLOCKED_BACKENDS.filter((b) => !enforces(b));
if (WITHOUT.length > 0)
  describe.each(WITHOUT)('RheoAdmin on $name, which does not enforce flow limits', ({ make }) => {
    it('refuses a limit by name at updateGroup, and reads none', async () => {
      const rheo = new Rheo(make(new ManualClock()));
      try {
        const admin = new RheoAdmin(rheo, { actor: 'cli' });
        await rheo.createStream('orders');
        await rheo.createGroup('orders', 'billing');
        const err = await failure(admin.updateGroup('orders', 'billing', { groupConcurrency: 2, confirm: true }));
        expect(err.field).toBe('groupConcurrency');
        expect(err.message).toMatch(/does not declare guarantees\.flowControl/);
        expect(await admin.group('orders', 'billing')).toMatchObject({
          keyConcurrency: null,
          groupConcurrency: null,
          rateLimit: null,
          waitingForKey: 0,
        });
      } finally {
        await rheo.close();
      }
    });
  });
