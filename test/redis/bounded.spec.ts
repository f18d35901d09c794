import Redis from 'ioredis';
import { Lease, Rheo, redisBackend, RheoError } from '../../lib';
import { SCRIPTS } from '../../lib/backends/redis/scripts';
import { MAX_PAGE_LIMIT } from '../../lib/core/limits';
import { deleteKeys, freshPrefix, REDIS_URL, type ScriptCall, ScriptCalls } from './support';

// Bulk calls at the sizes users reach (100k dead letters, a 40k-event replay,
// 10k-lease batches) and a backlog of 100k acked records behind one stuck event.
// Two things are checked: the call works at all (no argument array is spread
// into a call: that overflows the JS stack above ~125k values), and no single
// Lua script does unbounded work, since a script blocks the whole Redis server
// while it runs (docs/adr/014-redis-bounded-scripts.md). Measured by what the
// backend sends, not by the clock: every script call is recorded with its
// arguments, each is given at most its bound (100 ops or claims or events, 500
// records, a page of the caller's limit), and the operation took as many calls as its size needs, which a
// script that ignored its bound (and so finished in one call) would not.
const OPS_PER_CALL = 100;
const RECORDS_PER_SLICE = 500;
const prefix = freshPrefix('bounded');
const backend = redisBackend({ url: REDIS_URL, prefix });
const rheo = new Rheo(backend);
let recorder: ScriptCalls;
let n = 0;
const streams: string[] = [];
const name = (p: string) => {
  const stream = `${p}-${++n}`;
  streams.push(stream);
  return stream;
};

beforeAll(async () => {
  await rheo.init();
  recorder = new ScriptCalls(backend);
});

// Each test's keys go with it (a 100k-event stream is ~100 MB of the shared server), the rest after the file.
afterEach(async () => {
  for (const stream of streams.splice(0)) await deleteKeys(`${prefix}:{${stream}}`);
});

afterAll(async () => {
  try {
    await rheo.close();
  } finally {
    await deleteKeys(prefix);
  }
});

/** Scripts whose work does not grow with the backlog or the call (a replay records its target, a reset UNLINKs). */
const CONSTANT = new Set(['replay', 'reset', 'inspect', 'dead-letters', 'count-dead-letters', 'layout']);

/** Settle's ops, one flat JSON array: per op by kind, 'a' 5 values, 'r' 6, 'n' 7 (scripts/settle.ts). */
function settleOps(json: string): number {
  const flat = JSON.parse(json) as unknown[];
  let ops = 0;
  for (let i = 0; i < flat.length; ops++) i += flat[i] === 'a' ? 5 : flat[i] === 'r' ? 6 : 7;
  return ops;
}

/** What one call was given to do, against its bound, from the argument layouts of scripts/*.ts. */
function sizes(c: ScriptCall): Array<{ of: string; size: number; bound: number }> {
  switch (c.script) {
    case 'renew':
      return [{ of: 'leases', size: (JSON.parse(c.args[2]) as unknown[]).length / 4, bound: OPS_PER_CALL }];
    case 'release':
      return [{ of: 'leases', size: (JSON.parse(c.args[1]) as unknown[]).length / 4, bound: OPS_PER_CALL }];
    case 'settle':
      return [
        { of: 'ops', size: settleOps(c.args[c.args.length - 1]), bound: OPS_PER_CALL },
        { of: 'walked records', size: Number(c.args[1]), bound: RECORDS_PER_SLICE },
      ];
    case 'fetch':
      return [{ of: 'claims', size: Number(c.args[1]), bound: OPS_PER_CALL }];
    case 'redrive':
      return [{ of: 'dead letters', size: Number(c.args[2]), bound: OPS_PER_CALL }];
    case 'reopen':
      return [{ of: 'events', size: (c.args.length - 2) / 4, bound: OPS_PER_CALL }];
    case 'deadLetters':
      return [{ of: 'dead letters', size: Number(c.args[0]), bound: MAX_PAGE_LIMIT }];
    case 'tidy':
      return [{ of: 'records', size: Number(c.args[0]), bound: RECORDS_PER_SLICE }];
    default:
      return [];
  }
}

/**
 * Every script call since recorder.start() was given at most its bound, and each
 * script named in `atLeast` ('a+b': the two together) took at least that many calls.
 */
