// Flow control's rows on PostgreSQL (docs/adr/049-flow-control.md): what the key
// columns and the release rows hold after the paths the conformance cases do not
// look inside. A group without limits writes none of them; a forced trim of a key's
// open delivery hands the place on; deleteGroup leaves no release row behind.
import { DataSource } from 'typeorm';
import { ManualClock, postgresBackend, Rheo } from '../../lib';
import type { Lease } from '../../lib';
import { heldOf } from '../../lib/core/fetched';
import { dropSchema, freshSchema, pgDataSource, PG_URL } from './pg-helpers';

const schema = freshSchema('flow_rows');

describe('PostgreSQL flow control rows', () => {
  let rheo: Rheo;
  let admin: DataSource;
  const clock = new ManualClock(Date.now());
  const names = (leases: Lease[]) => leases.map((l) => (l.event.payload as { name: string }).name);
  const releases = async (stream: string) =>
    Number((await admin.query(`SELECT count(*) AS n FROM "${schema}".rheo_key_releases WHERE stream = $1`, [stream]))[0].n);

  beforeAll(async () => {
    rheo = new Rheo(postgresBackend({ url: PG_URL, schema, clock }));
    await rheo.init();
    admin = await pgDataSource(1);
  });

  afterAll(async () => {
    await admin.destroy();
    await rheo.close();
    await dropSchema(schema);
  });

  it('a group without flow limits leaves both key columns null and writes no release row', async () => {
    await rheo.createStream('plain');
    await rheo.createGroup('plain', 'g');
    await rheo.appendBatch('plain', [
      { key: 'a', payload: { name: 'a1' } },
      { key: 'a', payload: { name: 'a2' } },
    ]);
    const leases = await rheo.fetch('plain', 'g', { limit: 10 });
    expect(names(leases)).toEqual(['a1', 'a2']);
    const [row] = await admin.query(
      `SELECT count(*) FILTER (WHERE key IS NOT NULL OR waiting_key IS NOT NULL) AS keyed FROM "${schema}".rheo_deliveries WHERE stream = 'plain'`,
    );
    expect(Number(row.keyed)).toBe(0);
    await rheo.ack(leases[0]);
    await rheo.reject(leases[1], { reason: 'no' });
    expect(await releases('plain')).toBe(0);
  });

  it("a forced trim of a key's open delivery and waiting ones gives the place to the first one left", async () => {
    await rheo.createStream('trimmed', { retention: { maxEvents: 2 } });
    await rheo.createGroup('trimmed', 'g', { ordering: 'key' });
    await rheo.appendBatch(
      'trimmed',
      ['a1', 'a2', 'a3', 'a4'].map((name) => ({ key: 'a', payload: { name } })),
    );
    expect(names(await rheo.fetch('trimmed', 'g', { limit: 10 }))).toEqual(['a1']);
    expect((await rheo.groupInfo('trimmed', 'g')).waitingForKey).toBe(3);
    await rheo.trim('trimmed', { force: true });
    const next = await rheo.fetch('trimmed', 'g', { limit: 10 });
    expect(names(next)).toEqual(['a3']);
    expect((await rheo.groupInfo('trimmed', 'g')).waitingForKey).toBe(1);
    await rheo.ack(next[0]);
    expect(names(await rheo.fetch('trimmed', 'g', { limit: 10 }))).toEqual(['a4']);
  });

  it("groupConcurrency beside ordering 'partition': the ordered claim takes at most the room left", async () => {
    await rheo.createStream('ordered', { partitions: 3 });
    await rheo.createGroup('ordered', 'g', { ordering: 'partition', groupConcurrency: 2 });
    await rheo.appendBatch(
      'ordered',
      [0, 1, 2, 0, 1, 2].map((partition, i) => ({ partition, payload: { name: `e${i}` } })),
    );
    const first = await rheo.fetch('ordered', 'g', { limit: 10 });
    expect(first).toHaveLength(2);
    expect(new Set(first.map((l) => l.event.partition)).size).toBe(2);
    const none = await rheo.fetch('ordered', 'g', { limit: 10 });
    expect(none).toEqual([]);
    await rheo.ack(first[0]);
    const next = await rheo.fetch('ordered', 'g', { limit: 10 });
    expect(next).toHaveLength(1);
    expect(next[0].event.partition).not.toBe(first[1].event.partition);
  });

  it('a process that knew a group without limits claims by a groupConcurrency another process set in place', async () => {
    const other = postgresBackend({ url: PG_URL, schema, clock });
    const theirs = new Rheo(other);
    try {
      await rheo.createStream('changed');
      await rheo.createGroup('changed', 'g');
      await rheo.appendBatch(
        'changed',
        [1, 2, 3, 4].map((n) => ({ payload: { name: `e${n}` } })),
      );
      // The other process knows the group (without limits) and listens.
      expect(await theirs.lag('changed', 'g')).toMatchObject({ lag: 4 });
      await other.listen();
      const woken = other.wait({ stream: 'changed', group: 'g', timeoutMs: 60_000, signal: new AbortController().signal });
      await rheo.updateGroup('changed', 'g', { groupConcurrency: 1 });
      await woken;
      const got = await theirs.fetch('changed', 'g', { limit: 10 });
      expect(got).toHaveLength(1);
    } finally {
      await theirs.close();
    }
  });

  it('a process that knew a group without limits, and missed the notice of the change, claims by them all the same', async () => {
    // Not listening: the notice of the change never reaches it. The partition rows' flow gate does.
    const theirs = new Rheo(postgresBackend({ url: PG_URL, schema, clock }));
    try {
      await rheo.createStream('unheard');
      await rheo.createGroup('unheard', 'g');
      await rheo.appendBatch(
        'unheard',
        [1, 2, 3, 4, 5].map((n) => ({ payload: { name: `e${n}` } })),
      );
      expect(await theirs.fetch('unheard', 'g', { limit: 1 })).toHaveLength(1);
      await rheo.updateGroup('unheard', 'g', { groupConcurrency: 2 });
      const got = await theirs.fetch('unheard', 'g', { limit: 10 });
      expect(got).toHaveLength(1);
      expect(heldOf(got)?.limit).toBe('group_concurrency');
      expect((await theirs.groupInfo('unheard', 'g')).config.groupConcurrency).toBe(2);
      // Removed in place again: it claims the rest as a plain group.
      await rheo.updateGroup('unheard', 'g', { groupConcurrency: null });
      expect(await theirs.fetch('unheard', 'g', { limit: 10 })).toHaveLength(3);
    } finally {
      await theirs.close();
    }
  });

  it('deleteGroup removes the release rows its deliveries left', async () => {
    await rheo.createStream('gone');
    await rheo.createGroup('gone', 'g', { keyConcurrency: 2 });
    await rheo.appendBatch(
      'gone',
      ['a1', 'a2', 'a3', 'b1'].map((name) => ({ key: name[0], payload: { name } })),
    );
    const leases = await rheo.fetch('gone', 'g', { limit: 10 });
    expect(names(leases).sort()).toEqual(['a1', 'a2', 'b1']);
    await rheo.ack(leases[0]);
    expect(await releases('gone')).toBe(1);
    await rheo.deleteGroup('gone', 'g', { confirm: true });
    expect(await releases('gone')).toBe(0);
    expect(Number((await admin.query(`SELECT count(*) AS n FROM "${schema}".rheo_deliveries WHERE stream = 'gone'`))[0].n)).toBe(0);
  });
});
