import Redis from 'ioredis';
import { Lease, ManualClock, Rheo, RheoError, RheoEvent, redisBackend } from '../../lib';
import { escapeName } from '../../lib/backends/redis/keys';
import { PURGE_SLICE, TRIM_SLICE } from '../../lib/backends/redis/retention';
import { ScriptRunner } from '../../lib/backends/redis/script-runner';
import { SCRIPTS } from '../../lib/backends/redis/scripts';
import { deleteKeys, freshPrefix, REDIS_URL } from './support';

// Retention on Redis beyond the conformance suite: trims and purges cut into
// bounded script calls (the work of each call is checked, not its time), the log
// and the idempotency index in step after every slice, forced trims over groups
// mid-rewind, races of starts/replays/resets with trims, retention read fresh by
// every process, and the bounded scan of a query.
const prefix = freshPrefix('retention');
const clock = new ManualClock(Date.UTC(2026, 0, 1));
const rheo = new Rheo(redisBackend({ url: REDIS_URL, prefix, clock }));
const admin = new Redis(REDIS_URL);
let n = 0;
const name = (p: string) => `${p}-${++n}`;
const base = (stream: string) => `${prefix}:{${escapeName(stream)}}`;

beforeAll(async () => {
  await rheo.init();
});

afterAll(async () => {
  admin.disconnect();
  await rheo.close();
  await deleteKeys(prefix);
});

async function appendMany(stream: string, count: number, make: (i: number) => { id?: string; payload: unknown; timestamp?: Date }) {
  for (let from = 0; from < count; from += 10_000) {
    await rheo.appendBatch(
      stream,
      Array.from({ length: Math.min(10_000, count - from) }, (_, i) => make(from + i) as { payload: number }),
    );
  }
}

/** Fetch and ack everything claimable now; returns the sequences handled (partition 0 only streams). */
async function finish(stream: string, group: string): Promise<number[]> {
  const handled: number[] = [];
  for (;;) {
    const leases = await rheo.fetch(stream, group, { limit: 1000, leaseMs: 600_000 });
    if (leases.length === 0) return handled;
    for (const l of leases) handled.push(l.event.sequence);
    const results = await rheo.settleMany(leases.map((lease) => ({ kind: 'ack' as const, lease })));
    expect(results.every((r) => r.ok)).toBe(true);
  }
}

/** The script calls this process makes while `fn` runs, by script name (a spy on the runner: every call still runs). */
async function scriptCalls(fn: () => Promise<unknown>): Promise<Record<string, number>> {
  const spy = jest.spyOn(ScriptRunner.prototype, 'callScript');
  try {
    await fn();
    const counts: Record<string, number> = {};
    for (const [script] of spy.mock.calls) counts[script] = (counts[script] ?? 0) + 1;
    return counts;
  } finally {
    spy.mockRestore();
  }
}