function expectSliced(what: string, atLeast: Record<string, number>): void {
  const calls = recorder.calls();
  const perScript = new Map<string, { calls: number; largest: number }>();
  for (const c of calls) {
    const s = perScript.get(c.script) ?? { calls: 0, largest: 0 };
    perScript.set(c.script, { calls: s.calls + 1, largest: Math.max(s.largest, ...sizes(c).map((x) => x.size)) });
  }
  // Printed so a run shows the figures, not just pass/fail.
  const summary = [...perScript].map(([script, s]) => `${script} ${s.calls} call(s), largest ${s.largest}`).join('; ');
  process.stdout.write(`[bounded] ${what}: ${summary}\n`);
  expect(calls.filter((c) => sizes(c).length === 0 && !CONSTANT.has(c.script)).map((c) => c.script)).toEqual([]);
  const over = calls.flatMap((c) =>
    sizes(c)
      .filter((x) => x.size > x.bound)
      .map((x) => `${c.script}: ${x.size} ${x.of} > ${x.bound}`),
  );
  expect(over).toEqual([]);
  for (const [scripts, min] of Object.entries(atLeast)) {
    const made = scripts.split('+').reduce((sum, script) => sum + (perScript.get(script)?.calls ?? 0), 0);
    expect({ scripts, calls: made >= min ? `at least ${min}` : made }).toEqual({ scripts, calls: `at least ${min}` });
  }
}

/** Append `count` events in batches of 10,000 (one script call per batch, run concurrently). */
async function appendMany(
  stream: string,
  count: number,
  make: (i: number) => { key?: string; type?: string; payload: number } = (i) => ({ payload: i }),
) {
  const batches: Array<Promise<unknown>> = [];
  for (let from = 0; from < count; from += 10_000) {
    batches.push(
      rheo.appendBatch(
        stream,
        Array.from({ length: Math.min(10_000, count - from) }, (_, i) => make(from + i)),
      ),
    );
  }
  await Promise.all(batches);
}

/** Fetch everything there is (limit 1000 per fetch) and hand each batch to `settle`. */
async function drain(stream: string, group: string, settle: (leases: Lease[]) => Promise<void>): Promise<number> {
  let total = 0;
  for (;;) {
    const leases = await rheo.fetch(stream, group, { limit: 1000, leaseMs: 600_000 });
    if (leases.length === 0) return total;
    total += leases.length;
    await settle(leases);
  }
}

async function expectAllOk(results: Array<{ ok: boolean }>, count: number) {
  expect(results).toHaveLength(count);
  const failed = results.filter((r) => !r.ok);
  expect(failed).toEqual([]);
}

