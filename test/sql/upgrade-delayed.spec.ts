// Schema version 2 -> 3 (delayed events, docs/adr/028-delayed-events.md) on both
// dialects. The version-2 tables are made by this release and taken back by
// version 4's and version 3's own `down` (version 3's drops exactly the two columns it adds):
// rows of events without a delay are written the same by both versions, so that
// is the data a version-2 release leaves. Opened with install 'none' it is
// refused; with 'auto' it is upgraded in place, every old answer stays the same,
// the old lease settles, the old retry comes back, and delayed events work.
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

const T0 = Date.UTC(2026, 5, 1);
const up = schemaUpgrade(2, 'delayed');

/** The delay columns present now, sorted. */
async function delayColumns(d: UpgradeDialect): Promise<string[]> {
  const rows =
    d.name === 'postgres'
      ? await d.sql(
          `SELECT column_name AS c FROM information_schema.columns
           WHERE table_schema = $1 AND column_name IN ('deliver_at', 'delayed_to') ORDER BY column_name`,
          [d.schema],
        )
      : await d.sql(
          `SELECT name AS c FROM pragma_table_info('rheo_events') WHERE name = 'deliver_at'
           UNION ALL SELECT name FROM pragma_table_info('rheo_partitions') WHERE name = 'delayed_to' ORDER BY 1`,
        );
  return rows.map((r) => String(r.c));
}

describe.each(up.dialects)('$name: upgrade from schema version 2 to 3 (delayed events)', (d) => {
  const clock = new ManualClock(T0);
  let rheo: Rheo;
  const before: Record<string, unknown> = {};
  let liveLease: Lease;

  afterAll(async () => {
    await rheo?.close();
  });

  it('version 3 is exactly the two delay columns: its down leaves the version-2 tables with the data', async () => {
    const writer = new Rheo(d.open(clock, 'auto'));
    await writeOrders(writer);
    const states = await settleInEveryState(writer);
    liveLease = states.liveLease;
    before.events = [...(await writer.read('orders', { partition: 0 })), ...(await writer.read('orders', { partition: 1 }))];
    before.billing = states.billingLag;
    before.audit = states.auditLag;
    before.dead = states.dead;
    await writer.close();

    expect(await delayColumns(d)).toEqual(['delayed_to', 'deliver_at']);
    await downToFrom(up, d);
    expect(await delayColumns(d)).toEqual([]);
  });

  it("install 'none' refuses the version-2 tables, naming both versions, and changes nothing", async () => {
    await expectRefusedWithoutInstall(up, d, clock);
    expect(await delayColumns(d)).toEqual([]);
  });

  it("install 'auto' applies versions 3 and 4 alone, and every old answer stays the same", async () => {
    const backend = d.open(clock, 'auto');
    rheo = new Rheo(backend);
    await expectUpgraded(up, d, backend, rheo);
    expect(await delayColumns(d)).toEqual(['delayed_to', 'deliver_at']);
    const events = [...(await rheo.read('orders', { partition: 0 })), ...(await rheo.read('orders', { partition: 1 }))];
    expect(events).toEqual(before.events);
    expect(events.some((e) => 'deliverAt' in e)).toBe(false);
    expect(await rheo.lag('orders', 'billing')).toEqual(before.billing);
    expect(await rheo.lag('orders', 'audit')).toEqual(before.audit);
    expect(await rheo.deadLetters('orders', 'billing')).toEqual(before.dead);
  });

  it('the old lease settles by its lease id, and the old retry comes back when due with its next attempt', async () => {
    await rheo.ack(liveLease);
    const fetchBilling = () => rheo.fetch('orders', 'billing', { limit: 10, leaseMs: 10_000 });
    // o-4 and o-5 were never offered; o-1 waits out its minute.
    const fresh = await fetchBilling();
    expect(fresh.map((l) => [l.event.id, l.attempt])).toEqual([
      ['o-4', 1],
      ['o-5', 1],
    ]);
    for (const l of fresh) await rheo.ack(l);
    clock.advance(60_000);
    const [retry] = await fetchBilling();
    expect([retry.event.id, retry.attempt]).toEqual(['o-1', 2]);
    await rheo.ack(retry);
    // Every event acked or dead-lettered (o-2).
    expect((await rheo.lag('orders', 'billing')).lag).toBe(0);
  });

  it('delayed events work on the upgraded tables, unordered and ordered', async () => {
    await rheo.append('orders', { id: 'late', partition: 0, payload: 'late', delayMs: 5000 });
    await rheo.append('orders', { id: 'after', partition: 0, payload: 'after' });
    const billing = () => rheo.fetch('orders', 'billing', { limit: 10, leaseMs: 10_000 });
    expect((await billing()).map((l) => l.event.id)).toEqual(['after']);
    // audit (ordering 'partition') gets every old event, each partition in order, then partition 0 waits for 'late'.
    const audit = async () => {
      const ids: string[] = [];
      for (;;) {
        const got = await rheo.fetch('orders', 'audit', { limit: 10 });
        if (got.length === 0) return ids;
        for (const l of got) {
          ids.push(l.event.id);
          await rheo.ack(l);
        }
      }
    };
    const old = await audit();
    expect(old.filter((id) => Number(id.slice(2)) % 2 === 0)).toEqual(['o-0', 'o-2', 'o-4']);
    expect(old.filter((id) => Number(id.slice(2)) % 2 === 1)).toEqual(['o-1', 'o-3', 'o-5']);
    clock.advance(5000);
    expect((await billing()).map((l) => [l.event.id, l.attempt, l.event.deliverAt?.getTime()])).toEqual([['late', 1, clock.now()]]);
    expect(await audit()).toEqual(['late', 'after']);
  });
});