describe('redis trim: bounded slices, the log and the id index in step', () => {
  it('one slice deletes at most its budget: entries and their ids together, the trim point moved', async () => {
    const stream = name('slice');
    await rheo.createStream(stream);
    await appendMany(stream, 1000, (i) => ({ id: `e${i + 1}`, payload: i }));
    await rheo.createGroup(stream, 'g');
    await finish(stream, 'g');
    const b = base(stream);
    const gk = `${b}:g:g`;
    // The TRIM script by hand, as the backend calls it: by default everything up to 900 may go, budget 250.
    const slice = (upTo = 900, force = 0) =>
      admin.eval(
        SCRIPTS.trim,
        9,
        `${b}:meta`,
        `${b}:ids`,
        `${b}:groups`,
        `${b}:log:0`,
        `${b}:wake`,
        `${gk}:cfg`,
        `${gk}:dl`,
        `${gk}:leased:0`,
        `${gk}:avail:0`,
        0,
        upTo,
        '',
        force,
        250,
        'g',
      );
    expect(await slice()).toEqual(['more', 250, 250, '', 0]);
    expect(await admin.xlen(`${b}:log:0`)).toBe(750);
    expect(await admin.hlen(`${b}:ids`)).toBe(750);
    expect(await admin.hmget(`${b}:ids`, 'e1', 'e250', 'e251')).toEqual([null, null, '0:251']);
    expect(await admin.hget(`${b}:meta`, 'lw:0')).toBe('250');
    // Consistent between slices: reads start after the point, a re-append of a trimmed id is a new event.
    expect((await rheo.read(stream, { limit: 1 }))[0].sequence).toBe(251);
    expect((await rheo.append(stream, { id: 'e1', payload: 'new' })).sequence).toBe(1001);
    expect(await slice()).toEqual(['more', 250, 500, '', 0]);
    expect(await slice()).toEqual(['more', 250, 750, '', 0]);
    expect(await slice()).toEqual(['done', 150, 900, '', 0]);
    expect(await slice()).toEqual(['done', 0, 900, '', 0]);
    // Unforced, a slice never passes a group's frontier: g has not finished 1001.
    expect(await slice(1001, 0)).toEqual(['capped', 100, 1000, '', 0]);
    // A group the caller did not name (created since it listed them): the slice refuses and deletes nothing.
    await rheo.createGroup(stream, 'late', { start: 'beginning' });
    expect(await slice(1001, 1)).toEqual(['regroup']);
    expect(await admin.hget(`${b}:meta`, 'lw:0')).toBe('1000');
  });

  it('trims 20,000 events in many calls of at most one slice; every trimmed id can be appended anew', async () => {
    const stream = name('many');
    await rheo.createStream(stream);
    await appendMany(stream, 20_000, (i) => ({ id: `order-${i + 1}`, payload: { i } }));
    await rheo.createGroup(stream, 'g');
    await finish(stream, 'g');
    await rheo.setRetention(stream, { maxEvents: 100 });
    let result: unknown;
    const calls = await scriptCalls(async () => {
      result = await rheo.trim(stream);
    });
    expect(result).toEqual({ stream, removed: 19_900, partitions: [{ partition: 0, trimmedTo: 19_900 }], skipped: { g: 0 } });
    expect(calls.trim).toBe(Math.ceil(19_900 / TRIM_SLICE));
    const b = base(stream);
    expect(await admin.xlen(`${b}:log:0`)).toBe(100);
    expect(await admin.hlen(`${b}:ids`)).toBe(100);
    // Trimmed ids make new events; kept ones still return the stored event.
    const again = await rheo.appendBatch(stream, [
      { id: 'order-1', payload: 'a' },
      { id: 'order-10000', payload: 'b' },
      { id: 'order-19950', payload: 'c' },
    ]);
    expect(again.map((e) => [e.sequence, e.payload])).toEqual([
      [20_001, 'a'],
      [20_002, 'b'],
      [19_950, { i: 19_949 }],
    ]);
    expect(await rheo.query({ stream, where: { payload: { i: 5 } } })).toEqual([]);
  });

  it('finds the age bound while it trims: slices read the timestamps of the entries they delete', async () => {
    const stream = name('age');
    await rheo.createStream(stream);
    const t0 = clock.now();
    // Timestamps rise by 1 s, except event 2000 which is stamped in the future: the first one inside the age.
    await appendMany(stream, 3000, (i) => ({ payload: i, timestamp: new Date(i === 1999 ? t0 + 10_000_000 : t0 + i * 1000) }));
    await rheo.createGroup(stream, 'g');
    await finish(stream, 'g');
    clock.set(t0 + 2_600_000);
    await rheo.setRetention(stream, { maxAgeMs: 100_000 });
    // Cut-off t0 + 2,500 s: events up to 1999 go (event 2000 is the first stamped after the cut-off).
    let result: unknown;
    const calls = await scriptCalls(async () => {
      result = await rheo.trim(stream);
    });
    expect(result).toMatchObject({ removed: 1999, partitions: [{ partition: 0, trimmedTo: 1999 }] });
    expect(calls.trim).toBe(Math.ceil(1999 / TRIM_SLICE));
    // With a count limit letting more go, the count wins.
    await rheo.setRetention(stream, { maxAgeMs: 100_000, maxEvents: 500 });
    expect((await rheo.trim(stream)).partitions).toEqual([{ partition: 0, trimmedTo: 2500 }]);
  });
});