describe('redis: bulk calls at size, each script call bounded', () => {
  it('renews, releases and settles 10,000 leases, each in one call', async () => {
    const stream = name('ten-k');
    await rheo.createStream(stream, { partitions: 2 });
    await rheo.createGroup(stream, 'g');
    await appendMany(stream, 10_000, (i) => ({ key: `k${i % 50}`, payload: i }));
    const leases: Lease[] = [];
    for (let i = 0; i < 10; i++) leases.push(...(await rheo.fetch(stream, 'g', { limit: 1000, leaseMs: 600_000 })));
    expect(leases).toHaveLength(10_000);

    recorder.start();
    await expectAllOk(await rheo.renewMany(leases, { leaseMs: 900_000 }), 10_000);
    await expectAllOk(await rheo.releaseMany(leases), 10_000);
    expectSliced('renew and release of 10,000 leases', { renew: 100, release: 100 });
    // Released: claimable at once, with the attempt they had.
    const again: Lease[] = [];
    for (let i = 0; i < 10; i++) again.push(...(await rheo.fetch(stream, 'g', { limit: 1000, leaseMs: 600_000 })));
    expect(again).toHaveLength(10_000);
    expect(again.every((l) => l.attempt === 1)).toBe(true);
    recorder.start();
    await expectAllOk(await rheo.settleMany(again.map((lease) => ({ kind: 'ack' as const, lease }))), 10_000);
    expect((await rheo.lag(stream, 'g')).lag).toBe(0);
    expectSliced('settle of 10,000 leases', { settle: 100 });
  }, 120_000);

  it('redrives 100,000 dead letters with { all: true }, then resets the group', async () => {
    const stream = name('redrive');
    await rheo.createStream(stream, { partitions: 4 });
    await rheo.createGroup(stream, 'g');
    await appendMany(stream, 100_000, (i) => ({ key: `k${i % 97}`, payload: i }));
    const rejected = await drain(stream, 'g', async (leases) => {
      await expectAllOk(await rheo.settleMany(leases.map((lease) => ({ kind: 'reject' as const, lease, reason: 'bad' }))), leases.length);
    });
    expect(rejected).toBe(100_000);
    expect((await rheo.groupInfo(stream, 'g')).deadLetters).toBe(100_000);
    recorder.start();

    expect(await rheo.redrive(stream, 'g', { all: true })).toBe(100_000);
    const info = await rheo.groupInfo(stream, 'g');
    expect(info.deadLetters).toBe(0);
    expect(info.lag.lag).toBe(100_000);
    expect(info.lag.partitions.every((p) => p.frontier === 0)).toBe(true);
    expect(await rheo.deadLetters(stream, 'g')).toEqual([]);
    const redelivered = await rheo.fetch(stream, 'g', { limit: 1000 });
    expect(redelivered).toHaveLength(1000);
    expect(redelivered.every((l) => l.attempt === 1)).toBe(true);
    expectSliced('redrive of 100,000 dead letters', { redrive: 1000 });

    // Reset forgets 100k delivery records and retry entries: it must not free them inside one script.
    recorder.start();
    await rheo.reset(stream, 'g', { confirm: true, start: 'end' });
    const after = await rheo.groupInfo(stream, 'g');
    expect(after).toMatchObject({ inflight: 0, deadLetters: 0, lag: { lag: 0 } });
    expect(await rheo.fetch(stream, 'g', { limit: 10 })).toEqual([]);
    expectSliced('reset over 100,000 delivery records', { reset: 1 });
  }, 300_000);

  it('replays a query matching 40,000 events', async () => {
    const stream = name('replay-query');
    await rheo.createStream(stream, { partitions: 2 });
    await rheo.createGroup(stream, 'g');
    // 50k events, 4 in 5 of type 'match'.
    await appendMany(stream, 50_000, (i) => ({ key: `k${i % 31}`, type: i % 5 === 4 ? 'other' : 'match', payload: i }));
    const acked = await drain(stream, 'g', async (leases) => {
      await expectAllOk(await rheo.settleMany(leases.map((lease) => ({ kind: 'ack' as const, lease }))), leases.length);
    });
    expect(acked).toBe(50_000);
    expect((await rheo.lag(stream, 'g')).lag).toBe(0);
    recorder.start();

    expect(await rheo.replay(stream, 'g', { query: { where: { type: 'match' } } })).toBe(40_000);
    expect((await rheo.lag(stream, 'g')).lag).toBe(50_000);
    expectSliced('replay of a 40,000-event query', { reopen: 400 });
    const types = new Set<string | null>();
    const redelivered = await drain(stream, 'g', async (leases) => {
      for (const l of leases) {
        types.add(l.event.type);
        expect(l.attempt).toBe(1);
      }
      await rheo.settleMany(leases.map((lease) => ({ kind: 'ack' as const, lease })));
    });
    expect(redelivered).toBe(40_000);
    expect([...types]).toEqual(['match']);
    expect((await rheo.lag(stream, 'g')).lag).toBe(0);
  }, 300_000);
});

