import { DataSource } from 'typeorm';
import { JsonValue, Lease, ManualClock, postgresBackend, Rheo } from '../../lib';
import { QueryWhere } from '../../lib/core/types';
import { jsonFieldsFilter } from '../../lib/backends/json-filter';
import { dropSchema, freshSchema, pgDataSource, PG_URL } from './pg-helpers';

// PostgreSQL's side of issue 10 (flat cost over time), beyond the conformance
// suite: the payload and metadata pre-filter against an exact oracle, time
// lookups over out-of-order timestamps, dead letters kept off rheo_deliveries,
// races of trims with starts, claims and redrives, turns and purges from many
// callers at once, and retention read fresh across processes.

const schema = freshSchema('flat');
const clock = new ManualClock(Date.UTC(2026, 0, 1));
let admin: DataSource;
let rheo: Rheo;
let other: Rheo;

beforeAll(async () => {
  admin = await pgDataSource(1);
  rheo = new Rheo(postgresBackend({ url: PG_URL, schema, clock, poolSize: 4 }));
  other = new Rheo(postgresBackend({ url: PG_URL, schema, clock, poolSize: 2 }));
  await rheo.init();
  await other.init();
});

afterAll(async () => {
  await rheo.close();
  await other.close();
  await admin.destroy();
  await dropSchema(schema);
});

const table = (name: string) => `"${schema}".${name}`;

async function drainAck(stream: string, group: string): Promise<number[]> {
  const seen: number[] = [];
  for (;;) {
    const leases = await rheo.fetch(stream, group, { limit: 500, leaseMs: 60_000 });
    if (leases.length === 0) return seen;
    await rheo.settleMany(leases.map((lease) => ({ kind: 'ack' as const, lease })));
    seen.push(...leases.map((l) => l.event.sequence));
  }
}

describe('postgres: payload and metadata filters in the database', () => {
  // Objects whose values tempt every shortcut: escapes, quotes, \u0000, unicode, number spellings,
  // booleans against numbers, null against missing, key order, prefixes, nesting, __proto__.
  const values: JsonValue[] = [
    'plain',
    'with "quotes" and \\ backslash',
    'nul \u0000 inside',
    '\u0000',
    'é 😀 \u2028',
    '',
    'plain ',
    0,
    -0,
    0.1,
    0.30000000000000004,
    1e21,
    7,
    70,
    -7,
    Number.MAX_SAFE_INTEGER,
    true,
    false,
    null,
    1,
    { a: 1, b: [1, 2] },
    { b: [1, 2], a: 1 },
    { a: 1 },
    [1, { x: 'y' }],
    [],
    {},
  ];
  const stream = 'filters';
  const docs: JsonValue[] = [];

  beforeAll(async () => {
    await rheo.createStream(stream, { partitions: 3 });
    for (const [i, v] of values.entries()) {
      docs.push({ k: v, i }, { other: v, i }, { nested: { k: v }, i }, { k: [v], i });
      docs.push(JSON.parse(`{"__proto__": ${JSON.stringify(v)}, "i": ${i}}`));
      docs.push(v, [v]); // not objects: never match a payload filter
    }
    await rheo.appendBatch(
      stream,
      docs.map((payload, n) => ({ payload, key: `k${n % 5}`, metadata: { k: values[n % values.length], n } })),
    );
  });

  async function check(where: QueryWhere): Promise<number> {
    const all = await rheo.query({ stream, limit: 1000 });
    const exact = jsonFieldsFilter(where)!;
    const expected = all.filter((e) => exact(e.metadata, e.payload)).map((e) => e.id);
    for (const order of ['asc', 'desc'] as const) {
      // Small pages, so the keyset cursor walks through the pre-filtered rows too.
      const got: string[] = [];
      let cursor: string | undefined;
      do {
        const page = await rheo.queryPage({ stream, where, order, limit: 3, cursor });
        got.push(...page.items.map((e) => e.id));
        cursor = page.nextCursor ?? undefined;
      } while (cursor);
      expect(got).toEqual(order === 'asc' ? expected : [...expected].reverse());
    }
    return expected.length;
  }

  it('finds exactly what the JavaScript filter finds, for every kind of value', async () => {
    let matched = 0;
    for (const v of values) {
      matched += await check({ payload: { k: v } });
      matched += await check({ metadata: { k: v } });
    }
    // -0 and 0 are one value, as are the two key orders of one object.
    expect(matched).toBeGreaterThan(values.length);
  });

  it('handles a __proto__ key, missing keys and several filters at once', async () => {
    const proto = JSON.parse('{"__proto__": 7}') as Record<string, JsonValue>;
    expect(await check({ payload: proto })).toBe(1);
    expect(await check({ payload: { missing: null } })).toBe(0);
    expect(await check({ payload: { k: 7, i: values.indexOf(7) } })).toBe(1);
    expect(await check({ payload: { k: 7 }, metadata: { k: 7 }, key: 'k0' } as QueryWhere)).toBeGreaterThanOrEqual(0);
  });

  it('the database returns only rows that contain every filter as written: the JavaScript check rarely drops one', async () => {
    // A selective filter over many non-matching rows: the statement must not hand them all to JavaScript.
    const s = 'filters-selective';
    await rheo.createStream(s);
    await rheo.appendBatch(
      s,
      Array.from({ length: 2000 }, (_, i) => ({ payload: { tenant: `t${i % 100}`, i } })),
    );
    const calls: number[] = [];
    const backend = rheo.backend as unknown as { q: (...args: unknown[]) => Promise<unknown[]> };
    const q = backend.q.bind(backend);
    backend.q = async (...args: unknown[]) => {
      const rows = await q(...args);
      if (args[3] === 'query') calls.push(rows.length);
      return rows;
    };
    try {
      const page = await rheo.queryPage({ stream: s, where: { payload: { tenant: 't7' } }, limit: 10 });
      expect(page.items.map((e) => (e.payload as { i: number }).i)).toEqual([7, 107, 207, 307, 407, 507, 607, 707, 807, 907]);
    } finally {
      backend.q = q;
    }
    // One statement, and it returned the page's ten rows, not the 1,000 it read past.
    expect(calls).toEqual([10]);
  });
});