describe('redis forced trim: groups behind, and groups mid-rewind', () => {
  it('moves a group whose rewind is under way: the rewind ends at the trim point, nothing trimmed is leased', async () => {
    const stream = name('rewind');
    await rheo.createStream(stream);
    await appendMany(stream, 3000, (i) => ({ payload: i }));
    await rheo.createGroup(stream, 'g');
    await finish(stream, 'g');
    const b = base(stream);
    const gk = `${b}:g:g`;
    // A replay to 0 whose rewind has not begun (REPLAY by hand: the target is recorded, no slice ran).
    expect(await admin.eval(SCRIPTS.replay, 3, `${b}:meta`, `${gk}:cfg`, `${b}:wake`, 'sequence', 0, 0)).toEqual([3000, 0]);
    await rheo.setRetention(stream, { maxEvents: 1000 });
    // Unforced: the rewind's target holds the trim (the replayed events are not finished).
    expect((await rheo.trim(stream)).removed).toBe(0);
    const forced = await rheo.trim(stream, { force: true });
    // The group had finished everything, so nothing counts as skipped; its rewind now ends at 2000.
    expect(forced).toEqual({ stream, removed: 2000, partitions: [{ partition: 0, trimmedTo: 2000 }], skipped: { g: 0 } });
    expect(await admin.hget(`${gk}:cfg`, 'rw:0')).toBe('2000');
    const handled = await finish(stream, 'g');
    expect(handled).toEqual(Array.from({ length: 1000 }, (_, i) => 2001 + i));
    expect(await admin.hget(`${gk}:cfg`, 'rw:0')).toBeNull();
    expect((await rheo.lag(stream, 'g')).lag).toBe(0);
  });

  it('counts what each lagging group skipped in every slice, and drops its deliveries below the point', async () => {
    const stream = name('skipped');
    await rheo.createStream(stream, { partitions: 2 });
    await appendMany(stream, 2000, (i) => ({ partition: i % 2, payload: i }) as never);
    await rheo.createGroup(stream, 'idle');
    await rheo.createGroup(stream, 'busy');
    // busy: everything leased, every 4th rejected, every 4th + 1 nacked for later, the rest acked.
    for (;;) {
      const leases = await rheo.fetch(stream, 'busy', { limit: 1000, leaseMs: 600_000 });
      if (leases.length === 0) break;
      await rheo.settleMany(
        leases.map((lease) => {
          const s = lease.event.sequence;
          if (s % 4 === 0) return { kind: 'reject' as const, lease, reason: 'x' };
          if (s % 4 === 1) return { kind: 'nack' as const, lease, reason: 'later', delayMs: 600_000 };
          return { kind: 'ack' as const, lease };
        }),
      );
    }
    await rheo.setRetention(stream, { maxEvents: 100 });
    const result = await rheo.trim(stream, { force: true });
    // 900 per partition go. idle had offered none: 900 each. busy: the nacked quarter, 225 each.
    expect(result).toEqual({
      stream,
      removed: 1800,
      partitions: [
        { partition: 0, trimmedTo: 900 },
        { partition: 1, trimmedTo: 900 },
      ],
      skipped: { idle: 1800, busy: 450 },
    });
    const gk = `${base(stream)}:g:busy`;
    // busy's records and retry entries at or below the point are gone with the events.
    expect(await admin.zcount(`${gk}:avail:0`, '-inf', '+inf')).toBe(25);
    expect(await admin.hlen(`${gk}:dl`)).toBe(2 * (25 + 25 + 50));
    // Its dead letters stay (dead letters outlive their events).
    expect(await admin.hlen(`${gk}:dead`)).toBe(500);
    expect((await rheo.lag(stream, 'idle')).partitions.map((p) => [p.frontier, p.lag])).toEqual([
      [900, 100],
      [900, 100],
    ]);
  });

  it('races starts, replays and resets against trims: no group is left among deleted events, or stuck', async () => {
    for (let round = 0; round < 12; round++) {
      const stream = name('race');
      await rheo.createStream(stream);
      await appendMany(stream, 1500, (i) => ({ payload: i }));
      await rheo.createGroup(stream, 'g');
      await finish(stream, 'g');
      await rheo.setRetention(stream, { maxEvents: 200 });
      const force = round % 2 === 0;
      const late = `late-${round}`;
      const moves: Array<Promise<unknown>> = [
        rheo.createGroup(stream, late, { start: 'beginning' }),
        round % 3 === 0 ? rheo.replay(stream, 'g', { afterSequence: 0 }) : rheo.reset(stream, 'g', { confirm: true, start: 'beginning' }),
      ];
      const [trimmed] = await Promise.all([rheo.trim(stream, { force }), ...moves]);
      const point = Number(await admin.hget(`${base(stream)}:meta`, 'lw:0'));
      expect(point).toBeGreaterThanOrEqual(trimmed.partitions[0].trimmedTo);
      for (const group of ['g', late]) {
        // Every lease carries its event, each event from the group's start to the end exactly once.
        const handled = await finish(stream, group);
        expect(handled.length).toBeGreaterThan(0);
        expect(handled.every((s) => s > point)).toBe(true);
        expect(handled).toEqual(Array.from({ length: handled.length }, (_, i) => handled[0] + i));
        expect(handled[handled.length - 1]).toBe(1500);
        expect((await rheo.lag(stream, group)).lag).toBe(0);
      }
      if (!force) {
        // Unforced, the group created at the beginning held whatever had not been trimmed yet.
        const handled = await rheo.read(stream, { limit: 1 });
        expect(handled[0].sequence).toBe(point + 1);
      }
    }
  }, 120_000);

  it('keeps idempotent appends right while a trim runs: a known id returns its event, a trimmed one a new event', async () => {
    const stream = name('append-race');
    await rheo.createStream(stream);
    await appendMany(stream, 4000, (i) => ({ id: `k${i}`, payload: i }));
    await rheo.setRetention(stream, { maxEvents: 10 });
    let trimming = true;
    const answers: RheoEvent[] = [];
    const appends = (async () => {
      // Ids from the oldest up, again and again while the trim runs, then a few it has certainly taken.
      for (let i = 0; trimming; i = (i + 97) % 4000) answers.push(await rheo.append(stream, { id: `k${i}`, payload: 'again' }));
      for (let i = 0; i < 5; i++) answers.push(await rheo.append(stream, { id: `k${i}`, payload: 'again' }));
    })();
    const trimmed = await rheo.trim(stream);
    trimming = false;
    await appends;
    expect(trimmed.partitions).toEqual([{ partition: 0, trimmedTo: 3990 }]);
    for (const e of answers) {
      // Either the stored event, as stored, or a new one after the old high watermark.
      if (e.sequence <= 4000) expect(e.payload).toBe(Number(e.id.slice(1)));
      else expect(e.payload).toBe('again');
    }
    expect(answers.some((e) => e.sequence > 4000)).toBe(true);
    // Now each id's latest event: kept if it is new or among the last 10, else gone (a third append makes a new one).
    const latest = new Map<string, RheoEvent>();
    for (const e of answers) if ((latest.get(e.id)?.sequence ?? 0) < e.sequence) latest.set(e.id, e);
    for (const [id, e] of latest) {
      const now = await rheo.append(stream, { id, payload: 'third' });
      if (e.sequence > 3990) expect(now.sequence).toBe(e.sequence);
      else expect(now.payload).toBe('third');
    }
    expect(await admin.hlen(`${base(stream)}:ids`)).toBe(await admin.xlen(`${base(stream)}:log:0`));
  });
});

