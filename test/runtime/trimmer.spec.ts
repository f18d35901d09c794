import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Backend, ManualClock, memoryBackend, postgresBackend, redisBackend, Rheo, RheoError, sqliteBackend } from '../../lib';
import { Trimmer } from '../../lib/runtime/trimmer';
import { deleteKeys, freshPrefix, REDIS_URL } from '../redis/support';
import { dropSchema, freshSchema, PG_URL } from '../sql/pg-helpers';
import { until } from '../support/until';

/** The background trim against every kind of store: the turn is the store's, not the process's. */
interface Target {
  name: string;
  /** Two backends on one store (two processes), sharing `clock`. */
  open(clock: ManualClock): Promise<[Backend, Backend]>;
  cleanup(): Promise<void>;
}

const dir = mkdtempSync(join(tmpdir(), 'rheo-trimmer-'));
const schema = freshSchema('trimmer');
const prefix = freshPrefix('trimmer');

const targets: Target[] = [
  {
    name: 'memory',
    // One process only: both "processes" are the same backend.
    open: async (clock) => {
      const b = memoryBackend({ clock });
      return [b, b];
    },
    cleanup: async () => undefined,
  },
  {
    name: 'sqlite',
    open: async (clock) => [
      sqliteBackend({ database: join(dir, 'trim.db'), clock }),
      sqliteBackend({ database: join(dir, 'trim.db'), clock }),
    ],
    cleanup: async () => rmSync(dir, { recursive: true, force: true }),
  },
  {
    name: 'postgres',
    open: async (clock) => [
      postgresBackend({ url: PG_URL, schema, poolSize: 2, clock }),
      postgresBackend({ url: PG_URL, schema, poolSize: 2, clock }),
    ],
    cleanup: () => dropSchema(schema),
  },
  {
    name: 'redis',
    open: async (clock) => [redisBackend({ url: REDIS_URL, prefix, clock }), redisBackend({ url: REDIS_URL, prefix, clock })],
    cleanup: async () => void (await deleteKeys(prefix)),
  },
];

describe.each(targets)('Trimmer on $name', (target) => {
  const clock = new ManualClock(Date.UTC(2026, 5, 1));
  let a: Rheo;
  let b: Rheo;
  let n = 0;
  const name = (p: string) => `${p}-${++n}`;

  beforeAll(async () => {
    const [x, y] = await target.open(clock);
    a = new Rheo(x);
    b = x === y ? a : new Rheo(y);
    await a.init();
    await b.init();
  });

  afterAll(async () => {
    await a.close();
    if (b !== a) await b.close();
    await target.cleanup();
  });

  /** A stream with `count` events that group `g` has finished. */
  async function finishedStream(count: number, retention?: Parameters<Rheo['setRetention']>[1]): Promise<string> {
    const stream = name('s');
    await a.createStream(stream, { retention });
    await a.appendBatch(
      stream,
      Array.from({ length: count }, (_, i) => ({ payload: { i } })),
    );
    await a.createGroup(stream, 'g');
    for (;;) {
      const leases = await a.fetch(stream, 'g', { limit: 1000 });
      if (leases.length === 0) break;
      await a.settleMany(leases.map((lease) => ({ kind: 'ack' as const, lease })));
    }
    return stream;
  }

  it('trims every stream with a retention, leaves the others, and purges old dead letters', async () => {
    const kept = await finishedStream(10);
    const trimmed = await finishedStream(10, { maxEvents: 3 });
    const purged = name('s');
    await a.createStream(purged, { retention: { deadLetterMaxAgeMs: 60_000 } });
    await a.appendBatch(purged, [{ payload: 1 }, { payload: 2 }]);
    await a.createGroup(purged, 'g');
    const [old, recent] = await a.fetch(purged, 'g', { limit: 2, leaseMs: 600_000 });
    await a.reject(old);
    clock.advance(50_000);
    await a.reject(recent);
    clock.advance(20_000);

    const seen: string[] = [];
    const trimmer = new Trimmer(a, { intervalMs: 1000, holder: name('h'), events: { trimmed: (r) => seen.push(r.stream) } });
    const round = await trimmer.runOnce();
    trimmer.stop();

    expect(round.ran).toBe(true);
    expect(round.trims.find((t) => t.stream === trimmed)).toMatchObject({ removed: 7, partitions: [{ partition: 0, trimmedTo: 7 }] });
    expect(round.trims.find((t) => t.stream === kept)).toBeUndefined();
    expect(seen).toContain(trimmed);
    expect(round.purged).toBe(1);
    expect((await a.read(kept)).length).toBe(10);
    expect((await a.read(trimmed)).map((e) => e.sequence)).toEqual([8, 9, 10]);
    expect((await a.deadLetters(purged, 'g')).map((d) => d.eventId)).toEqual([recent.event.id]);
  });

  it('lets one process at a time do the work; another takes over once the holder stops renewing', async () => {
    const stream = await finishedStream(5, { maxEvents: 1 });
    const first = new Trimmer(a, { intervalMs: 1000, holder: name('first') });
    const second = new Trimmer(b, { intervalMs: 1000, holder: name('second') });
    // Whoever held the turn from an earlier test has let it lapse.
    clock.advance(10_000);
    expect((await first.runOnce()).ran).toBe(true);
    expect((await second.runOnce()).ran).toBe(false);
    clock.advance(1500);
    expect((await first.runOnce()).ran).toBe(true);
    expect((await second.runOnce()).ran).toBe(false);
    // first stops; its turn lasts two intervals from its last round.
    clock.advance(1999);
    expect((await second.runOnce()).ran).toBe(false);
    clock.advance(2);
    const took = await second.runOnce();
    expect(took.ran).toBe(true);
    expect(took.trims.find((t) => t.stream === stream)?.partitions).toEqual([{ partition: 0, trimmedTo: 4 }]);
  });

  it('reports a failing round to its error listener and never throws', async () => {
    const broken = new Rheo(memoryBackend({ clock }));
    await broken.close();
    const errors: unknown[] = [];
    const trimmer = new Trimmer(broken, { intervalMs: 1000, events: { error: (e) => errors.push(e) } });
    expect(await trimmer.runOnce()).toEqual({ ran: false, trims: [], purged: 0 });
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(RheoError);
    expect((errors[0] as RheoError).code).toBe('backend_unavailable');
  });

  it('runs rounds on its interval once started, and none after stop', async () => {
    const stream = await finishedStream(4, { maxEvents: 2 });
    clock.advance(10_000);
    const rounds: string[] = [];
    const trimmer = new Trimmer(a, { intervalMs: 20, holder: name('timer'), events: { trimmed: (r) => rounds.push(r.stream) } });
    trimmer.start();
    await until('two rounds on the stream', () => rounds.filter((s) => s === stream).length >= 2);
    trimmer.stop();
    expect(rounds.filter((s) => s === stream).length).toBeGreaterThanOrEqual(2);
    await new Promise((r) => setTimeout(r, 100));
    const after = rounds.length;
    await new Promise((r) => setTimeout(r, 100));
    expect(rounds.length).toBe(after);
    expect((await a.read(stream)).map((e) => e.sequence)).toEqual([3, 4]);
  });
});