describe('postgres: time lookups', () => {
  it('finds the first event in sequence order stamped at or after a time, with timestamps out of order, within and across batches', async () => {
    const stream = 'times';
    await rheo.createStream(stream);
    const t = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s));
    // 1:@1, 2:@30 (ahead), 3:@11, then in another batch 4:@12, 5:@40, 6:@35
    await rheo.appendBatch(stream, [
      { payload: 1, timestamp: t(1) },
      { payload: 2, timestamp: t(30) },
      { payload: 3, timestamp: t(11) },
    ]);
    await rheo.appendBatch(stream, [{ payload: 4, timestamp: t(12) }]);
    await rheo.appendBatch(stream, [
      { payload: 5, timestamp: t(40) },
      { payload: 6, timestamp: t(35) },
    ]);
    const expectations: Array<[number, number]> = [
      [0, 0], // everything
      [1, 0],
      [2, 1], // 2 is the first stamped at or after 2
      [11, 1],
      [30, 1],
      [31, 4], // 5 (@40) is the first at or after 31
      [36, 4],
      [40, 4],
      [41, 6], // none: after the high watermark
    ];
    for (const [i, [at, after]] of expectations.entries()) {
      await rheo.createGroup(stream, `at${i}`, { start: { at: t(at) } });
      expect([at, (await rheo.lag(stream, `at${i}`)).partitions[0].frontier]).toEqual([at, after]);
    }
    // replay `from` a time uses the same lookup.
    await rheo.createGroup(stream, 'r');
    await drainAck(stream, 'r');
    expect(await rheo.replay(stream, 'r', { from: t(31) })).toBe(2);
  });
});

