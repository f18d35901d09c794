// Schema version 3 -> 4 (pausing a group, docs/adr/046-pausing-a-group.md) on both
// dialects. The version-3 tables are made by this release and taken back by the
// `down` of every later version, newest first (version 4's drops exactly the five
// pause columns): nothing a group without a pause (or a skip) writes differs
// between the versions, so that is the data a version-3 release leaves. Opened with install 'none' it is refused; with
// 'auto' it is upgraded in place: the existing groups are not paused, their old
// lease settles and claims go on, and then a pause holds and a resume lifts it.
import { type Lease, ManualClock, Rheo } from '../../lib';
import { isPausedAnswer } from '../../lib/core/fetched';
import {
  downToFrom,
  expectRefusedWithoutInstall,
  expectUpgraded,
  schemaUpgrade,
  type UpgradeDialect,
  writeOrders,
} from '../support/schema-upgrade';

const T0 = Date.UTC(2026, 11, 1);
const up = schemaUpgrade(3, 'pause');
const PAUSE_COLUMNS = ['pause_reason', 'paused_at', 'paused_by', 'paused_to', 'paused_until'];

/** The pause columns present now, sorted. */
async function pauseColumns(d: UpgradeDialect): Promise<string[]> {
  const rows =
    d.name === 'postgres'
      ? await d.sql(
          `SELECT column_name AS c FROM information_schema.columns
           WHERE table_schema = $1 AND column_name LIKE 'pause%' ORDER BY column_name`,
          [d.schema],
        )
      : await d.sql(
          `SELECT name AS c FROM pragma_table_info('rheo_groups') WHERE name LIKE 'pause%'
           UNION ALL SELECT name FROM pragma_table_info('rheo_group_partitions') WHERE name LIKE 'pause%' ORDER BY 1`,
        );
  return rows.map((r) => String(r.c));
}

describe.each(up.dialects)('$name: upgrade from schema version 3 to 4 (pausing a group)', (d) => {
  const clock = new ManualClock(T0);
  let rheo: Rheo;
  const before: Record<string, unknown> = {};
  let liveLease: Lease;

  afterAll(async () => {
    await rheo?.close();
  });

  it('version 4 is exactly the five pause columns: its down leaves the version-3 tables with the data', async () => {
    const writer = new Rheo(d.open(clock, 'auto'));
    await writeOrders(writer);
    // billing: o-0 acked, o-1 held under a live lease; o-2..o-5 never offered.
    const leases = await writer.fetch('orders', 'billing', { limit: 2, leaseMs: 120_000 });
    const byId = new Map(leases.map((l) => [l.event.id, l]));
    await writer.ack(byId.get('o-0')!);
    liveLease = byId.get('o-1')!;
    before.billing = await writer.lag('orders', 'billing');
    before.audit = await writer.lag('orders', 'audit');
    await writer.close();

    expect(await pauseColumns(d)).toEqual(PAUSE_COLUMNS);
    await downToFrom(up, d);
    expect(await pauseColumns(d)).toEqual([]);
  });

  it("install 'none' refuses the version-3 tables, naming both versions, and changes nothing", async () => {
    await expectRefusedWithoutInstall(up, d, clock);
    expect(await pauseColumns(d)).toEqual([]);
  });

  it("install 'auto' applies version 4 and the later ones: the groups are not paused, and their answers stay the same", async () => {
    const backend = d.open(clock, 'auto');
    rheo = new Rheo(backend);
    await expectUpgraded(up, d, backend, rheo);
    expect(await pauseColumns(d)).toEqual(PAUSE_COLUMNS);
    for (const group of ['billing', 'audit']) expect((await rheo.groupInfo('orders', group)).paused).toBeNull();
    expect(await rheo.lag('orders', 'billing')).toEqual(before.billing);
    expect(await rheo.lag('orders', 'audit')).toEqual(before.audit);
  });

  it('claims go on: the old lease settles, the events never offered are claimed, in both groups', async () => {
    await rheo.ack(liveLease);
    const fresh = await rheo.fetch('orders', 'billing', { limit: 10 });
    expect(fresh.map((l) => l.event.id).sort()).toEqual(['o-2', 'o-3', 'o-4', 'o-5']);
    for (const l of fresh) await rheo.ack(l);
    const heads = await rheo.fetch('orders', 'audit', { limit: 10 });
    expect(heads.map((l) => l.event.id).sort()).toEqual(['o-0', 'o-1']);
    for (const l of heads) await rheo.ack(l);
  });

  it('a pause then holds both groups on the upgraded tables, and a resume lifts it', async () => {
    await rheo.append('orders', { id: 'new', partition: 0, payload: 'new' });
    for (const group of ['billing', 'audit']) {
      const pause = await rheo.pauseGroup('orders', group, { reason: 'upgrade check', by: 'ops' });
      expect((await rheo.groupInfo('orders', group)).paused).toEqual(pause);
      const answer = await rheo.fetch('orders', group, { limit: 10 });
      expect(answer).toEqual([]);
      expect(isPausedAnswer(answer)).toBe(true);
      expect(await rheo.resumeGroup('orders', group)).toBe(true);
      expect((await rheo.groupInfo('orders', group)).paused).toBeNull();
    }
    expect((await rheo.fetch('orders', 'billing', { limit: 10 })).map((l) => l.event.id)).toEqual(['new']);
    // audit orders by partition: each partition's next head.
    expect((await rheo.fetch('orders', 'audit', { limit: 10 })).map((l) => l.event.id).sort()).toEqual(['o-2', 'o-3']);
  });
});