describe('redis purge of dead letters', () => {
  async function deadLetterAll(stream: string, group: string, stepMs: number): Promise<void> {
    for (;;) {
      const leases: Lease[] = await rheo.fetch(stream, group, { limit: 1000, leaseMs: 600_000 });
      if (leases.length === 0) return;
      for (let i = 0; i < leases.length; i += 100) {
        clock.advance(stepMs);
        await rheo.settleMany(leases.slice(i, i + 100).map((lease) => ({ kind: 'reject' as const, lease, reason: 'bad' })));
      }
    }
  }

  it('purges by time through the time index, oldest first, in calls of at most one step', async () => {
    const stream = name('purge');
    await rheo.createStream(stream);
    await appendMany(stream, 20_000, (i) => ({ payload: i }));
    await rheo.createGroup(stream, 'g');
    const t0 = clock.now();
    await deadLetterAll(stream, 'g', 10); // 100 dead letters per 10 ms
    expect((await rheo.groupInfo(stream, 'g')).deadLetters).toBe(20_000);
    let purged = 0;
    const calls = await scriptCalls(async () => {
      purged = await rheo.purgeDeadLetters(stream, 'g', { before: new Date(t0 + 1000) });
    });
    // Dead-lettered at t0 + 10 .. t0 + 990 in steps of 100: 99 steps.
    expect(purged).toBe(9900);
    expect(calls.purge).toBe(Math.floor(9900 / PURGE_SLICE) + 1);
    expect((await rheo.groupInfo(stream, 'g')).deadLetters).toBe(10_100);
    expect((await rheo.deadLetters(stream, 'g', { limit: 1 }))[0].sequence).toBe(9901);
    // All: one call, whatever the count.
    const all = await scriptCalls(async () => {
      expect(await rheo.purgeDeadLetters(stream, 'g', { all: true })).toBe(10_100);
    });
    expect(all.purge).toBe(1);
    expect(await admin.exists(`${base(stream)}:g:g:dead`, `${base(stream)}:g:g:deadz`, `${base(stream)}:g:g:deadt`)).toBe(0);
  });

  it('goes by the record: a time index entry older than its dead letter does not purge it', async () => {
    const stream = name('stale-index');
    await rheo.createStream(stream);
    const [e] = await rheo.appendBatch(stream, [{ payload: 1 }]);
    await rheo.createGroup(stream, 'g');
    const t0 = clock.now();
    await deadLetterAll(stream, 'g', 1000);
    // As a writer of layout 1 would leave it after a redrive and a second dead-lettering: the index is stale.
    await admin.zadd(`${base(stream)}:g:g:deadt`, String(t0 - 5000), e.id);
    expect(await rheo.purgeDeadLetters(stream, 'g', { before: new Date(t0) })).toBe(0);
    expect(await admin.zscore(`${base(stream)}:g:g:deadt`, e.id)).toBe(String(t0 + 1000));
    expect(await rheo.deadLetters(stream, 'g')).toHaveLength(1);
  });
});

