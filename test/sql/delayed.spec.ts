// Delayed events on the SQL backends, beyond the conformance cases: the outbox
// (an append in the caller's transaction, PostgreSQL's probing statement), and the
// per-partition `delayed_to` mark that lets a claim skip reading deliver_at for
// events without a delay (docs/adr/028-delayed-events.md).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { ManualClock, Rheo, typeormBackend } from '../../lib';
import { dropSchema, freshSchema, pgDataSource } from './pg-helpers';

const schema = freshSchema('delayed');
const dir = mkdtempSync(join(tmpdir(), 'rheo-delayed-'));
const clock = new ManualClock(Date.UTC(2026, 2, 1));

let ds: DataSource;
let pg: Rheo;
let lite: Rheo;
let liteSource: DataSource;

beforeAll(async () => {
  ds = await pgDataSource(3);
  pg = new Rheo(typeormBackend({ dataSource: ds, schema, clock }));
  await pg.init();
  liteSource = new DataSource({ type: 'better-sqlite3', database: join(dir, 'delayed.db') });
  await liteSource.initialize();
  lite = new Rheo(typeormBackend({ dataSource: liteSource, clock }));
  await lite.init();
});

afterAll(async () => {
  await pg?.close();
  await lite?.close();
  await ds?.destroy();
  await liteSource?.destroy();
  await dropSchema(schema);
  rmSync(dir, { recursive: true, force: true });
});

const fetchAll = (rheo: Rheo, stream: string) => rheo.fetch(stream, 'g', { limit: 100, leaseMs: 30_000 });

describe('postgres: delayed events in the outbox', () => {
  it("an append in the caller's transaction stores the delay with the event: nothing on rollback, offered at its time on commit", async () => {
    await pg.createStream('outbox', { partitions: 2 });
    await pg.createGroup('outbox', 'g');
    await ds
      .transaction(async (manager) => {
        await pg.appendBatch('outbox', [{ payload: 'gone', delayMs: 1000 }], { manager });
        throw new Error('roll back');
      })
      .catch(() => undefined);
    const stored = await ds.transaction((manager) =>
      pg.appendBatch(
        'outbox',
        [
          { partition: 1, payload: 'plain' },
          { partition: 1, payload: 'later', delayMs: 2000 },
          { partition: 0, payload: 'at', deliverAt: new Date(clock.now() + 1000) },
        ],
        { manager },
      ),
    );
    expect(stored.map((e) => [e.partition, e.sequence, e.deliverAt?.getTime() ?? null])).toEqual([
      [1, 1, null],
      [1, 2, clock.now() + 2000],
      [0, 1, clock.now() + 1000],
    ]);
    expect(await marks(ds, 'outbox')).toEqual([1, 2]);
    expect((await fetchAll(pg, 'outbox')).map((l) => l.event.payload)).toEqual(['plain']);
    clock.advance(1000);
    expect((await fetchAll(pg, 'outbox')).map((l) => l.event.payload)).toEqual(['at']);
    clock.advance(1000);
    expect((await fetchAll(pg, 'outbox')).map((l) => l.event.payload)).toEqual(['later']);
  });

  it('the probing append (an id already stored in the batch) stores the new delayed events and moves the marks past them', async () => {
    await pg.createStream('probing');
    await pg.createGroup('probing', 'g');
    await pg.append('probing', { id: 'known', payload: 0 });
    const batch = await pg.appendBatch('probing', [
      { id: 'known', payload: 0, delayMs: 5000 },
      { id: 'new-delayed', payload: 1, delayMs: 5000 },
      { id: 'new-plain', payload: 2 },
    ]);
    expect(batch.map((e) => [e.id, e.sequence, e.deliverAt?.getTime() ?? null])).toEqual([
      ['known', 1, null],
      ['new-delayed', 2, clock.now() + 5000],
      ['new-plain', 3, null],
    ]);
    expect(await marks(ds, 'probing')).toEqual([2]);
    expect((await fetchAll(pg, 'probing')).map((l) => l.event.id)).toEqual(['known', 'new-plain']);
  });
});

describe.each([
  ['postgres', () => pg, () => marks(ds, 'marks')],
  ['sqlite', () => lite, () => marks(liteSource, 'marks')],
] as const)('%s: the delayed_to mark', (_, rheo, read) => {
  it('stays 0 without delayed events, and follows the last delayed event of each partition', async () => {
    await rheo().createStream('marks', { partitions: 3 });
    await rheo().appendBatch('marks', [
      { partition: 0, payload: 1 },
      { partition: 1, payload: 2 },
    ]);
    expect(await read()).toEqual([0, 0, 0]);
    await rheo().appendBatch('marks', [
      { partition: 1, payload: 3, delayMs: 10 },
      { partition: 1, payload: 4 },
      { partition: 2, payload: 5 },
      { partition: 2, payload: 6, delayMs: 10 },
      { partition: 2, payload: 7, delayMs: 10 },
      { partition: 2, payload: 8 },
    ]);
    expect(await read()).toEqual([0, 2, 3]);
    await rheo().append('marks', { partition: 1, payload: 9 });
    expect(await read()).toEqual([0, 2, 3]);
  });
});

/** Each partition's delayed_to, in partition order. */
async function marks(source: DataSource, stream: string): Promise<number[]> {
  const table = source.options.type === 'postgres' ? `"${schema}".rheo_partitions` : 'rheo_partitions';
  const placeholder = source.options.type === 'postgres' ? '$1' : '?';
  const rows = (await source.query(`SELECT delayed_to FROM ${table} WHERE stream = ${placeholder} ORDER BY partition`, [stream])) as Array<{
    delayed_to: number | string;
  }>;
  return rows.map((r) => Number(r.delayed_to));
}