describe('redis: the frontier and rewinds move in bounded slices', () => {
  it('100,000 acks behind one unsettled event: settling it walks the frontier to the end in bounded script calls', async () => {
    const stream = name('stuck');
    const N = 100_001;
    await rheo.createStream(stream);
    await rheo.createGroup(stream, 'g');
    await appendMany(stream, N);
    const [stuck] = await rheo.fetch(stream, 'g', { limit: 1, leaseMs: 600_000 });
    expect(stuck.event.sequence).toBe(1);

    const acked = await drain(stream, 'g', async (leases) => {
      await expectAllOk(await rheo.settleMany(leases.map((lease) => ({ kind: 'ack' as const, lease }))), leases.length);
    });
    expect(acked).toBe(N - 1);
    // Every ack above the hole left a record; the frontier has not moved.
    expect(await rheo.lag(stream, 'g')).toMatchObject({ lag: N, partitions: [{ frontier: 0, highWatermark: N }] });

    recorder.start();
    await rheo.ack(stuck);
    expect(await rheo.lag(stream, 'g')).toMatchObject({ lag: 0, partitions: [{ frontier: N, highWatermark: N }] });
    // The records behind the frontier are gone, not just passed.
    const admin = new Redis(REDIS_URL);
    try {
      expect(await admin.hlen(`${prefix}:{${stream}}:g:g:dl`)).toBe(0);
    } finally {
      admin.disconnect();
    }
    expectSliced('frontier walk over 100,000 acked records', { 'settle+tidy': 200 });
  }, 300_000);

  it('replay { afterSequence: 0 } over 40,000 acked records and 20,000 dead letters rewinds in bounded slices', async () => {
    const stream = name('rewind');
    const N = 60_001;
    await rheo.createStream(stream);
    await rheo.createGroup(stream, 'g');
    await appendMany(stream, N);
    const [stuck] = await rheo.fetch(stream, 'g', { limit: 1, leaseMs: 600_000 });
    await drain(stream, 'g', async (leases) => {
      await rheo.settleMany(
        leases.map((lease) =>
          lease.event.sequence % 3 === 0 ? { kind: 'reject' as const, lease, reason: 'no' } : { kind: 'ack' as const, lease },
        ),
      );
    });
    expect((await rheo.groupInfo(stream, 'g')).deadLetters).toBe(20_000);
    recorder.start();

    expect(await rheo.replay(stream, 'g', { afterSequence: 0 })).toBe(N);
    const info = await rheo.groupInfo(stream, 'g');
    expect(info).toMatchObject({ deadLetters: 0, inflight: 0, lag: { lag: N, partitions: [{ frontier: 0 }] } });
    // The lease from before the replay no longer fences anything.
    const err = await rheo.ack(stuck).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RheoError);
    expect((err as RheoError).code).toBe('stale_lease');
    // Everything is fresh again: delivered from sequence 1 with attempt 1.
    const first = await rheo.fetch(stream, 'g', { limit: 1000 });
    expect(first.map((l) => l.event.sequence)).toEqual(Array.from({ length: 1000 }, (_, i) => i + 1));
    expect(first.every((l) => l.attempt === 1)).toBe(true);
    expectSliced('replay over 40,000 records and 20,000 dead letters', { tidy: 120 });
  }, 300_000);
});