describe('redis retention is read fresh by every process', () => {
  it("another process's setRetention shows in getStream and listStreams at once", async () => {
    const stream = name('fresh');
    const other = new Rheo(redisBackend({ url: REDIS_URL, prefix, clock }));
    try {
      await other.init();
      await rheo.createStream(stream, { retention: { maxEvents: 5 } });
      expect((await other.backend.getStream(stream))?.retention).toEqual({ maxEvents: 5 });
      await rheo.setRetention(stream, { maxAgeMs: 1000, deadLetterMaxAgeMs: 2000 });
      expect((await other.backend.getStream(stream))?.retention).toEqual({ maxAgeMs: 1000, deadLetterMaxAgeMs: 2000 });
      expect((await other.listStreams()).find((s) => s.name === stream)?.retention).toEqual({ maxAgeMs: 1000, deadLetterMaxAgeMs: 2000 });
      await rheo.setRetention(stream, {});
      expect((await other.backend.getStream(stream))?.retention).toBeUndefined();
      expect(await admin.hmget(`${base(stream)}:meta`, 'ra', 're', 'rd')).toEqual([null, null, null]);
    } finally {
      await other.close();
    }
  });
});

describe('redis query: a bounded scan per call', () => {
  it('reads the log in query order only as far as the page needs, pages never skip or repeat', async () => {
    const small = new Rheo(redisBackend({ url: REDIS_URL, prefix, clock, queryScanLimit: 3000 }));
    try {
      const stream = name('scan');
      await small.createStream(stream, { partitions: 3 });
      // Partition 0 gets twice as many events; every 50th event is a match.
      await appendMany(stream, 6000, (i) => ({ partition: i % 4 === 3 ? 0 : i % 3, payload: { m: i % 50 === 0 } }) as never);
      const matching = (await rheo.queryPage({ stream, limit: 1000 })).items.length;
      expect(matching).toBe(1000);
      for (const order of ['asc', 'desc'] as const) {
        const seen: string[] = [];
        let cursor: string | undefined;
        do {
          const page = await small.queryPage({ stream, where: { payload: { m: true } }, order, limit: 7, cursor });
          seen.push(...page.items.map((e) => `${e.sequence}.${e.partition}`));
          cursor = page.nextCursor ?? undefined;
        } while (cursor);
        expect(seen).toHaveLength(120);
        expect(new Set(seen).size).toBe(120);
        const sorted = [...seen].sort((a, b) => {
          const [as, ap] = a.split('.').map(Number);
          const [bs, bp] = b.split('.').map(Number);
          return as - bs || ap - bp;
        });
        expect(seen).toEqual(order === 'asc' ? sorted : sorted.reverse());
      }
      // A filter matching nothing reads up to the bound, then says so instead of ending the paging early.
      const err = await small.query({ stream, where: { payload: { m: 'never' } } }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(RheoError);
      expect((err as RheoError).code).toBe('invalid_argument');
      expect((err as RheoError).field).toBe('where');
      expect((err as RheoError).message).toMatch(/within 3\d\d\d events read.*queryScanLimit/);
      // Narrowed to what the bound covers, it answers (an empty last page).
      expect(await small.query({ stream, where: { payload: { m: 'never' } }, afterSequence: 1200 })).toEqual([]);
      // After a trim, nothing below the trim point is read.
      await rheo.createGroup(stream, 'g');
      await finish(stream, 'g');
      await rheo.setRetention(stream, { maxEvents: 300 });
      await rheo.trim(stream);
      expect(await small.query({ stream, where: { payload: { m: 'never' } } })).toEqual([]);
    } finally {
      await small.close();
    }
  });

  it('refuses a bad queryScanLimit naming the option', () => {
    for (const bad of [0, 1.5, -1, '10']) {
      let caught: unknown;
      try {
        redisBackend({ url: REDIS_URL, prefix, queryScanLimit: bad as number });
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(RheoError);
      expect((caught as RheoError).field).toBe('queryScanLimit');
    }
  });
});
