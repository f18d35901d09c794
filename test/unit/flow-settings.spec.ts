// Flow control settings (docs/consumers.md#flow-control) through the Nest consumer's
// options, the declared group at startup and the broadcast membership: what is
// taken, what is refused and how each refusal names its field.
import { Rheo, RheoError } from '../../lib';
import { MemoryBackend } from '../../lib/backends/memory/memory-backend';
import { resolveConsumer, type RheoConsumerOptions } from '../../lib/nest/consumer-options';
import { declaredGroup } from '../../lib/nest/declared-group';
import { BroadcastMember } from '../../lib/runtime/broadcast';

const IDENTITY = { stream: 'orders', group: 'billing' };
const HANDLER = 'Billing.bill';

function thrown(fn: () => unknown): RheoError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(RheoError);
    return err as RheoError;
  }
  throw new Error('expected a RheoError');
}

describe('flow settings on a Nest consumer', () => {
  it("takes ordering 'key' and the limits, and the group is created with them", async () => {
    const resolved = resolveConsumer(
      HANDLER,
      { ...IDENTITY, groupConcurrency: 8, rateLimit: { max: 5, perMs: 1000 }, keyConcurrency: 2 } as RheoConsumerOptions,
      {},
    );
    expect(resolved.group).toEqual({ ifNotExists: true, keyConcurrency: 2, groupConcurrency: 8, rateLimit: { max: 5, perMs: 1000 } });
    const rheo = new Rheo(new MemoryBackend());
    await rheo.createStream('orders');
    const config = await rheo.createGroup('orders', 'billing', resolved.group);
    expect(config).toMatchObject({ ordering: 'none', keyConcurrency: 2, groupConcurrency: 8, rateLimit: { max: 5, perMs: 1000 } });
    const keyed = resolveConsumer(HANDLER, { ...IDENTITY, group: 'keyed', ordering: 'key' }, {});
    expect((await rheo.createGroup('orders', 'keyed', keyed.group)).ordering).toBe('key');
    await rheo.close();
  });

  it('refuses a key limit beside an ordering before anything is created, blaming where each came from', () => {
    const own = thrown(() => resolveConsumer(HANDLER, { ...IDENTITY, ordering: 'key', keyConcurrency: 2 }, {}));
    expect(own.field).toBe('keyConcurrency');
    expect(own.message).toBe(`${HANDLER}: keyConcurrency cannot be set with ordering 'key', which already runs one delivery at a time`);
    const configured = thrown(() =>
      resolveConsumer(HANDLER, { ...IDENTITY, ordering: 'partition' }, { consumers: { 'orders/billing': { keyConcurrency: 3 } } }),
    );
    expect(configured.field).toBe('consumers["orders/billing"].keyConcurrency');
  });

  it('refuses a bad limit naming its field, whichever option it came from', () => {
    expect(thrown(() => resolveConsumer(HANDLER, { ...IDENTITY, groupConcurrency: 0 }, {})).field).toBe('groupConcurrency');
    expect(thrown(() => resolveConsumer(HANDLER, IDENTITY, { defaults: { keyConcurrency: 10_001 } })).field).toBe(
      'defaults.keyConcurrency',
    );
    const rate = thrown(() => resolveConsumer(HANDLER, { ...IDENTITY, rateLimit: { max: 5 } as never }, {}));
    expect([rate.field, rate.message]).toEqual(['rateLimit.perMs', `${HANDLER}: rateLimit.perMs is required`]);
    const typo = thrown(() => resolveConsumer(HANDLER, { ...IDENTITY, rateLimit: { max: 5, perMs: 10, burst: 2 } as never }, {}));
    expect(typo.field).toBe('rateLimit.burst');
    expect(typo.message).toMatch(/\(use max, perMs\)$/);
    const ordering = thrown(() => resolveConsumer(HANDLER, { ...IDENTITY, ordering: 'keys' as never }, {}));
    expect(ordering.message).toBe(`${HANDLER}: ordering must be 'none', 'partition' or 'key'`);
  });

  it("a broadcast consumer takes ordering 'key' and keyConcurrency; group-wide limits are refused, or ignored from the defaults", () => {
    const keyed = resolveConsumer(HANDLER, { ...IDENTITY, broadcast: true, ordering: 'key' }, {});
    expect(keyed.group.ordering).toBe('key');
    expect(resolveConsumer(HANDLER, { ...IDENTITY, broadcast: true, keyConcurrency: 2 }, {}).group.keyConcurrency).toBe(2);
    for (const [k, v] of [
      ['groupConcurrency', 4],
      ['rateLimit', { max: 1, perMs: 1000 }],
    ] as const) {
      const own = thrown(() => resolveConsumer(HANDLER, { ...IDENTITY, broadcast: true, [k]: v }, {}));
      expect(own.field).toBe(k);
      expect(own.message).toMatch(
        new RegExp(`^${HANDLER}: ${k} cannot be set on a broadcast consumer: each instance consumes a group of its own`),
      );
      const configured = thrown(() =>
        resolveConsumer(HANDLER, { ...IDENTITY, broadcast: true }, { consumers: { 'orders/billing': { [k]: v } } }),
      );
      expect(configured.field).toBe(`consumers["orders/billing"].${k}`);
      const fromDefaults = resolveConsumer(HANDLER, { ...IDENTITY, broadcast: true }, { defaults: { [k]: v } });
      expect(fromDefaults.group[k]).toBeUndefined();
      // An ordinary consumer takes the same defaults.
      expect(resolveConsumer(HANDLER, IDENTITY, { defaults: { [k]: v } }).group[k]).toEqual(v);
    }
  });

  it('a BroadcastMember creates its group with the key settings and refuses group-wide limits naming them', async () => {
    const rheo = new Rheo(new MemoryBackend());
    await rheo.createStream('s');
    const member = new BroadcastMember(rheo, { stream: 's', group: 'cache', manual: true, keyConcurrency: 3 });
    await member.join();
    expect((await rheo.groupInfo('s', member.group)).config.keyConcurrency).toBe(3);
    await member.leave();
    for (const k of ['groupConcurrency', 'rateLimit']) {
      const err = thrown(() => new BroadcastMember(rheo, { stream: 's', group: 'cache', [k]: 1 } as never));
      expect(err.field).toBe(k);
      expect(err.message).toMatch(/cannot be set on a broadcast group: each instance consumes a group of its own/);
    }
    await rheo.close();
  });
});

