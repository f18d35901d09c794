// Flow control on SQLite files (docs/adr/049-flow-control.md), beyond the conformance
// cases: two backends on one file (two connections, as two processes have) claim and
// settle at once, and a key's place is handed on by the ending's own transaction
// (sqlite/keys.ts). The store itself is checked after every claim through a third
// connection: never two open deliveries of one key, never more live leases than the
// group's concurrency. Then consumer processes race on a file for real.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Lease, ManualClock, Rheo, sqliteBackend } from '../../lib';
import { startConsumers } from '../support/multiprocess';

/** A read-only connection on the file (better-sqlite3 ships no types: the little of it used here). */
interface Look {
  prepare(sql: string): { get(...params: unknown[]): unknown; all(...params: unknown[]): unknown[] };
  close(): void;
}
// eslint-disable-next-line @typescript-eslint/no-require-imports
const Database = require('better-sqlite3') as new (file: string, options?: { readonly?: boolean }) => Look;

const dir = mkdtempSync(join(tmpdir(), 'rheo-sqlite-flow-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const LEASE_MS = 10_000;
const KEYS = 30;
const PER_KEY = 20;

let files = 0;
/** A fresh file, two facades on it (each its own backend and connection, one clock), and a read-only look at the rows. */
async function twoOnOneFile(clock = new ManualClock(Date.UTC(2026, 11, 3))) {
  const database = join(dir, `flow-${++files}.db`);
  const a = new Rheo(sqliteBackend({ database, clock }));
  await a.init();
  const b = new Rheo(sqliteBackend({ database, clock }));
  await b.init();
  const look = new Database(database, { readonly: true });
  const close = async () => {
    look.close();
    await Promise.all([a.close(), b.close()]);
  };
  return { database, a, b, clock, look, close };
}

/** Keys with more than one open delivery (leased, or due again, or parked), in any partition. */
function crowdedKeys(look: Look, stream: string): unknown[] {
  return look
    .prepare(
      `SELECT partition, key, count(*) AS n FROM rheo_deliveries
       WHERE stream = ? AND group_name = 'g' AND key IS NOT NULL AND state <> 'waiting'
       GROUP BY partition, key HAVING count(*) > 1`,
    )
    .all(stream);
}

function liveLeases(look: Look, stream: string, now: number): number {
  return (
    look
      .prepare(`SELECT count(*) AS n FROM rheo_deliveries WHERE stream = ? AND group_name = 'g' AND state = 'leased' AND due_at > ?`)
      .get(stream, now) as { n: number }
  ).n;
}

/** 30 keys × 20 events, interleaved (k0 #1, k1 #1, ... k29 #1, k0 #2, ...), each carrying its key and its number in the key. */
function keyedEvents(): Array<{ key: string; payload: { key: string; n: number } }> {
  const out: Array<{ key: string; payload: { key: string; n: number } }> = [];
  for (let n = 0; n < PER_KEY; n++) for (let k = 0; k < KEYS; k++) out.push({ key: `k${k}`, payload: { key: `k${k}`, n } });
  return out;
}

const tick = () => new Promise<void>((r) => setImmediate(r));
const payloadOf = (l: Lease) => l.event.payload as { key: string; n: number };

/**
 * One worker on one facade: claims batches of varying size, holds each lease a few
 * turns of the event loop (the other worker claims meanwhile), and acks it, checking
 * as it goes that no key is under two live leases of the two workers together.
 * `abandon(l)` leaves a lease unsettled (its holder "died"): it expires when the
 * clock moves.
 */
async function work(
  rheo: Rheo,
  stream: string,
  held: Map<string, Lease>,
  acked: Map<string, number[]>,
  problems: string[],
  check: () => void,
  done: () => boolean,
  abandon: (l: Lease) => boolean = () => false,
): Promise<void> {
  let round = 0;
  let idle = 0;
  while (!done()) {
    const leases = await rheo.fetch(stream, 'g', { limit: 1 + (round++ % 7), leaseMs: LEASE_MS });
    check();
    if (leases.length === 0) {
      // Stuck (a waiting delivery no ending handed a place to, say): said, not waited for until the timeout.
      if (++idle > 5000) problems.push(`no claim for ${idle} rounds: ${acked.size} keys acked`);
      await tick();
      continue;
    }
    idle = 0;
    for (const l of leases) {
      const { key } = payloadOf(l);
      const other = held.get(key);
      // A lease expired (abandoned, or the clock moved past it) may be claimed again: two live ones never.
      if (other && other.leaseId !== l.leaseId && other.expiresAt.getTime() > l.leasedAt.getTime())
        problems.push(`key ${key} leased twice: ${other.leaseId} and ${l.leaseId}`);
      held.set(key, l);
    }
    for (let i = 0; i < 1 + (round % 3); i++) await tick();
    for (const l of leases) {
      const { key, n } = payloadOf(l);
      const mine = held.get(key)?.leaseId === l.leaseId;
      // Left as it is: it expires when the clock next moves past it.
      if (abandon(l)) continue;
      // Given up in our book before the store frees it: the other worker can never be told of it earlier.
      if (mine) held.delete(key);
      try {
        await rheo.ack(l);
      } catch (err) {
        // Expired while we held it (the clock moved on): its re-claim runs it, this ack changes nothing.
        if ((err as { code?: string }).code === 'stale_lease') continue;
        throw err;
      }
      acked.set(key, [...(acked.get(key) ?? []), n]);
    }
  }
}

describe('sqlite: flow control across connections on one file', () => {
  it("ordering 'key': 30 keys × 20 events claimed and acked by two backends at once, never two open of a key, each key in order", async () => {
    const { a, b, look, close } = await twoOnOneFile();
    try {
      await a.createStream('keyed', { partitions: 4 });
      await a.createGroup('keyed', 'g', { ordering: 'key' });
      await a.appendBatch('keyed', keyedEvents());
      const held = new Map<string, Lease>();
      const acked = new Map<string, number[]>();
      const problems: string[] = [];
      const check = () => {
        const crowded = crowdedKeys(look, 'keyed');
        if (crowded.length) problems.push(`crowded keys: ${JSON.stringify(crowded)}`);
      };
      let total = 0;
      const done = () => (total = [...acked.values()].reduce((n, x) => n + x.length, 0)) >= KEYS * PER_KEY || problems.length > 0;
      await Promise.all([work(a, 'keyed', held, acked, problems, check, done), work(b, 'keyed', held, acked, problems, check, done)]);
      expect(problems).toEqual([]);
      expect(total).toBe(KEYS * PER_KEY);
      for (let k = 0; k < KEYS; k++) expect(acked.get(`k${k}`)).toEqual(Array.from({ length: PER_KEY }, (_, n) => n));
      expect(await b.groupInfo('keyed', 'g')).toMatchObject({ waitingForKey: 0, inflight: 0, lag: { lag: 0 } });
      expect(look.prepare(`SELECT count(*) AS n FROM rheo_deliveries WHERE stream = 'keyed'`).get()).toEqual({ n: 0 });
    } finally {
      await close();
    }
  }, 60_000);

  it("ordering 'key' with leases expired mid-run: an expired lease keeps its key, its re-claim runs it, nothing is lost", async () => {
    const { a, b, clock, look, close } = await twoOnOneFile();
    try {
      await a.createStream('expiring', { partitions: 2 });
      // Attempts to spare: a lease the clock passes while its holder still works on it is claimed again.
      await a.createGroup('expiring', 'g', { ordering: 'key', maxAttempts: 20 });
      await a.appendBatch('expiring', keyedEvents());
      const held = new Map<string, Lease>();
      const acked = new Map<string, number[]>();
      const problems: string[] = [];
      const attempts = new Map<string, number>();
      let claims = 0;
      const check = () => {
        const crowded = crowdedKeys(look, 'expiring');
        if (crowded.length) problems.push(`crowded keys: ${JSON.stringify(crowded)}`);
        // Every 25 claims, the clock passes the lease time: what was abandoned expires.
        if (++claims % 25 === 0) clock.advance(LEASE_MS);
      };
      // Every 11th first attempt is abandoned by its holder (as by a SIGKILL): its re-claim comes with attempt 2.
      let seen = 0;
      const abandon = (l: Lease) => {
        attempts.set(l.event.id, Math.max(attempts.get(l.event.id) ?? 0, l.attempt));
        return l.attempt === 1 && ++seen % 11 === 0;
      };
      const done = () => [...acked.values()].reduce((n, x) => n + x.length, 0) >= KEYS * PER_KEY || problems.length > 0;
      await Promise.all([
        work(a, 'expiring', held, acked, problems, check, done, abandon),
        work(b, 'expiring', held, acked, problems, check, done, abandon),
      ]);
      expect(problems).toEqual([]);
      for (let k = 0; k < KEYS; k++) expect(acked.get(`k${k}`)).toEqual(Array.from({ length: PER_KEY }, (_, n) => n));
      expect([...attempts.values()].filter((n) => n >= 2).length).toBeGreaterThan(10);
      expect(await a.groupInfo('expiring', 'g')).toMatchObject({ waitingForKey: 0, inflight: 0, deadLetters: 0, lag: { lag: 0 } });
    } finally {
      await close();
    }
  }, 60_000);

  it('groupConcurrency 3: two backends claiming at once never hold more than 3 live leases; expired ones free their places', async () => {
    const { a, b, clock, look, close } = await twoOnOneFile();
    try {
      await a.createStream('capped', { partitions: 4 });
      await a.createGroup('capped', 'g', { groupConcurrency: 3, maxAttempts: 20 });
      await a.appendBatch(
        'capped',
        Array.from({ length: 300 }, (_, i) => ({ payload: { key: `e${i}`, n: 0 } })),
      );
      const held = new Map<string, Lease>();
      const acked = new Map<string, number[]>();
      const problems: string[] = [];
      let claims = 0;
      const check = () => {
        const live = liveLeases(look, 'capped', clock.now());
        if (live > 3) problems.push(`${live} live leases`);
        const holding = [...held.values()].filter((l) => l.expiresAt.getTime() > clock.now()).length;
        if (holding > 3) problems.push(`workers hold ${holding} live leases`);
        if (++claims % 40 === 0) clock.advance(LEASE_MS);
      };
      let seen = 0;
      const abandon = (l: Lease) => l.attempt === 1 && ++seen % 13 === 0;
      const done = () => [...acked.values()].length >= 300 || problems.length > 0;
      await Promise.all([
        work(a, 'capped', held, acked, problems, check, done, abandon),
        work(b, 'capped', held, acked, problems, check, done, abandon),
      ]);
      expect(problems).toEqual([]);
      expect(acked.size).toBe(300);
      expect(await a.groupInfo('capped', 'g')).toMatchObject({ inflight: 0, lag: { lag: 0 } });
    } finally {
      await close();
    }
  }, 60_000);
});

describe('sqlite: every ending hands its key on, and a change by another process decides at once', () => {
  const names = (leases: Lease[]) => leases.map((l) => (l.event.payload as { name: string }).name);
  const named = (...list: string[]) => list.map((name) => ({ key: name.replace(/\d+$/, ''), payload: { name } }));

  it("a transactional consumer's ack gives the key's place to its next event", async () => {
    const { a, close } = await twoOnOneFile();
    try {
      await a.createStream('tx', { partitions: 1 });
      await a.createGroup('tx', 'g', { ordering: 'key' });
      await a.appendBatch('tx', named('a1', 'a2'));
      const [head] = await a.fetch('tx', 'g', { limit: 10, leaseMs: LEASE_MS });
      expect(names([head])).toEqual(['a1']);
      expect(await a.backend.ackInTransaction!(head, async () => true)).toEqual({ kind: 'committed' });
      expect(names(await a.fetch('tx', 'g', { limit: 10, leaseMs: LEASE_MS }))).toEqual(['a2']);
    } finally {
      await close();
    }
  });

  it("the claim's dead letter of an expired last attempt gives its key on in the same fetch", async () => {
    const { a, b, clock, close } = await twoOnOneFile();
    try {
      await a.createStream('expired', { partitions: 1 });
      await a.createGroup('expired', 'g', { ordering: 'key', maxAttempts: 1 });
      await a.appendBatch('expired', named('a1', 'a2', 'a3'));
      expect(names(await a.fetch('expired', 'g', { limit: 10, leaseMs: LEASE_MS }))).toEqual(['a1']);
      clock.advance(LEASE_MS);
      const next = await b.fetch('expired', 'g', { limit: 10, leaseMs: LEASE_MS });
      expect(names(next)).toEqual(['a2']);
      expect(await b.countDeadLetters('expired', 'g')).toBe(1);
      expect((await a.groupInfo('expired', 'g')).waitingForKey).toBe(1);
    } finally {
      await close();
    }
  });

  it('cancelDelayed of a parked head and a forced trim of a leased one give their keys on', async () => {
    const { a, b, clock, close } = await twoOnOneFile();
    try {
      await a.createStream('ends', { partitions: 1 });
      await a.createGroup('ends', 'g', { ordering: 'key' });
      const [delayed] = await a.appendBatch('ends', [{ key: 'a', payload: { name: 'a1' }, delayMs: 60_000 }]);
      await a.appendBatch('ends', named('a2', 'b1', 'b2'));
      // a1 is parked (it holds key a), a2 waits behind it; b1 is leased, b2 waits behind it.
      expect(names(await a.fetch('ends', 'g', { limit: 10, leaseMs: LEASE_MS }))).toEqual(['b1']);
      expect((await a.groupInfo('ends', 'g')).waitingForKey).toBe(2);
      expect(await b.cancelDelayed('ends', delayed.id)).toBe(1);
      expect(names(await a.fetch('ends', 'g', { limit: 10, leaseMs: LEASE_MS }))).toEqual(['a2']);
      // Keep only b2: the forced trim takes a1, a2 and the leased b1, and b2 gets its key's place.
      await b.setRetention('ends', { maxEvents: 1 });
      clock.advance(1);
      await b.trim('ends', { force: true });
      expect(names(await a.fetch('ends', 'g', { limit: 10, leaseMs: LEASE_MS }))).toEqual(['b2']);
      expect((await a.groupInfo('ends', 'g')).waitingForKey).toBe(0);
    } finally {
      await close();
    }
  });

  it('limits set by another process hold at the next claim, though this process knew the group without them', async () => {
    const { a, b, close } = await twoOnOneFile();
    try {
      await a.createStream('changed', { partitions: 2 });
      await a.createGroup('changed', 'g');
      await a.appendBatch(
        'changed',
        Array.from({ length: 10 }, (_, i) => ({ payload: { name: `-${i}` } })),
      );
      // a claims (and so knows the group) before b sets the limit.
      const first = await a.fetch('changed', 'g', { limit: 1, leaseMs: LEASE_MS });
      expect(first).toHaveLength(1);
      await b.updateGroup('changed', 'g', { groupConcurrency: 2 });
      expect(await a.fetch('changed', 'g', { limit: 10, leaseMs: LEASE_MS })).toHaveLength(1);
      expect(await a.fetch('changed', 'g', { limit: 10, leaseMs: LEASE_MS })).toEqual([]);
      await b.updateGroup('changed', 'g', { groupConcurrency: null });
      expect(await a.fetch('changed', 'g', { limit: 10, leaseMs: LEASE_MS })).toHaveLength(8);
    } finally {
      await close();
    }
  });

  it('more keyConcurrency set by another process gives waiting events their places at once', async () => {
    const { a, b, close } = await twoOnOneFile();
    try {
      await a.createStream('more', { partitions: 1 });
      await a.createGroup('more', 'g', { keyConcurrency: 1 });
      await a.appendBatch('more', named('a1', 'a2', 'a3', 'a4'));
      expect(names(await a.fetch('more', 'g', { limit: 10, leaseMs: LEASE_MS }))).toEqual(['a1']);
      await b.updateGroup('more', 'g', { keyConcurrency: 3 });
      expect(names(await a.fetch('more', 'g', { limit: 10, leaseMs: LEASE_MS }))).toEqual(['a2', 'a3']);
      expect((await a.groupInfo('more', 'g')).waitingForKey).toBe(1);
    } finally {
      await close();
    }
  });
});

describe('sqlite: flow control across consumer processes on one file', () => {
  /** The run log as [start|end, eventId], in the one order of every process's appends. */
  const runsOf = (file: string) =>
    readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .map((line) => line.split(' ') as [string, string, string]);

  it("ordering 'key' and groupConcurrency 3 hold for two processes: a key's runs never overlap and go in order, at most 3 run at once", async () => {
    // The system clock here: the children's, by which their leases expire.
    const database = join(dir, 'procs.db');
    const a = new Rheo(sqliteBackend({ database }));
    const close = () => a.close();
    const runLog = join(dir, 'runs.log');
    try {
      await a.createStream('procs', { partitions: 2 });
      await a.createGroup('procs', 'g', { ordering: 'key', groupConcurrency: 3 });
      const consumers = await startConsumers(
        2,
        { name: 'sqlite', options: { database } },
        { stream: 'procs', group: 'g', maxDemand: 8, concurrency: 4, leaseMs: 30_000, pollMs: 20, workMs: 2, runLog },
      );
      const appended = await a.appendBatch('procs', keyedEvents().slice(0, 10 * PER_KEY));
      const byId = new Map(appended.map((e) => [e.id, e.payload as { key: string; n: number }]));
      try {
        for (let i = 0; i < 600 && (await a.lag('procs', 'g')).lag > 0; i++) await new Promise((r) => setTimeout(r, 50));
      } finally {
        await consumers.stop();
      }
      const running = new Map<string, string>();
      const next = new Map<string, number>();
      const problems: string[] = [];
      let most = 0;
      let ended = 0;
      for (const [kind, id] of runsOf(runLog)) {
        const { key, n } = byId.get(id)!;
        if (kind === 'start') {
          if (running.has(key)) problems.push(`${key}: ${id} started while ${running.get(key)} ran`);
          if (n !== (next.get(key) ?? 0)) problems.push(`${key}: #${n} ran, #${next.get(key) ?? 0} expected`);
          running.set(key, id);
          most = Math.max(most, running.size);
        } else {
          running.delete(key);
          next.set(key, n + 1);
          ended++;
        }
      }
      expect(problems).toEqual([]);
      expect(ended).toBe(10 * PER_KEY);
      expect(most).toBeLessThanOrEqual(3);
      expect(await a.groupInfo('procs', 'g')).toMatchObject({ waitingForKey: 0, inflight: 0, lag: { lag: 0 } });
    } finally {
      await close();
    }
  }, 120_000);
});