describe('redis: a process that dies between slices leaves a consistent state, finished by the next fetch or lag', () => {
  // One slice is run by hand with the real script (what a process does right before it
  // dies); the loop that would finish the work never runs. Key names and script
  // arguments follow the layouts documented in keys.ts and scripts/*.ts.
  const admin = new Redis(REDIS_URL);
  afterAll(() => admin.disconnect());
  const base = (stream: string) => `${prefix}:{${stream}}`;
  const groupKeys = (stream: string, group: string) => {
    const g = `${base(stream)}:g:${group}`;
    return {
      meta: `${base(stream)}:meta`,
      cfg: `${g}:cfg`,
      dl: `${g}:dl`,
      dead: `${g}:dead`,
      deadz: `${g}:deadz`,
      deadt: `${g}:deadt`,
      wake: `${base(stream)}:wake`,
      leased: `${g}:leased:0`,
      avail: `${g}:avail:0`,
      log: `${base(stream)}:log:0`,
    };
  };
  const frontier = async (stream: string, group: string) => Number(await admin.hget(groupKeys(stream, group).cfg, 'f:0'));

  it('an ack whose frontier walk was cut short: the next fetch (one group) or lag (another) finishes it', async () => {
    const stream = name('crash-walk');
    const N = 5001;
    await rheo.createStream(stream);
    await rheo.createGroup(stream, 'a');
    await rheo.createGroup(stream, 'b');
    await appendMany(stream, N);
    const stuck: Record<string, Lease> = {};
    for (const group of ['a', 'b']) {
      [stuck[group]] = await rheo.fetch(stream, group, { limit: 1, leaseMs: 600_000 });
      await drain(stream, group, async (leases) => {
        await rheo.settleMany(leases.map((lease) => ({ kind: 'ack' as const, lease })));
      });
      // The SETTLE script with a budget of 100 records: the ack applies, the walk stops early.
      const k = groupKeys(stream, group);
      const l = stuck[group];
      const reply = (await admin.eval(
        SCRIPTS.settle,
        10,
        k.meta,
        k.cfg,
        k.dl,
        k.dead,
        k.deadz,
        k.wake,
        k.deadt,
        k.leased,
        k.avail,
        k.log,
        Date.now(),
        100,
        // The ops, one JSON text (scripts/settle.ts): an ack of partition 0, sequence 1, its receipt right.
        JSON.stringify(['a', '0', '1', l.receipt === '0-1', l.leaseId]),
      )) as unknown[];
      // The ack's 'ok', the walk cut short (1), and the group's stored maxAttempts (the default, 5).
      expect(reply).toEqual(['ok', 1, 5]);
      const f = await frontier(stream, group);
      expect(f).toBeGreaterThan(1);
      expect(f).toBeLessThan(N);
    }

    // Another process, knowing nothing of the dead one.
    const other = new Rheo(redisBackend({ url: REDIS_URL, prefix }));
    try {
      // Consistent meanwhile: the acked event stays acked (its lease is spent), nothing is claimable twice.
      const err = await other.ack(stuck.a).catch((e: unknown) => e);
      expect((err as RheoError).code).toBe('stale_lease');
      // Group a: a fetch finds the walk unfinished and finishes it (there is nothing to claim).
      expect(await other.fetch(stream, 'a', { limit: 10 })).toEqual([]);
      expect(await frontier(stream, 'a')).toBe(N);
      expect(await admin.hlen(groupKeys(stream, 'a').dl)).toBe(0);
      // Group b: lag finishes it before it answers.
      expect(await frontier(stream, 'b')).toBeLessThan(N);
      expect(await other.lag(stream, 'b')).toMatchObject({ lag: 0, partitions: [{ frontier: N }] });
      expect(await admin.hlen(groupKeys(stream, 'b').dl)).toBe(0);
    } finally {
      await other.close();
    }
  }, 120_000);

  it('a replay whose rewind stopped after one slice: claims wait for it, and the next lag or fetch finishes it', async () => {
    const stream = name('crash-rewind');
    const N = 3000;
    await rheo.createStream(stream);
    await rheo.createGroup(stream, 'g');
    await appendMany(stream, N);
    let held: Lease[] = [];
    await drain(stream, 'g', async (leases) => {
      // Ack all but the last batch, which stays leased; reject every 10th.
      if (leases[0].event.sequence > N - 1000) {
        held = leases;
        return;
      }
      await rheo.settleMany(
        leases.map((lease) =>
          lease.event.sequence % 10 === 0 ? { kind: 'reject' as const, lease, reason: 'x' } : { kind: 'ack' as const, lease },
        ),
      );
    });
    expect(held).toHaveLength(1000);
    const k = groupKeys(stream, 'g');
    // REPLAY { afterSequence: 0 } records the rewind target; one TIDY slice of 200 clears the top of the partition.
    expect(await admin.eval(SCRIPTS.replay, 3, k.meta, k.cfg, k.wake, 'sequence', 0, 0)).toEqual([N, 0]);
    expect(await admin.eval(SCRIPTS.tidy, 9, k.meta, k.cfg, k.dl, k.dead, k.deadz, k.wake, k.deadt, k.leased, k.avail, 200, 0)).toEqual([
      0,
    ]);
    const cursor = Number(await admin.hget(k.cfg, 'c:0'));
    expect(cursor).toBe(N - 200 + 1);
    // Consistent meanwhile: leases on the cleared sequences are stale at once, the rest still held.
    const cleared = held.filter((l) => l.event.sequence >= cursor);
    expect(cleared).toHaveLength(200);
    const renewed = await rheo.renewMany(held, { leaseMs: 600_000 });
    held.forEach((l, i) => expect(renewed[i].ok).toBe(l.event.sequence < cursor));
    // The FETCH script claims nothing from a partition mid-rewind (that would raise the cursor the
    // rewind is bringing down) and says work is left, which the backend's fetch then finishes.
    const raw = (await admin.eval(
      SCRIPTS.fetch,
      7,
      k.meta,
      k.cfg,
      k.dl,
      k.wake,
      k.log,
      k.leased,
      k.avail,
      Date.now(),
      10,
      1000,
      'raw',
      0,
    )) as unknown[];
    // Pending 1, nothing parked, no lease.
    expect(raw.slice(1)).toEqual([1, 0]);

    const other = new Rheo(redisBackend({ url: REDIS_URL, prefix }));
    try {
      // lag finishes the rewind before it answers: everything is fresh again.
      expect(await other.groupInfo(stream, 'g')).toMatchObject({
        deadLetters: 0,
        inflight: 0,
        lag: { lag: N, partitions: [{ frontier: 0 }] },
      });
      expect(await admin.hget(k.cfg, 'rw:0')).toBeNull();
      expect(await admin.hlen(k.dl)).toBe(0);
      const [first] = await other.fetch(stream, 'g', { limit: 1 });
      expect(first).toMatchObject({ attempt: 1, event: { sequence: 1 } });
    } finally {
      await other.close();
    }
  }, 120_000);
});
