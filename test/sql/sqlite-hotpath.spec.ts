// The SQLite hot paths' shortcuts (issue 15): a run of acks settled by range
// (two statements, not one per lease) must answer exactly as lease-by-lease
// acks do; the events an append returns are copies of what it stored, not
// parsed back, and must still be what was stored; a fetch reads its events as
// raw rows.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManualClock, Rheo, sqliteBackend, type Lease } from '../../lib';

const dir = mkdtempSync(join(tmpdir(), 'rheo-sqlite-hotpath-'));
const clock = new ManualClock();
let rheo: Rheo;
let n = 0;

async function stream(count: number): Promise<string> {
  const s = `s${++n}`;
  await rheo.createStream(s);
  await rheo.createGroup(s, 'g');
  await rheo.appendBatch(
    s,
    Array.from({ length: count }, (_, i) => ({ payload: { i } })),
  );
  return s;
}

const acks = (leases: Lease[]) => leases.map((lease) => ({ lease, kind: 'ack' as const }));
const codes = (results: Array<{ ok: boolean; error?: { code: string } }>) => results.map((r) => (r.ok ? 'ok' : r.error!.code));

beforeAll(() => {
  rheo = new Rheo(sqliteBackend({ database: join(dir, 'rheo.db'), clock }));
});
afterAll(async () => {
  await rheo.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('sqlite settle of a run of acks', () => {
  it('fences each lease: a lost lease in the run is stale, its successor still held, the rest acked', async () => {
    const s = await stream(10);
    const first = await rheo.fetch(s, 'g', { limit: 10, leaseMs: 1_000 });
    clock.advance(2_000); // every lease expires
    const again = await rheo.fetch(s, 'g', { limit: 10, leaseMs: 60_000 });
    expect(again.map((l) => l.event.sequence)).toEqual(first.map((l) => l.event.sequence));
    // Sequences 1..10, the 5th op with the lost lease: consecutive, so one run.
    const ops = acks(again.map((l, i) => (i === 4 ? first[4] : l)));
    expect(codes(await rheo.settleMany(ops))).toEqual(['ok', 'ok', 'ok', 'ok', 'stale_lease', 'ok', 'ok', 'ok', 'ok', 'ok']);
    expect((await rheo.lag(s, 'g')).lag).toBe(6); // the frontier waits at 4 for the 5th event
    expect(codes(await rheo.settleMany(acks([again[4]])))).toEqual(['ok']);
    expect((await rheo.lag(s, 'g')).lag).toBe(0);
  });

  it('acks the live leases of a run and leaves the expired ones to be fetched again', async () => {
    const s = await stream(10);
    const leases = await rheo.fetch(s, 'g', { limit: 10, leaseMs: 1_000 });
    await rheo.renewMany(leases.slice(0, 5), { leaseMs: 10_000 });
    clock.advance(2_000);
    expect(codes(await rheo.settleMany(acks(leases)))).toEqual([...Array(5).fill('ok'), ...Array(5).fill('stale_lease')]);
    const back = await rheo.fetch(s, 'g', { limit: 10, leaseMs: 60_000 });
    expect(back.map((l) => [l.event.sequence, l.attempt])).toEqual([6, 7, 8, 9, 10].map((q) => [q, 2]));
    expect(codes(await rheo.settleMany(acks(back)))).toEqual(Array(5).fill('ok'));
    expect((await rheo.lag(s, 'g')).lag).toBe(0);
  });

  it('a nack inside a run of acks is retried, the acks around it settle', async () => {
    const s = await stream(9);
    const leases = await rheo.fetch(s, 'g', { limit: 9, leaseMs: 60_000 });
    const ops = leases.map((lease, i) =>
      i === 4 ? { lease, kind: 'nack' as const, reason: 'again', delayMs: 0 } : { lease, kind: 'ack' as const },
    );
    expect(codes(await rheo.settleMany(ops))).toEqual(Array(9).fill('ok'));
    const back = await rheo.fetch(s, 'g', { limit: 9, leaseMs: 60_000 });
    expect(back.map((l) => [l.event.sequence, l.attempt])).toEqual([[5, 2]]);
    // A lease twice in one batch: the second op is stale, as lease by lease.
    expect(codes(await rheo.settleMany(acks([back[0], back[0]])))).toEqual(['ok', 'stale_lease']);
    expect((await rheo.lag(s, 'g')).lag).toBe(0);
  });
});

describe('sqlite append returns what it stored', () => {
  it('copies that share nothing with the input, even when the input changes while the append waits', async () => {
    const s = `s${++n}`;
    await rheo.createStream(s);
    await rheo.append(s, { payload: 0 }); // the facade knows the stream now: it serialises a batch before its first await
    const payload = { a: { b: [1, { c: 'x' }] }, zero: -0, n: null as number | null };
    const withProto = JSON.parse('{"__proto__": {"polluted": true}, "k": 1}') as Record<string, unknown>;
    const metadata = { source: 'test' };
    const pending = rheo.appendBatch<unknown>(s, [{ payload, metadata, key: 'k', type: 't' }, { payload: withProto }, { payload: 'text' }]);
    payload.a.b[0] = 2; // after the facade serialised it: neither what was stored nor what is returned
    payload.n = 5;
    metadata.source = 'changed';
    const stored = await pending;
    const read = (await rheo.read(s)).slice(1);
    expect(stored).toEqual(read);
    expect(stored[0].payload).toEqual({ a: { b: [1, { c: 'x' }] }, zero: 0, n: null });
    expect(Object.is((stored[0].payload as { zero: number }).zero, 0)).toBe(true);
    expect(stored[0].metadata).toEqual({ source: 'test' });
    expect(stored[0].payload).not.toBe(payload);
    expect(stored[1].payload).toEqual(read[1].payload);
    expect(Object.keys(stored[1].payload as object)).toEqual(['__proto__', 'k']);
    expect(Object.getPrototypeOf(stored[1].payload)).toBe(Object.prototype);
    expect(stored[2].payload).toBe('text');
  });

  it('a fetch returns the stored events, delayed ones with their deliverAt', async () => {
    const s = `s${++n}`;
    await rheo.createStream(s);
    await rheo.createGroup(s, 'g');
    const at = new Date(clock.now() + 1_000);
    const stored = await rheo.appendBatch(s, [
      { payload: { i: 1 }, key: 'a', type: 't', metadata: { m: 1 } },
      { payload: [1, 2], deliverAt: at },
    ]);
    clock.advance(1_000);
    const leases = await rheo.fetch(s, 'g', { limit: 10, leaseMs: 60_000 });
    expect(leases.map((l) => l.event)).toEqual(stored);
    expect(leases[1].event.deliverAt).toEqual(at);
    expect(leases[0].expiresAt).not.toBe(leases[1].expiresAt);
  });
});