describe('postgres: dead letters off the hot path', () => {
  it('keeps dead letters in rheo_dead_letters only, with their event id and reason', async () => {
    const stream = 'dl';
    await rheo.createStream(stream);
    await rheo.appendBatch(
      stream,
      Array.from({ length: 300 }, (_, i) => ({ payload: i })),
    );
    await rheo.createGroup(stream, 'g', { maxAttempts: 1 });
    const leases = await rheo.fetch(stream, 'g', { limit: 300, leaseMs: 60_000 });
    await rheo.settleMany(
      leases.map((lease, i) =>
        i % 3 === 0 ? { kind: 'nack' as const, lease, reason: `n${i}` } : { kind: 'reject' as const, lease, reason: `r${i}` },
      ),
    );
    expect(await admin.query(`SELECT count(*)::int AS n FROM ${table('rheo_deliveries')} WHERE stream = $1`, [stream])).toEqual([{ n: 0 }]);
    const dead = await admin.query(`SELECT event_id, reason FROM ${table('rheo_dead_letters')} WHERE stream = $1 ORDER BY sequence`, [
      stream,
    ]);
    expect(dead).toHaveLength(300);
    expect(dead[3]).toEqual({ event_id: leases[3].event.id, reason: 'n3' });
    expect((await rheo.groupInfo(stream, 'g')).deadLetters).toBe(300);
    expect((await rheo.lag(stream, 'g')).lag).toBe(0);
    // A claim reads nothing of them; new events flow past.
    await rheo.append(stream, { payload: 'next' });
    const [next] = await rheo.fetch(stream, 'g');
    expect(next.event.sequence).toBe(301);
    await rheo.ack(next);
    // An old release still running after the upgrade cannot write a 'dead' delivery back.
    await expect(
      admin.query(
        `INSERT INTO ${table('rheo_deliveries')} (stream, group_name, partition, sequence, state) VALUES ($1, 'g', 0, 1, 'dead')`,
        [stream],
      ),
    ).rejects.toThrow(/rheo_deliveries_in_flight/);
  });
});

describe('postgres: trims racing starts, claims and redrives', () => {
  it('a group started at the beginning while a forced trim runs never leases an event without its payload, and is not stuck', async () => {
    for (let round = 0; round < 3; round++) {
      const stream = `race${round}`;
      await rheo.createStream(stream, { partitions: 2, retention: { maxEvents: 5 } });
      await rheo.appendBatch(
        stream,
        Array.from({ length: 3000 }, (_, i) => ({ payload: { i }, partition: i % 2 })),
      );
      await rheo.createGroup(stream, 'old');
      const leased: Lease[] = [];
      const late = (async () => {
        await other.createGroup(stream, 'late', { start: 'beginning' });
        for (;;) {
          const got = await other.fetch(stream, 'late', { limit: 200, leaseMs: 60_000 });
          if (got.length === 0) return;
          leased.push(...got);
          await other.settleMany(got.map((lease) => ({ kind: 'ack' as const, lease })));
        }
      })();
      const [result] = await Promise.all([rheo.trim(stream, { force: true }), late]);
      expect(result.partitions.map((p) => p.trimmedTo)).toEqual([1495, 1495]);
      for (const l of leased) expect(l.event.payload).toEqual({ i: (l.event.sequence - 1) * 2 + l.event.partition });
      // Whatever the interleaving, late ends caught up and nothing is claimable below the trim point.
      await drainAck(stream, 'late');
      expect((await rheo.lag(stream, 'late')).lag).toBe(0);
      expect(await rheo.read(stream, { partition: 0, limit: 10 })).toHaveLength(5);
    }
  });

  it('a redrive and a trim take turns: the trim never removes the event of a dead letter made unfinished again', async () => {
    const stream = 'redrive-race';
    await rheo.createStream(stream, { retention: { maxEvents: 1 } });
    await rheo.appendBatch(
      stream,
      Array.from({ length: 50 }, (_, i) => ({ payload: i })),
    );
    await rheo.createGroup(stream, 'g');
    const leases = await rheo.fetch(stream, 'g', { limit: 50, leaseMs: 60_000 });
    await rheo.settleMany(leases.map((lease, i) => (i === 10 ? { kind: 'reject' as const, lease } : { kind: 'ack' as const, lease })));
    const [redriven, trimmed] = await Promise.all([rheo.redrive(stream, 'g', { all: true }), other.trim(stream)]);
    const point = trimmed.partitions[0].trimmedTo;
    if (redriven === 1 && point < 11) {
      // The redrive went first: the trim stopped before the re-opened event, which is still there.
      const [again] = await rheo.fetch(stream, 'g');
      expect(again.event.sequence).toBe(11);
      await rheo.ack(again);
    } else {
      // The trim went first: the dead letter's event is gone, so the redrive skipped it and it stays listed.
      expect([redriven, point]).toEqual([0, 49]);
      expect((await rheo.deadLetters(stream, 'g')).map((d) => [d.sequence, d.event])).toEqual([[11, null]]);
    }
    expect((await rheo.lag(stream, 'g')).lag).toBe(0);
  });

  it('reads, queries and dead letters never show an event at or below the trim point, even before its chunk is deleted', async () => {
    const stream = 'below';
    await rheo.createStream(stream);
    await rheo.appendBatch(
      stream,
      Array.from({ length: 10 }, (_, i) => ({ payload: { tenant: 't', i } })),
    );
    // As an interrupted trim leaves it: the point recorded, the rows not yet deleted.
    await admin.query(`UPDATE ${table('rheo_partitions')} SET trimmed_to = 4 WHERE stream = $1`, [stream]);
    expect((await rheo.read(stream)).map((e) => e.sequence)).toEqual([5, 6, 7, 8, 9, 10]);
    expect((await rheo.query({ stream, where: { payload: { tenant: 't' } } })).map((e) => e.sequence)).toEqual([5, 6, 7, 8, 9, 10]);
    expect((await rheo.query({ stream, order: 'desc', limit: 3 })).map((e) => e.sequence)).toEqual([10, 9, 8]);
    await rheo.createGroup(stream, 'g', { start: 'beginning' });
    expect((await drainAck(stream, 'g'))[0]).toBe(5);
    // The next trim deletes what was left below its point.
    await rheo.setRetention(stream, { maxEvents: 100 });
    expect(await rheo.trim(stream)).toMatchObject({ removed: 4, partitions: [{ partition: 0, trimmedTo: 4 }] });
    expect(await admin.query(`SELECT min(sequence)::int AS s FROM ${table('rheo_events')} WHERE stream = $1`, [stream])).toEqual([
      { s: 5 },
    ]);
  });
});

