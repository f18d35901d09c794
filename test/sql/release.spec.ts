import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Backend, ManualClock, Rheo, postgresBackend, sqliteBackend } from '../../lib';
import { PostgresBackend } from '../../lib/backends/postgres/postgres-backend';
import { dropSchema, freshSchema, PG_URL } from './pg-helpers';

// Release on the SQL backends, beyond the conformance cases (test/conformance/cases/release.ts):
// who is woken, and fencing when a release races a claim from another node.

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Resolves 'woken' if `backend.wait` returns before `timeoutMs`, else 'timeout' (a bound, never a timing assertion). */
async function woken(backend: Backend, stream: string, group: string, act: () => Promise<unknown>): Promise<string> {
  const waited = backend.wait!({ stream, group, timeoutMs: 60_000, signal: new AbortController().signal }).then(() => 'woken');
  await sleep(20);
  await act();
  return Promise.race([waited, sleep(20_000).then(() => 'timeout')]);
}

describe('postgres: release', () => {
  const schema = freshSchema('release');
  const clock = new ManualClock(Date.UTC(2026, 0, 1));
  let a: Rheo;
  let b: Rheo;

  beforeAll(async () => {
    a = new Rheo(postgresBackend({ url: PG_URL, schema, clock, poolSize: 3 }));
    b = new Rheo(postgresBackend({ url: PG_URL, schema, clock, poolSize: 3 }));
    await a.init();
    await b.init();
  });

  afterAll(async () => {
    await a.close();
    await b.close();
    await dropSchema(schema);
  });

  it('wakes a consumer waiting on another node (NOTIFY), as a nack with no delay would', async () => {
    await a.createStream('wake');
    await a.createGroup('wake', 'g');
    await a.append('wake', { payload: 1 });
    const [lease] = await a.fetch('wake', 'g');
    // Node b has fetched (nothing left) and waits; only a NOTIFY can reach it.
    const other = b.backend as PostgresBackend;
    await other.listen();
    expect(await b.fetch('wake', 'g')).toEqual([]);
    expect(await woken(other, 'wake', 'g', () => a.releaseMany([lease]))).toBe('woken');
    const [again] = await b.fetch('wake', 'g');
    expect(again).toMatchObject({ attempt: 1, event: { id: lease.event.id } });
    await b.ack(again);
  });

  it('an expired lease released while another node claims it: exactly one of them wins, never both', async () => {
    await a.createStream('race');
    await a.createGroup('race', 'g');
    for (let round = 0; round < 20; round++) {
      const [e] = await a.appendBatch('race', [{ payload: round }]);
      const [lease] = await a.fetch('race', 'g', { limit: 1, leaseMs: 1000 });
      expect(lease.event.id).toBe(e.id);
      clock.advance(1001);
      const [[released], claimed] = await Promise.all([a.releaseMany([lease]), b.fetch('race', 'g', { limit: 1, leaseMs: 1000 })]);
      if (released.ok) {
        // The release won: the claim either missed the row or came after it, with the same attempt.
        expect(claimed.every((l) => l.attempt === 1)).toBe(true);
      } else {
        // The claim won: a new lease, one attempt later; the release changed nothing.
        expect(released.error.code).toBe('stale_lease');
        expect(claimed.map((l) => l.attempt)).toEqual([2]);
      }
      // Whatever happened, the event is held once at most, and the holder (if any) can settle.
      const rest = claimed.length ? claimed : await b.fetch('race', 'g', { limit: 1, leaseMs: 1000 });
      expect(rest).toHaveLength(1);
      expect(await b.fetch('race', 'g', { limit: 1 })).toEqual([]);
      await b.ack(rest[0]);
    }
    expect((await a.lag('race', 'g')).lag).toBe(0);
  });
});

describe('sqlite: release', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rheo-sqlite-release-'));
  const rheo = new Rheo(sqliteBackend({ database: join(dir, 'release.db') }));

  afterAll(async () => {
    await rheo.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('wakes a consumer waiting in this process, as a nack with no delay would', async () => {
    await rheo.createStream('wake');
    await rheo.createGroup('wake', 'g');
    await rheo.append('wake', { payload: 1 });
    const [lease] = await rheo.fetch('wake', 'g');
    expect(await rheo.fetch('wake', 'g')).toEqual([]);
    expect(await woken(rheo.backend, 'wake', 'g', () => rheo.releaseMany([lease]))).toBe('woken');
    const [again] = await rheo.fetch('wake', 'g');
    expect(again).toMatchObject({ attempt: 1, event: { id: lease.event.id } });
    await rheo.ack(again);
  });

  it('answers per lease in one call: released, stale, a repeat in the same batch, an unknown group', async () => {
    await rheo.createStream('mixed');
    await rheo.createGroup('mixed', 'g');
    await rheo.appendBatch('mixed', [{ payload: 1 }, { payload: 2 }]);
    const [x, y] = await rheo.fetch('mixed', 'g', { limit: 2 });
    await rheo.ack(y);
    const results = await rheo.releaseMany([x, y, x, { ...x, group: 'nope' }]);
    expect(results.map((r) => (r.ok ? 'ok' : r.error.code))).toEqual(['ok', 'stale_lease', 'stale_lease', 'group_not_found']);
  });
});
