// A database the first release made (schema version 1, versions not yet
// recorded) opened by this one: install 'auto' upgrades it in place, the old
// data reads and settles as before, the whole conformance suite passes on the
// upgraded file, and the old data is still there afterwards.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { type Lease, ManualClock, Rheo, sqliteBackend } from '../../lib';
import { runConformance } from '../../lib/backend';
import { sqliteTables } from '../../lib/backends/sql/names';
import { SQLITE_SCHEMA } from '../../lib/backends/sqlite/schema';
import { buildSqliteV1, EVENTS, LEASE, STREAM, T, V1_DDL } from './fixtures/sqlite-v1';

const dir = mkdtempSync(join(tmpdir(), 'rheo-sqlite-upgrade-'));
const file = join(dir, 'v1.db');
buildSqliteV1(file);
const notADirectory = join(dir, 'not-a-directory');
writeFileSync(notADirectory, '');

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Open the file with the current backend on a manual clock. */
function open(now: number, install: 'auto' | 'none' = 'auto'): { rheo: Rheo; clock: ManualClock } {
  const clock = new ManualClock(now);
  return { rheo: new Rheo(sqliteBackend({ database: file, clock, install })), clock };
}

async function rawQuery<T>(sql: string): Promise<T[]> {
  const ds = new DataSource({ type: 'better-sqlite3', database: file });
  await ds.initialize();
  try {
    return (await ds.query(sql)) as T[];
  } finally {
    await ds.destroy();
  }
}

const squash = (sql: string) => sql.replace(/\s+/g, ' ').trim();

/** The fixture's events as read back, in each partition's order. */
async function expectEvents(rheo: Rheo): Promise<void> {
  for (const p of [0, 1]) {
    const read = await rheo.read(STREAM, { partition: p, limit: 100 });
    const want = EVENTS.filter((e) => e.partition === p);
    expect(read).toEqual(
      want.map((e) => ({
        id: e.id,
        stream: STREAM,
        partition: p,
        sequence: e.sequence,
        timestamp: new Date(e.ts),
        key: e.key,
        type: e.type,
        metadata: e.metadata,
        payload: e.payload,
      })),
    );
  }
}

async function lags(rheo: Rheo, group: string): Promise<Array<[number, number, number]>> {
  return (await rheo.lag(STREAM, group)).partitions.map((p) => [p.partition, p.frontier, p.highWatermark]);
}

async function expectDeadLetters(rheo: Rheo): Promise<void> {
  const dead = await rheo.deadLetters(STREAM, 'billing');
  expect(dead.map((d) => [d.eventId, d.partition, d.sequence, d.reason, d.attempt, d.deadLetteredAt.getTime(), d.event?.payload])).toEqual([
    ['e-0-2', 0, 2, 'poison', 1, T + 60, EVENTS[1].payload],
    ['e-1-2', 1, 2, 'gave up', 3, T + 300, EVENTS[6].payload],
  ]);
  expect((await rheo.groupInfo(STREAM, 'billing')).deadLetters).toBe(2);
  expect(await rheo.deadLetters(STREAM, 'audit')).toEqual([]);
}