describe('postgres: turns, purges and retention from many callers', () => {
  it('gives a turn to exactly one of many concurrent claimers', async () => {
    for (let round = 0; round < 5; round++) {
      const job = `job${round}`;
      const got = await Promise.all(
        Array.from({ length: 8 }, (_, i) => (i % 2 ? rheo : other).backend.claimTurn(job, `holder${i}`, 10_000)),
      );
      expect(got.filter(Boolean)).toHaveLength(1);
    }
  });

  it('two purges at once remove every dead letter once', async () => {
    const stream = 'purge';
    await rheo.createStream(stream);
    await rheo.appendBatch(
      stream,
      Array.from({ length: 6000 }, (_, i) => ({ payload: i })),
    );
    await rheo.createGroup(stream, 'g');
    for (;;) {
      const leases = await rheo.fetch(stream, 'g', { limit: 1000, leaseMs: 60_000 });
      if (leases.length === 0) break;
      await rheo.settleMany(leases.map((lease) => ({ kind: 'reject' as const, lease })));
    }
    const [a, b] = await Promise.all([
      rheo.purgeDeadLetters(stream, 'g', { all: true }),
      other.purgeDeadLetters(stream, 'g', { all: true }),
    ]);
    expect(a + b).toBe(6000);
    expect((await rheo.groupInfo(stream, 'g')).deadLetters).toBe(0);
  });

  it('serves the retention another process set, not a cached one', async () => {
    await rheo.createStream('ret', { retention: { maxEvents: 10 } });
    expect((await other.backend.getStream('ret'))?.retention).toEqual({ maxEvents: 10 });
    await rheo.setRetention('ret', { maxAgeMs: 1000, deadLetterMaxAgeMs: 5 });
    expect((await other.backend.getStream('ret'))?.retention).toEqual({ maxAgeMs: 1000, deadLetterMaxAgeMs: 5 });
    expect((await other.listStreams()).find((s) => s.name === 'ret')?.retention).toEqual({ maxAgeMs: 1000, deadLetterMaxAgeMs: 5 });
    // ...and its trim uses it: maxEvents is gone, so nothing goes by count.
    await rheo.appendBatch(
      'ret',
      Array.from({ length: 20 }, (_, i) => ({ payload: i })),
    );
    expect((await other.trim('ret')).removed).toBe(0);
  });
});
