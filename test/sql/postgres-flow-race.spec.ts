// Flow control on PostgreSQL across processes (docs/adr/049-flow-control.md): several
// backends on one schema claim and settle one group at once. The key places are
// handed on by release rows that the next claim takes under the partition locks; a
// waiting delivery whose key's end was missed would wait forever, and the run would
// never finish (nothing left waiting at the end is the check). Leases are tracked
// here, in the one test process: a lease leaves the tracker just before its ack is
// sent, so a second lease of a key can only be seen beside it if the store handed
// it out while the first was live.
import { ManualClock, postgresBackend, Rheo } from '../../lib';
import type { Lease } from '../../lib';
import { dropSchema, freshSchema, PG_URL } from './pg-helpers';

const schema = freshSchema('flow_race');
const PROCESSES = 3;
const KEYS = 30;
const PER_KEY = 20;
const LEASE_MS = 30_000;

type Body = { key: string; n: number };

describe('PostgreSQL flow control, several processes at once', () => {
  let rheos: Rheo[] = [];
  const clock = new ManualClock(Date.now());

  beforeAll(async () => {
    rheos = Array.from({ length: PROCESSES }, () => new Rheo(postgresBackend({ url: PG_URL, schema, clock, poolSize: 3 })));
    for (const r of rheos) await r.init();
  });

  afterAll(async () => {
    await Promise.all(rheos.map((r) => r.close()));
    await dropSchema(schema);
  });

  /** Appends KEYS × PER_KEY keyed events, the keys interleaved, over `partitions`. */
  async function keyedStream(name: string, partitions: number): Promise<void> {
    await rheos[0].createStream(name, { partitions });
    const events = [];
    for (let n = 0; n < PER_KEY; n++) for (let k = 0; k < KEYS; k++) events.push({ key: `k${k}`, payload: { key: `k${k}`, n } });
    await rheos[0].appendBatch(name, events);
  }

  const body = (l: Lease) => l.event.payload as Body;

  it("ordering 'key': never two live leases of a key, each key acked in order, nothing left waiting", async () => {
    const stream = 'keyed';
    await keyedStream(stream, 2);
    await rheos[0].createGroup(stream, 'g', { ordering: 'key', maxAttempts: 100 });
    const held = new Map<string, string>();
    const acked = new Map<string, number[]>();
    const violations: string[] = [];
    let done = 0;
    let nacks = 0;
    const worker = async (r: Rheo, id: number) => {
      for (let idle = 0, first = true; done < KEYS * PER_KEY && idle < 200; first = false) {
        // The first claim takes every key's head and sets the rest waiting: each key then has a long waiting
        // run, and every end hands its place on to one of them.
        const limit = first && id === 0 ? KEYS : 4;
        const leases = await r.fetch(stream, 'g', { limit, leaseMs: LEASE_MS, consumerId: `w${id}` });
        idle = leases.length === 0 ? idle + 1 : 0;
        if (leases.length === 0) await new Promise((res) => setTimeout(res, 2));
        for (const l of leases) {
          const { key } = body(l);
          if (held.has(key)) violations.push(`${key}: ${body(l).n} leased beside ${held.get(key)}`);
          held.set(key, `${body(l).n}@w${id}`);
        }
        await Promise.all(
          leases.map(async (l) => {
            const { key, n } = body(l);
            // Held a little while, so the other processes' claims land while it is live.
            await new Promise((res) => setTimeout(res, 4 + (n % 5)));
            held.delete(key);
            // Some fail once: the retry holds the key's place, so the next event still waits for it.
            if (l.attempt === 1 && (n * 7 + Number(key.slice(1))) % 10 === 0) {
              nacks++;
              await r.nack(l, { delayMs: 0 });
              return;
            }
            await r.ack(l);
            (acked.get(key) ?? acked.set(key, []).get(key)!).push(n);
            done++;
          }),
        );
      }
    };
    await Promise.all(rheos.map((r, i) => worker(r, i)));
    expect(violations).toEqual([]);
    expect(nacks).toBeGreaterThan(0);
    expect(done).toBe(KEYS * PER_KEY);
    for (let k = 0; k < KEYS; k++) expect(acked.get(`k${k}`)).toEqual(Array.from({ length: PER_KEY }, (_, n) => n));
    const info = await rheos[1].groupInfo(stream, 'g');
    expect(info.waitingForKey).toBe(0);
    expect(info.lag.lag).toBe(0);
  });

  it('groupConcurrency: 3 holds the live leases across every process to 3', async () => {
    const stream = 'capped';
    await rheos[0].createStream(stream, { partitions: 4 });
    await rheos[0].appendBatch(
      stream,
      Array.from({ length: 300 }, (_, i) => ({ payload: { key: '', n: i } })),
    );
    await rheos[0].createGroup(stream, 'g', { groupConcurrency: 3, start: 'beginning' });
    let live = 0;
    let most = 0;
    let done = 0;
    let heldBack = 0;
    const worker = async (r: Rheo) => {
      for (let idle = 0; done < 300 && idle < 500;) {
        const leases = await r.fetch(stream, 'g', { limit: 3, leaseMs: LEASE_MS });
        idle = leases.length === 0 ? idle + 1 : 0;
        if (leases.length < 3) heldBack++;
        live += leases.length;
        most = Math.max(most, live);
        await Promise.all(
          leases.map(async (l) => {
            await new Promise((res) => setImmediate(res));
            live--;
            await r.ack(l);
            done++;
          }),
        );
        if (leases.length === 0) await new Promise((res) => setTimeout(res, 1));
      }
    };
    await Promise.all(rheos.map((r) => worker(r)));
    expect(done).toBe(300);
    expect(most).toBeLessThanOrEqual(3);
    expect(most).toBe(3);
    expect(heldBack).toBeGreaterThan(0);
    expect((await rheos[2].lag(stream, 'g')).lag).toBe(0);
  });

  it("ordering 'key' with leases expiring mid-run: an expired head is claimed again, its key still held; order and completeness kept", async () => {
    const stream = 'expiring';
    await keyedStream(stream, 2);
    await rheos[0].createGroup(stream, 'g', { ordering: 'key', maxAttempts: 1000 });
    // Per key, the live lease by its expiry on the shared clock: a lease beside an unexpired one is a violation.
    const held = new Map<string, { n: number; expiresAt: number }>();
    const acked = new Map<string, number[]>();
    const violations: string[] = [];
    let done = 0;
    let stale = 0;
    let dropped = 0;
    for (let round = 0; done < KEYS * PER_KEY && round < 2000; round++) {
      const fetched = await Promise.all(rheos.map((r) => r.fetch(stream, 'g', { limit: 5, leaseMs: LEASE_MS })));
      for (const l of fetched.flat()) {
        const { key, n } = body(l);
        const prev = held.get(key);
        if (prev && prev.expiresAt > clock.now()) violations.push(`${key}: ${n} leased beside live ${prev.n}`);
        held.set(key, { n, expiresAt: l.expiresAt.getTime() });
      }
      // Every third round the clock passes every lease's expiry while some acks are still to be sent.
      const expireAt = round % 3 === 2 ? Math.floor(fetched.flat().length / 2) : -1;
      let i = 0;
      for (const [p, leases] of fetched.entries()) {
        for (const l of leases) {
          if (i++ === expireAt) clock.advance(LEASE_MS + 1);
          const { key, n } = body(l);
          // A holder that dies: its lease is left to expire.
          if ((n + Number(key.slice(1)) + round) % 11 === 0) {
            dropped++;
            continue;
          }
          if (held.get(key)?.n === n) held.delete(key);
          try {
            await rheos[p].ack(l);
            (acked.get(key) ?? acked.set(key, []).get(key)!).push(n);
            done++;
          } catch (err) {
            expect((err as { code?: string }).code).toBe('stale_lease');
            stale++;
          }
        }
      }
      if (fetched.every((l) => l.length === 0)) clock.advance(LEASE_MS + 1);
    }
    expect(violations).toEqual([]);
    expect(dropped).toBeGreaterThan(0);
    expect(stale).toBeGreaterThan(0);
    expect(done).toBe(KEYS * PER_KEY);
    for (let k = 0; k < KEYS; k++) expect(acked.get(`k${k}`)).toEqual(Array.from({ length: PER_KEY }, (_, n) => n));
    const info = await rheos[0].groupInfo(stream, 'g');
    expect(info.waitingForKey).toBe(0);
    expect(info.lag.lag).toBe(0);
  });
});
