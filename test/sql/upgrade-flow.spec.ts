// Schema version 5 -> 6 (flow control, docs/adr/049-flow-control.md) on both
// dialects, with a group's deliveries in every state: acked, leased (a live lease),
// waiting for a retry, dead-lettered, never offered, and a delayed event not yet
// due. The version-5 tables are made by this release and taken back by the `down`
// of every later version, newest first: a group without flow limits writes nothing
// version 6 adds, so that is the data a version-5 release leaves. Opened with
// install 'none' it is refused; with 'auto' it is upgraded in place: every delivery
// goes on from its state, nothing is lost or offered twice, and the upgraded group
// then takes flow limits in place and is held to them.
import { type Lease, ManualClock, Rheo } from '../../lib';
import {
  downToFrom,
  expectRefusedWithoutInstall,
  expectUpgraded,
  schemaUpgrade,
  settleInEveryState,
  type UpgradeDialect,
  writeOrders,
} from '../support/schema-upgrade';

const T0 = Date.UTC(2026, 11, 3);
const up = schemaUpgrade(5, 'flow');
const FLOW_COLUMNS = ['group_concurrency', 'key_concurrency', 'rate_max'];

/** The flow columns of rheo_groups present now, sorted. */
async function flowColumns(d: UpgradeDialect): Promise<string[]> {
  const rows =
    d.name === 'postgres'
      ? await d.sql(
          `SELECT column_name AS c FROM information_schema.columns
           WHERE table_schema = $1 AND table_name = 'rheo_groups' AND column_name = ANY($2) ORDER BY column_name`,
          [d.schema, FLOW_COLUMNS],
        )
      : await d.sql(
          `SELECT name AS c FROM pragma_table_info('rheo_groups') WHERE name IN (${FLOW_COLUMNS.map((c) => `'${c}'`).join(', ')}) ORDER BY 1`,
        );
  return rows.map((r) => String(r.c));
}

const ids = (leases: Lease[]) => leases.map((l) => l.event.id).sort();

describe.each(up.dialects)('$name: upgrade from schema version 5 to 6 (flow control)', (d) => {
  const clock = new ManualClock(T0);
  let rheo: Rheo;
  const before: Record<string, unknown> = {};
  let liveLease: Lease;

  afterAll(async () => {
    await rheo?.close();
  });

  it('version 6 is the flow columns and tables: its down leaves the version-5 tables with the data', async () => {
    const writer = new Rheo(d.open(clock, 'auto'));
    await writeOrders(writer);
    await writer.append('orders', { id: 'late', partition: 0, payload: 'late', delayMs: 30_000 });
    // billing: o-0 acked, o-1 waiting a minute for its retry, o-2 dead-lettered, o-3 held under a live lease;
    // o-4 and o-5 never offered; 'late' not due for 30 s.
    const states = await settleInEveryState(writer);
    liveLease = states.liveLease;
    before.billing = states.billingLag;
    before.audit = states.auditLag;
    before.dead = states.dead.map((x) => [x.eventId, x.reason, x.attempt]);
    await writer.close();

    expect(await flowColumns(d)).toEqual(FLOW_COLUMNS);
    await downToFrom(up, d);
    expect(await flowColumns(d)).toEqual([]);
  });

  it("install 'none' refuses the version-5 tables, naming both versions, and changes nothing", async () => {
    await expectRefusedWithoutInstall(up, d, clock);
    expect(await flowColumns(d)).toEqual([]);
  });

  it("install 'auto' applies version 6: the groups have no flow limits, and their answers stay the same", async () => {
    const backend = d.open(clock, 'auto');
    rheo = new Rheo(backend);
    await expectUpgraded(up, d, backend, rheo);
    expect(await flowColumns(d)).toEqual(FLOW_COLUMNS);
    const billing = await rheo.groupInfo('orders', 'billing');
    expect(billing.config).toMatchObject({ ordering: 'none', keyConcurrency: null, groupConcurrency: null, rateLimit: null });
    expect(billing.waitingForKey).toBe(0);
    expect(await rheo.lag('orders', 'billing')).toEqual(before.billing);
    expect(await rheo.lag('orders', 'audit')).toEqual(before.audit);
    expect((await rheo.deadLetters('orders', 'billing')).map((x) => [x.eventId, x.reason, x.attempt])).toEqual(before.dead);
  });

  it('every delivery goes on from its state: nothing lost, nothing offered twice', async () => {
    // The live lease settles; only the never-offered events are claimable now.
    await rheo.ack(liveLease);
    const fresh = await rheo.fetch('orders', 'billing', { limit: 10 });
    expect(ids(fresh)).toEqual(['o-4', 'o-5']);
    for (const l of fresh) await rheo.ack(l);
    expect(await rheo.fetch('orders', 'billing', { limit: 10 })).toEqual([]);
    // The delayed event at its time, the retry at its own, on its second attempt.
    clock.advance(30_000);
    const late = await rheo.fetch('orders', 'billing', { limit: 10 });
    expect(ids(late)).toEqual(['late']);
    await rheo.ack(late[0]);
    clock.advance(30_000);
    const retried = await rheo.fetch('orders', 'billing', { limit: 10 });
    expect(retried.map((l) => [l.event.id, l.attempt])).toEqual([['o-1', 2]]);
    await rheo.ack(retried[0]);
    // The dead letter redrives and is handled once.
    expect(await rheo.redrive('orders', 'billing', { all: true })).toBe(1);
    const redriven = await rheo.fetch('orders', 'billing', { limit: 10 });
    expect(ids(redriven)).toEqual(['o-2']);
    await rheo.ack(redriven[0]);
    expect(await rheo.fetch('orders', 'billing', { limit: 10 })).toEqual([]);
    expect((await rheo.groupInfo('orders', 'billing')).inflight).toBe(0);
  });

  it('the upgraded group takes a groupConcurrency in place and is held to it; a new keyed group keeps key order', async () => {
    await rheo.updateGroup('orders', 'billing', { groupConcurrency: 1 });
    await rheo.appendBatch('orders', [
      { id: 'n-0', partition: 0, key: 'a', payload: 0 },
      { id: 'n-1', partition: 1, key: 'b', payload: 1 },
    ]);
    const one = await rheo.fetch('orders', 'billing', { limit: 10 });
    expect(one).toHaveLength(1);
    expect(await rheo.fetch('orders', 'billing', { limit: 10 })).toEqual([]);
    await rheo.ack(one[0]);
    const other = await rheo.fetch('orders', 'billing', { limit: 10 });
    expect(ids([...one, ...other])).toEqual(['n-0', 'n-1']);
    await rheo.ack(other[0]);

    await rheo.createGroup('orders', 'keyed', { ordering: 'key', start: 'end' });
    await rheo.appendBatch('orders', [
      { id: 'k-1', partition: 0, key: 'k', payload: 1 },
      { id: 'k-2', partition: 0, key: 'k', payload: 2 },
    ]);
    const first = await rheo.fetch('orders', 'keyed', { limit: 10 });
    expect(ids(first)).toEqual(['k-1']);
    await rheo.ack(first[0]);
    expect(ids(await rheo.fetch('orders', 'keyed', { limit: 10 }))).toEqual(['k-2']);
  });
});