describe('sqlite: upgrade from a version 1 database', () => {
  it('version 1 of the schema is the DDL the first release ran, unchanged', () => {
    expect(SQLITE_SCHEMA[0].up(sqliteTables(), '').map(squash)).toEqual(V1_DDL.map(squash));
  });

  it("install 'none' refuses the old file, naming both versions, and changes nothing", async () => {
    const { rheo } = open(T + 500, 'none');
    await expect(rheo.init()).rejects.toMatchObject({
      code: 'failed',
      message: expect.stringMatching(new RegExp(`schema version 1.*version ${SQLITE_SCHEMA[SQLITE_SCHEMA.length - 1].version}`)),
    });
    await rheo.close();
    expect(await rawQuery(`SELECT name FROM sqlite_master WHERE name = 'rheo_schema_version'`)).toEqual([]);
  });

  it("install 'auto' records version 1, applies every later version, and moves the dead letters out of the deliveries", async () => {
    const { rheo } = open(T + 500);
    await rheo.init();
    await rheo.close();
    expect(await rawQuery(`SELECT version, name FROM rheo_schema_version ORDER BY version`)).toEqual([
      { version: 1, name: 'initial' },
      { version: 2, name: 'dead-letters-retention' },
      { version: 3, name: 'delayed-events' },
      { version: 4, name: 'pause-groups' },
      { version: 5, name: 'skip-reschedule-cancel' },
      { version: 6, name: 'flow-control' },
    ]);
    expect(await rawQuery(`SELECT count(*) AS n FROM rheo_deliveries WHERE state = 'dead'`)).toEqual([{ n: 0 }]);
    expect(await rawQuery(`SELECT partition, sequence, event_id FROM rheo_dead_letters ORDER BY partition`)).toEqual([
      { partition: 0, sequence: 2, event_id: 'e-0-2' },
      { partition: 1, sequence: 2, event_id: 'e-1-2' },
    ]);
  });

  it('reads the old data as the old release wrote it: events, lags, dead letters with their events and reasons', async () => {
    const { rheo } = open(T + 500);
    try {
      expect(await rheo.listStreams()).toEqual([{ name: STREAM, partitions: 2, createdAt: new Date(T) }]);
      await expectEvents(rheo);
      expect(await lags(rheo, 'billing')).toEqual([
        [0, 2, 5],
        [1, 3, 3],
      ]);
      expect(await lags(rheo, 'audit')).toEqual([
        [0, 0, 5],
        [1, 1, 3],
      ]);
      await expectDeadLetters(rheo);
      expect((await rheo.groupInfo(STREAM, 'billing')).inflight).toBe(1);
      // Old rows have no query filter bits (every bit set): payload and metadata filters still find them.
      const found = await rheo.query({ stream: STREAM, where: { payload: { total: 30 }, metadata: { correlationId: 'c-1-3' } } });
      expect(found.map((e) => e.id)).toEqual(['e-1-3']);
      // Timestamps of the old events serve a start at a time: the first stamped at or after T + 25 is sequence 3.
      await rheo.createGroup(STREAM, 'late', { start: { at: new Date(T + 25) } });
      expect(await lags(rheo, 'late')).toEqual([
        [0, 2, 5],
        [1, 2, 3],
      ]);
    } finally {
      await rheo.close();
    }
  });

  it('the old lease settles by its lease id, and the nacked event comes back when due, with its next attempt', async () => {
    const { rheo, clock } = open(T + 500);
    try {
      const e = EVENTS.find((x) => x.partition === LEASE.partition && x.sequence === LEASE.sequence)!;
      const lease: Lease = {
        leaseId: LEASE.leaseId,
        receipt: LEASE.leaseId,
        stream: STREAM,
        group: 'billing',
        consumerId: LEASE.consumerId,
        attempt: 1,
        leasedAt: new Date(LEASE.leasedAt),
        expiresAt: new Date(LEASE.expiresAt),
        event: { ...e, stream: STREAM, timestamp: new Date(e.ts) },
      };
      await rheo.ack(lease);
      await expect(rheo.ack(lease)).rejects.toMatchObject({ code: 'stale_lease' });
      expect(await rheo.fetch(STREAM, 'billing')).toEqual([]); // event 4 is due at T + 1000
      clock.set(T + 1000);
      const [again] = await rheo.fetch(STREAM, 'billing');
      expect([again.event.id, again.attempt]).toEqual(['e-0-4', 2]);
      await rheo.ack(again);
      expect(await lags(rheo, 'billing')).toEqual([
        [0, 5, 5],
        [1, 3, 3],
      ]);
    } finally {
      await rheo.close();
    }
  });
});

runConformance({
  name: 'sqlite, upgraded from version 1',
  create: async (clock) => sqliteBackend({ database: file, clock }),
  unreachable: () => sqliteBackend({ database: join(notADirectory, 'rheo.db') }),
});

describe('sqlite: the upgraded file after the conformance suite', () => {
  it('still holds the old data as the upgrade tests left it', async () => {
    const { rheo } = open(T + 2000);
    try {
      await expectEvents(rheo);
      expect(await lags(rheo, 'billing')).toEqual([
        [0, 5, 5],
        [1, 3, 3],
      ]);
      expect(await lags(rheo, 'audit')).toEqual([
        [0, 0, 5],
        [1, 1, 3],
      ]);
      await expectDeadLetters(rheo);
      expect((await rheo.listGroups(STREAM)).map((g) => g.group)).toEqual(['audit', 'billing', 'late']);
    } finally {
      await rheo.close();
    }
  });
});
