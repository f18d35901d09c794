import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Lease, Rheo, SettleRequest, postgresBackend, sqliteBackend } from '../../lib';
import { MAX_BATCH } from '../../lib/core/limits';
import { dropSchema, freshSchema, PG_URL } from './pg-helpers';

// Bulk paths at the sizes the facade allows: settle / renew / release of MAX_BATCH
// leases in one call, redrive of 100k dead letters, a replay by query matching 40k
// events. PostgreSQL binds at most 65,535 parameters per statement and SQLite 32,766
// variables: a statement with a placeholder per row would fail long before these sizes.
// (Both backends bind a batch as a few arrays on PostgreSQL, and run one small
// statement per row in one transaction on SQLite.) The per-test timeouts are bounds,
// 10-20 times what a run takes on a loaded 2-core machine.

const dir = mkdtempSync(join(tmpdir(), 'rheo-bulk-'));
const schema = freshSchema('bulk');

const backends = [
  { name: 'postgres', make: () => postgresBackend({ url: PG_URL, schema, poolSize: 2 }), cleanup: () => dropSchema(schema) },
  {
    name: 'sqlite',
    make: () => sqliteBackend({ database: join(dir, 'bulk.db') }),
    cleanup: async () => rmSync(dir, { recursive: true, force: true }),
  },
];

async function appendMany(rheo: Rheo, stream: string, n: number, type: (i: number) => string = () => 't'): Promise<void> {
  for (let from = 0; from < n; from += MAX_BATCH) {
    const size = Math.min(MAX_BATCH, n - from);
    await rheo.appendBatch(
      stream,
      Array.from({ length: size }, (_, j) => ({ type: type(from + j), payload: from + j })),
    );
  }
}

/** Fetch until nothing is claimable, 1000 at a time (the facade's largest fetch). */
async function fetchAll(rheo: Rheo, stream: string, group: string, max = Infinity): Promise<Lease[]> {
  const all: Lease[] = [];
  while (all.length < max) {
    const got = await rheo.fetch(stream, group, { limit: Math.min(1000, max - all.length), leaseMs: 3_600_000 });
    if (got.length === 0) break;
    all.push(...got);
  }
  return all;
}

describe.each(backends)('$name: bulk calls at the largest sizes', ({ make, cleanup }) => {
  let rheo: Rheo;

  beforeAll(() => {
    rheo = new Rheo(make());
  });

  afterAll(async () => {
    await rheo.close();
    await cleanup();
  });

  it(`renews, releases and settles ${MAX_BATCH} leases, each in one call`, async () => {
    await rheo.createStream('leases');
    await rheo.createGroup('leases', 'g');
    await appendMany(rheo, 'leases', MAX_BATCH);
    const leases = await fetchAll(rheo, 'leases', 'g');
    expect(leases).toHaveLength(MAX_BATCH);

    const renewed = await rheo.renewMany(leases, { leaseMs: 7_200_000 });
    expect(renewed.filter((r) => r.ok)).toHaveLength(MAX_BATCH);

    const released = await rheo.releaseMany(leases);
    expect(released.filter((r) => r.ok)).toHaveLength(MAX_BATCH);
    // Claimable again at once, with the attempt they had.
    const again = await fetchAll(rheo, 'leases', 'g');
    expect(again).toHaveLength(MAX_BATCH);
    expect(again.every((l) => l.attempt === 1)).toBe(true);
    expect((await rheo.releaseMany(leases)).filter((r) => !r.ok && r.error.code === 'stale_lease')).toHaveLength(MAX_BATCH);

    // A third each of ack, nack (due at once) and reject.
    const kinds = ['ack', 'nack', 'reject'] as const;
    const settles: SettleRequest[] = again.map((lease, i) => {
      const kind = kinds[i % 3];
      return kind === 'nack' ? { kind, lease, delayMs: 0 } : { kind, lease };
    });
    const results = await rheo.settleMany(settles);
    expect(results.filter((r) => r.ok)).toHaveLength(MAX_BATCH);
    const nacked = settles.filter((s) => s.kind === 'nack').length;
    const rejected = settles.filter((s) => s.kind === 'reject').length;
    expect((await rheo.groupInfo('leases', 'g')).deadLetters).toBe(rejected);
    const retried = await fetchAll(rheo, 'leases', 'g');
    expect(retried).toHaveLength(nacked);
    expect(retried.every((l) => l.attempt === 2)).toBe(true);
  }, 120_000);

  it('redrives 100,000 dead letters at once', async () => {
    const n = 100_000;
    await rheo.createStream('dead');
    await rheo.createGroup('dead', 'g');
    await appendMany(rheo, 'dead', n);
    for (;;) {
      const leases = await rheo.fetch('dead', 'g', { limit: 1000, leaseMs: 3_600_000 });
      if (leases.length === 0) break;
      const results = await rheo.settleMany(leases.map((lease) => ({ kind: 'reject' as const, lease, reason: 'bulk' })));
      expect(results.every((r) => r.ok)).toBe(true);
    }
    expect((await rheo.groupInfo('dead', 'g')).deadLetters).toBe(n);

    expect(await rheo.redrive('dead', 'g', { all: true })).toBe(n);
    const info = await rheo.groupInfo('dead', 'g');
    expect(info).toMatchObject({ deadLetters: 0, lag: { lag: n } });
    // Available again from the start, as fresh deliveries.
    const first = await rheo.fetch('dead', 'g', { limit: 3, leaseMs: 60_000 });
    expect(first.map((l) => [l.event.sequence, l.attempt])).toEqual([
      [1, 1],
      [2, 1],
      [3, 1],
    ]);
  }, 180_000);

  it('replays a query matching 40,000 events', async () => {
    await rheo.createStream('replay');
    // Four events in five match: 40,000 of 50,000.
    await appendMany(rheo, 'replay', 50_000, (i) => (i % 5 === 4 ? 'other' : 'match'));
    // Starting at the end marks every event as offered (and settled) without 50k claims.
    await rheo.createGroup('replay', 'g', { start: 'end' });
    expect((await rheo.lag('replay', 'g')).lag).toBe(0);

    expect(await rheo.replay('replay', 'g', { query: { where: { type: 'match' } } })).toBe(40_000);
    const leases = await fetchAll(rheo, 'replay', 'g');
    expect(leases).toHaveLength(40_000);
    expect(leases.every((l) => l.event.type === 'match')).toBe(true);
    expect(new Set(leases.map((l) => l.event.sequence)).size).toBe(40_000);
    // Bound: about 5 s here. Claiming replayed deliveries once took 140 s on PostgreSQL (each claim
    // scanned every delivery of the group per chosen row while the table's statistics were stale).
  }, 90_000);
});