describe('a declared group whose stored flow settings differ', () => {
  async function setup() {
    const rheo = new Rheo(new MemoryBackend());
    await rheo.createStream('orders');
    await rheo.createGroup('orders', 'billing', { groupConcurrency: 4, rateLimit: { max: 10, perMs: 1000 } });
    await rheo.createGroup('orders', 'keyed', { keyConcurrency: 2 });
    const warn: string[] = [];
    const log: string[] = [];
    return { rheo, lines: { warn: (m: string) => warn.push(m), log: (m: string) => log.push(m) }, warn, log };
  }
  const c = (group: string, declared: object) => ({
    handlerName: HANDLER,
    key: `orders/${group}`,
    stream: 'orders',
    group,
    declared: { ifNotExists: true, ...declared },
  });

  it("'create' warns naming the stored values and leaves the group as it is", async () => {
    const { rheo, lines, warn } = await setup();
    const declared = { groupConcurrency: 2, rateLimit: { max: 10, perMs: 500 }, keyConcurrency: 3 };
    const config = await declaredGroup(rheo, lines, 'create', c('billing', declared));
    expect(warn).toEqual([
      `${HANDLER}: group orders/billing already exists with keyConcurrency none, groupConcurrency 4, rateLimit 10/1000ms; these options ` +
        "apply only when a group is created (set groupSettings: 'apply' on RheoModule.forRoot to bring the stored group in line at startup)",
    ]);
    expect(config).toMatchObject({ keyConcurrency: null, groupConcurrency: 4, rateLimit: { max: 10, perMs: 1000 } });
    // The same settings declared: nothing to say.
    warn.length = 0;
    await declaredGroup(rheo, lines, 'create', c('billing', { groupConcurrency: 4, rateLimit: { max: 10, perMs: 1000 } }));
    expect(warn).toEqual([]);
    await rheo.close();
  });

  it("'apply' changes group and rate limits and a key limit's number in place; a key limit added only warns", async () => {
    const { rheo, lines, warn, log } = await setup();
    const applied = await declaredGroup(
      rheo,
      lines,
      'apply',
      c('billing', { groupConcurrency: 2, rateLimit: { max: 3, perMs: 500 }, keyConcurrency: 3 }),
    );
    expect(log).toEqual([
      `${HANDLER}: group orders/billing: groupConcurrency 4 -> 2 (groupSettings: 'apply')`,
      `${HANDLER}: group orders/billing: rateLimit 10/1000ms -> 3/500ms (groupSettings: 'apply')`,
    ]);
    expect(warn).toEqual([
      `${HANDLER}: group orders/billing already exists with keyConcurrency none; keyConcurrency cannot be added in place ` +
        '(deliveries already open were not counted by key): reset or recreate the group to change it',
    ]);
    expect(applied).toMatchObject({ keyConcurrency: null, groupConcurrency: 2, rateLimit: { max: 3, perMs: 500 } });
    expect((await rheo.groupInfo('orders', 'billing')).config).toMatchObject({ groupConcurrency: 2, rateLimit: { max: 3, perMs: 500 } });
    log.length = 0;
    const keyed = await declaredGroup(rheo, lines, 'apply', c('keyed', { keyConcurrency: 5 }));
    expect(log).toEqual([`${HANDLER}: group orders/keyed: keyConcurrency 2 -> 5 (groupSettings: 'apply')`]);
    expect(keyed.keyConcurrency).toBe(5);
    await rheo.close();
  });
});
