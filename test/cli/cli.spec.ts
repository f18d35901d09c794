// The CLI in this process (run() with an Io that captures what it prints), against
// PostgreSQL, Redis and SQLite: one case list per backend. --json output is
// checked exactly, against literals and against the admin service read in this
// process (the CLI and the dashboard must never disagree); exit codes 0, 1, 2.
// What only a process proves (the bin's exit code, warnings, signals, a reader
// that goes away, RHEO_URL) is in cli-bin.spec.ts.
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Redis from 'ioredis';
import { backendFromUrl, Rheo, RheoAdmin } from '../../lib';
import { freshPrefix, REDIS_URL } from '../redis/support';
import { dropSchema, freshSchema, PG_URL } from '../sql/pg-helpers';
import { cli, jsonOf, seedOrders, stores, summary } from './support';

const dir = mkdtempSync(join(tmpdir(), 'rheo-cli-'));

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('rheo, any store', () => {
  it('bad usage exits 2 with the problem on stderr and nothing on stdout', async () => {
    const cases: Array<[string[], string]> = [
      [[], 'Usage: rheo'],
      [['nope'], "unknown command 'nope'"],
      [['streams', '--bogus'], "unknown option '--bogus'"],
      [['groups'], "missing required argument 'stream'"],
      [['streams'], 'no store named: pass --url or set RHEO_URL'],
      [['--url', 'mysql://root:s3cret@db/app', 'streams'], 'invalid_argument: url must be postgres://'],
      [['--url', `sqlite:${join(dir, 'missing.db')}`, 'streams'], 'invalid_argument: url names no existing file'],
      [['--url', REDIS_URL, '--schema', 'x', 'streams'], 'invalid_argument: schema applies to postgres:// URLs only'],
      // Above Node's longest timer, a follow would poll every millisecond.
      [
        ['tail', 's', '--follow', '--interval', '2147483648'],
        "option '--interval <ms>' argument '2147483648' is invalid. must be at most 2147483647",
      ],
    ];
    // Independent runs: side by side, to keep the file quick.
    const runs = await Promise.all(cases.map(([args]) => cli(args)));
    for (const [i, [args, message]] of cases.entries()) {
      const run = runs[i];
      expect({ args, code: run.code, stdout: run.stdout }).toEqual({ args, code: 2, stdout: '' });
      expect(run.stderr).toContain(message);
      expect(run.stderr).not.toContain('s3cret');
    }
  });
});

/** The SHA-256 of every file in `folder`, by name: what a command that writes nothing leaves exactly as it was. */
function filesOf(folder: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of readdirSync(folder).sort())
    out[name] = createHash('sha256')
      .update(readFileSync(join(folder, name)))
      .digest('hex');
  return out;
}

/** Every key under `prefix` (SCAN, never KEYS). */
async function keysUnder(prefix: string): Promise<string[]> {
  const redis = new Redis(REDIS_URL);
  const keys: string[] = [];
  try {
    let cursor = '0';
    do {
      const [next, found] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      cursor = next;
      keys.push(...found);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
  return keys;
}

describe('rheo never changes a store that is not one', () => {
  it("leaves another app's SQLite database and an empty file byte-identical, whatever the command, and says so (exit 1)", async () => {
    const folder = join(dir, 'not-rheo');
    mkdirSync(folder);
    // Another application's database, in SQLite's default (rollback journal) mode.
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- untyped driver
    const Database = require('better-sqlite3') as new (file: string) => { exec(sql: string): void; close(): void };
    const other = new Database(join(folder, 'app.db'));
    other.exec("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO users (name) VALUES ('ada')");
    other.close();
    writeFileSync(join(folder, 'empty.db'), '');
    writeFileSync(join(folder, 'notes.txt'), 'not a database at all\n');
    const before = filesOf(folder);
    for (const file of ['app.db', 'empty.db', 'notes.txt']) {
      const url = `sqlite:${join(folder, file)}`;
      const commands = [['streams'], ['groups', 's'], ['dead-letters', 's', 'g'], ['tail', 's'], ['append', 's', '--payload', '1']];
      for (const args of commands) {
        const run = await cli(['--url', url, ...args]);
        expect({ file, args, code: run.code, stdout: run.stdout }).toEqual({ file, args, code: 1, stdout: '' });
        expect(run.stderr).toContain(join(folder, file));
        expect(filesOf(folder)).toEqual(before);
      }
    }
  });

  it('a Redis prefix with no rheo data: said so, exit 1, and not one key written under it', async () => {
    const typo = freshPrefix('cli-typo');
    for (const args of [['streams'], ['groups', 's'], ['tail', 's'], ['dead-letters', 's', 'g']]) {
      const run = await cli(['--url', REDIS_URL, '--prefix', typo, ...args]);
      expect({ args, code: run.code, stdout: run.stdout }).toEqual({ args, code: 1, stdout: '' });
      expect(run.stderr).toContain(`prefix "${typo}" holds no nestjs-rheo data`);
    }
    expect(await keysUnder(typo)).toEqual([]);
  });

  it('a PostgreSQL schema without the tables: the message names it and suggests --schema; RHEO_SCHEMA names the schema too', async () => {
    const missing = freshSchema('clinone');
    const run = await cli(['--url', PG_URL, '--schema', missing, 'streams']);
    expect({ code: run.code, stdout: run.stdout }).toEqual({ code: 1, stdout: '' });
    expect(run.stderr).toContain(`the rheo tables are not installed in schema "${missing}"`);
    expect(run.stderr).toContain('--schema');
    expect(run.stderr).toContain('RHEO_SCHEMA');
    const schema = freshSchema('clienv');
    const rheo = new Rheo(backendFromUrl(PG_URL, { schema, install: 'auto' }));
    try {
      await rheo.createStream('by-env');
      const byEnv = await cli(['--url', PG_URL, '--json', 'streams'], { RHEO_SCHEMA: schema });
      expect({ code: byEnv.code, stderr: byEnv.stderr }).toEqual({ code: 0, stderr: '' });
      expect((JSON.parse(byEnv.stdout) as Array<{ name: string }>).map((s) => s.name)).toEqual(['by-env']);
      // The environment's schema is for postgres URLs: another store ignores it (an explicit --schema is refused).
      const sqlite = await cli(['--url', `sqlite:${join(dir, 'missing.db')}`, 'streams'], { RHEO_SCHEMA: schema });
      expect(sqlite.stderr).toContain('url names no existing file');
    } finally {
      await rheo.close();
      await dropSchema(schema);
    }
  });
});

describe.each(stores(dir))('rheo on $name', (store) => {
  let rheo: Rheo;
  let admin: RheoAdmin;
  const run = (...args: string[]) => cli([...store.args, ...args]);
  const json = (...args: string[]) => jsonOf([...store.args, ...args]);

  /** `orders` (support.ts seedOrders): billing acked o1 and o3 and dead-lettered o2; audit started at the end. */
  beforeAll(async () => {
    rheo = store.open();
    admin = new RheoAdmin(rheo);
    await seedOrders(rheo);
  });

  afterAll(async () => {
    await rheo.close();
    await store.cleanup();
  });

  /** A stream of its own for a case that changes things: `n` events in one partition, a group `g` that acked them all. */
  async function finished(stream: string, n: number, retention?: { maxEvents: number }): Promise<void> {
    await rheo.createStream(stream, { retention });
    await rheo.createGroup(stream, 'g');
    await rheo.appendBatch(
      stream,
      Array.from({ length: n }, (_, i) => ({ id: `${stream}-${i + 1}`, type: i % 2 ? 'odd' : 'even', payload: i + 1 })),
    );
    for (const lease of await rheo.fetch(stream, 'g', { limit: n })) await rheo.ack(lease);
  }

  const billing = {
    stream: 'orders',
    group: 'billing',
    lag: 0,
    inflight: 0,
    deadLetters: 1,
    oldestUnsettledAgeMs: null,
    maxAttempts: 5,
    retry: { initialMs: 1000, factor: 2, maxMs: 60000 },
    ordering: 'none',
    keyConcurrency: null,
    groupConcurrency: null,
    rateLimit: null,
    waitingForKey: 0,
    partitions: [
      { partition: 0, frontier: 2, highWatermark: 2, lag: 0 },
      { partition: 1, frontier: 1, highWatermark: 1, lag: 0 },
    ],
    paused: null,
    skipped: { count: 0, lastReason: null, lastAt: null },
  };
  const audit = {
    ...billing,
    group: 'audit',
    deadLetters: 0,
    maxAttempts: 3,
    ordering: 'partition',
    partitions: [
      { partition: 0, frontier: 2, highWatermark: 2, lag: 0 },
      { partition: 1, frontier: 1, highWatermark: 1, lag: 0 },
    ],
  };

  it('groups, lag, info: exact figures', async () => {
    // Read-only runs on an unchanging store: side by side, to keep the file quick.
    const [groups, lagAll, lagOne, infoJson, info, groupsTable] = await Promise.all([
      json('groups', 'orders') as Promise<Array<{ warnings: string[] }>>,
      json('lag', 'orders'),
      json('lag', 'orders', 'billing'),
      json('info', 'orders', 'billing'),
      run('info', 'orders', 'billing'),
      run('groups', 'orders'),
    ]);
    expect(groups).toEqual(await admin.groups('orders'));
    // Warnings depend on the store's settings (a Redis without appendonly has one): the service's, above.
    expect(groups).toEqual([
      { ...audit, warnings: groups[0].warnings },
      { ...billing, warnings: groups[1].warnings },
    ]);
    const lag = (g: typeof billing) => ({ stream: g.stream, group: g.group, lag: g.lag, partitions: g.partitions });
    expect(lagAll).toEqual([lag(audit), lag(billing)]);
    expect(lagOne).toEqual(lag(billing));
    expect(infoJson).toEqual({ ...billing, warnings: groups[1].warnings });
    expect(info.code).toBe(0);
    expect(info.stdout).toMatch(/^dead letters +1$/m);
    expect(info.stdout).toMatch(/^retry +1000 ms x2 up to 60000 ms$/m);
    expect(info.stdout).toMatch(/^skipped +0$/m);
    expect(info.stdout).toMatch(/^limits +none\nwaiting for key +0\npaused +no$/m);
    expect(info.stdout).toMatch(/^PARTITION +FRONTIER +HIGH WATERMARK +LAG\n +0 +2 +2 +0\n +1 +1 +1 +0\n/m);
    expect(groupsTable.stdout).toMatch(/^billing +0 +0 +1 +- +5 +none +none +0 +no$/m);
  });

  it('dead-letters: pages, payloads on request', async () => {
    const [dead] = (await admin.deadLetters('orders', 'billing')).items;
    const item = {
      eventId: 'o2',
      partition: 1,
      sequence: 1,
      reason: 'card declined',
      attempt: 1,
      deadLetteredAt: dead.deadLetteredAt,
      type: 'placed',
      key: 'k2',
    };
    const [all, first, after, payloads, table] = await Promise.all([
      json('dead-letters', 'orders', 'billing'),
      json('dead-letters', 'orders', 'billing', '--limit', '1'),
      json('dead-letters', 'orders', 'billing', '--after', 'o2'),
      json('dead-letters', 'orders', 'billing', '--payloads'),
      run('dead-letters', 'orders', 'billing'),
    ]);
    expect(all).toEqual({ items: [item], next: null });
    expect(first).toEqual({ items: [item], next: 'o2' });
    expect(after).toEqual({ items: [], next: null });
    expect(payloads).toEqual({ items: [{ ...item, payload: { n: 2 } }], next: null });
    expect(table.stdout).toMatch(/^o2 +1 +1 +1 +\S+ +placed +k2 +card declined$/m);
  });

  it('dead-letters, tail: control characters from the store are escaped in tables, raw in --json', async () => {
    // OSC 52 (write the clipboard), a screen clear after a carriage return, BEL, DEL and a C1 CSI.
    const reason = 'declined\x1b]52;c;aGVsbG8=\x07\r\x1b[2J\u009b31m\x7f';
    await rheo.createStream('hostile');
    await rheo.createGroup('hostile', 'g');
    await rheo.append('hostile', { id: 'h1', payload: { note: 'bell\x07 csi\u009b del\x7f' }, metadata: { from: '\x1b[31m' } });
    const [lease] = await rheo.fetch('hostile', 'g', { limit: 1 });
    await rheo.reject(lease, { reason });
    const [table, raw, tail] = await Promise.all([
      run('dead-letters', 'hostile', 'g', '--payloads'),
      json('dead-letters', 'hostile', 'g', '--payloads'),
      run('tail', 'hostile'),
    ]);
    // eslint-disable-next-line no-control-regex
    const control = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/;
    for (const out of [table, tail]) {
      expect(out.code).toBe(0);
      expect(out.stdout).not.toMatch(control);
    }
    expect(table.stdout).toContain('declined\\x1b]52;c;aGVsbG8=\\x07\\r\\x1b[2J\\u009b31m\\x7f');
    expect(table.stdout).toContain('bell\\u0007 csi\\u009b del\\x7f');
    expect(tail.stdout).toContain('csi\\u009b del\\x7f');
    expect((raw as { items: Array<{ reason: string; payload: unknown }> }).items).toEqual([
      expect.objectContaining({ reason, payload: { note: 'bell\x07 csi\u009b del\x7f' } }),
    ]);
  });

  it('tail --limit: the newest events across partitions, newest last', async () => {
    await rheo.createStream('newest', { partitions: 2 });
    const at = (i: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, i));
    // A1..A11 in partition 0, then A12 in partition 1: its sequence (1) is the lowest, its time the latest.
    await rheo.appendBatch(
      'newest',
      Array.from({ length: 11 }, (_, i) => ({ id: `A${i + 1}`, partition: 0, timestamp: at(i + 1), payload: i + 1 })),
    );
    await rheo.append('newest', { id: 'A12', partition: 1, timestamp: at(12), payload: 12 });
    const page = (await json('tail', 'newest', '--limit', '3')) as { items: Array<{ id: string }> };
    expect(page.items.map((e) => e.id)).toEqual(['A10', 'A11', 'A12']);
    const table = await run('tail', 'newest', '--limit', '3');
    expect(
      table.stdout
        .trimEnd()
        .split('\n')
        .map((l) => l.split(/ +/)[5]),
    ).toEqual(['ID', 'A10', 'A11', 'A12']);
  });

  it('append and tail: the stored events; a cursor follows every partition; --where filters', async () => {
    await rheo.createStream('events', { partitions: 2 });
    const appended = await json(
      'append',
      'events',
      '--payload',
      '{"n":1}',
      '--id',
      'e1',
      '--key',
      'k',
      '--type',
      'placed',
      '--metadata',
      '{"source":"cli"}',
    );
    const [e1] = await rheo.query({ stream: 'events', where: {} });
    expect(appended).toEqual(summary(e1));
    expect(appended).toMatchObject({ id: 'e1', type: 'placed', key: 'k', metadata: { source: 'cli' }, payload: { n: 1 } });
    // The same id again: nothing written, the stored event printed.
    expect(await json('append', 'events', '--payload', '"other"', '--id', 'e1')).toEqual(appended);
    const e2 = await rheo.append('events', { id: 'e2', partition: 1 - e1.partition, type: 'paid', payload: 2 });
    const tail = (await json('tail', 'events')) as { items: unknown[]; next: string };
    // Newest last: e2 was appended after e1 (a tie in time is broken by id, and e1 < e2).
    expect(tail).toEqual({ items: [summary(e1), summary(e2)], next: expect.any(String) });
    expect(await json('tail', 'events', '--cursor', tail.next)).toEqual({ items: [], next: tail.next });
    const e3 = await rheo.append('events', { id: 'e3', partition: e1.partition, type: 'paid', payload: 3 });
    expect(((await json('tail', 'events', '--cursor', tail.next)) as { items: unknown[] }).items).toEqual([summary(e3)]);
    expect(((await json('tail', 'events', '--where', '{"type":"paid"}', '--limit', '1')) as { items: unknown[] }).items).toEqual([
      summary(e3),
    ]);
    const table = await run('tail', 'events');
    expect(table.stdout).toMatch(/^TIMESTAMP +PARTITION +SEQUENCE +TYPE +KEY +ID +PAYLOAD\n/);
    expect(table.stdout).toMatch(/ e3 +3$/m);
    const bad = await run('append', 'events', '--payload', '{oops');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("option '--payload <json>' argument '{oops' is invalid");
  });

  it('append --metadata over 64 KiB, tail and replay --where past the filter limits: refused (exit 1), nothing written', async () => {
    await rheo.createStream('limits');
    await rheo.createGroup('limits', 'g');
    const big = await run('append', 'limits', '--payload', '1', '--metadata', JSON.stringify({ m: 'x'.repeat(65529) }));
    expect({ code: big.code, stdout: big.stdout }).toEqual({ code: 1, stdout: '' });
    expect(big.stderr).toContain('error: payload_too_large: event.metadata is 65537 bytes, over the limit of 65536');
    const where = JSON.stringify({ payload: Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, i])) });
    for (const args of [
      ['tail', 'limits', '--where', where],
      ['replay', 'limits', 'g', '--where', where],
    ]) {
      const refused = await run(...args);
      expect({ command: args[0], code: refused.code, stdout: refused.stdout }).toEqual({ command: args[0], code: 1, stdout: '' });
      expect(refused.stderr).toContain('error: invalid_argument: query.where must hold at most 64 metadata and payload filter keys');
    }
    expect(await rheo.query({ stream: 'limits' })).toEqual([]);
  });

  it('redrive: by id; all only with --confirm (else exit 2)', async () => {
    await rheo.createStream('redrive-s');
    await rheo.createGroup('redrive-s', 'g');
    await rheo.appendBatch('redrive-s', [
      { id: 'r1', payload: 1 },
      { id: 'r2', payload: 2 },
      { id: 'r3', payload: 3 },
    ]);
    for (const lease of await rheo.fetch('redrive-s', 'g', { limit: 3 })) await rheo.reject(lease);
    expect(await json('redrive', 'redrive-s', 'g', '--id', 'r1', 'nope')).toEqual({ redriven: 1 });
    const refused = await run('redrive', 'redrive-s', 'g', '--all');
    expect({ code: refused.code, stdout: refused.stdout }).toEqual({ code: 2, stdout: '' });
    expect(refused.stderr).toContain('error: confirm_required: ');
    expect(refused.stderr).toContain('--confirm');
    expect((await admin.group('redrive-s', 'g')).deadLetters).toBe(2);
    expect(await json('redrive', 'redrive-s', 'g', '--all', '--confirm')).toEqual({ redriven: 2 });
    expect((await admin.group('redrive-s', 'g')).deadLetters).toBe(0);
    const both = await run('redrive', 'redrive-s', 'g', '--all', '--id', 'r1');
    expect(both.code).toBe(2);
    const human = await run('redrive', 'redrive-s', 'g', '--id', 'r2');
    expect(human).toMatchObject({ code: 0, stdout: 'Redrove 0 dead letter(s) of redrive-s/g.\n' });
  });

  it('replay: after a sequence, from a time, by a filter; exactly one of them', async () => {
    await finished('replay-s', 4);
    expect(await json('replay', 'replay-s', 'g', '--after-sequence', '3')).toEqual({ replayed: 1 });
    expect(await json('replay', 'replay-s', 'g', '--where', '{"type":"even"}')).toEqual({ replayed: 2 }); // 1 and 3
    // A range replay counts every event it rewinds over, open ones included.
    expect(await json('replay', 'replay-s', 'g', '--from', '2000-01-01T00:00:00Z')).toEqual({ replayed: 4 });
    expect((await admin.group('replay-s', 'g')).lag).toBe(4);
    for (const args of [[], ['--after-sequence', '1', '--from', '2000-01-01']]) {
      const run1 = await run('replay', 'replay-s', 'g', ...args);
      expect(run1.code).toBe(2);
      expect(run1.stderr).toContain('give exactly one of --after-sequence, --from, --where');
    }
    expect((await run('replay', 'replay-s', 'g', '--after-sequence', '-1')).code).toBe(2);
    const badTime = await run('replay', 'replay-s', 'g', '--from', 'yesterday');
    expect({ code: badTime.code, stdout: badTime.stdout }).toEqual({ code: 1, stdout: '' });
    expect(badTime.stderr).toContain('error: invalid_argument: from must be an ISO 8601 time');
  });

  it('reset: refused without --confirm (exit 2); with it, the group restarts at --start', async () => {
    await finished('reset-s', 3);
    const refused = await run('reset', 'reset-s', 'g', '--start', 'beginning');
    expect({ code: refused.code, stdout: refused.stdout }).toEqual({ code: 2, stdout: '' });
    expect(refused.stderr).toContain('error: confirm_required: reset forgets every delivery of the group');
    expect((await admin.group('reset-s', 'g')).lag).toBe(0);
    expect(await json('reset', 'reset-s', 'g', '--start', '1', '--confirm')).toEqual({ reset: true });
    expect((await admin.group('reset-s', 'g')).lag).toBe(2);
    const human = await run('reset', 'reset-s', 'g', '--confirm');
    expect(human).toMatchObject({ code: 0, stdout: 'Reset reset-s/g: it restarts from beginning.\n' });
    expect((await admin.group('reset-s', 'g')).lag).toBe(3);
  });

  it('trim: retention now; --force needs --confirm (exit 2)', async () => {
    await finished('trim-s', 3, { maxEvents: 1 });
    await rheo.appendBatch('trim-s', [{ payload: 4 }, { payload: 5 }]); // unfinished by g
    // Retention keeps 1 of 5, but g finished only 1..3: an unforced trim stops at its frontier.
    expect(await json('trim', 'trim-s')).toEqual({ removed: 3, skipped: { g: 0 } });
    const refused = await run('trim', 'trim-s', '--force');
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('error: confirm_required: a forced trim removes events groups have not finished');
    expect(await json('trim', 'trim-s', '--force', '--confirm')).toEqual({ removed: 1, skipped: { g: 1 } });
    expect((await admin.streams()).find((s) => s.name === 'trim-s')?.highWatermarks).toEqual([5]);
  });

  it('purge: before a time, or all; exactly one of them', async () => {
    await rheo.createStream('purge-s');
    await rheo.createGroup('purge-s', 'g');
    await rheo.appendBatch('purge-s', [{ payload: 1 }, { payload: 2 }]);
    for (const lease of await rheo.fetch('purge-s', 'g', { limit: 2 })) await rheo.reject(lease);
    expect(await json('purge', 'purge-s', 'g', '--before', '2000-01-01T00:00:00Z')).toEqual({ purged: 0 });
    expect((await run('purge', 'purge-s', 'g')).code).toBe(2);
    expect((await run('purge', 'purge-s', 'g', '--all', '--before', '2000-01-01')).code).toBe(2);
    expect(await json('purge', 'purge-s', 'g', '--all')).toEqual({ purged: 2 });
  });

  it('a failed command exits 1 with the error code and message on stderr, nothing on stdout', async () => {
    const cases = [
      [['groups', 'nope'], 'error: stream_not_found: stream "nope" does not exist'],
      [['info', 'orders', 'nope'], 'error: group_not_found: '],
      [['tail', 'orders', '--cursor', 'bogus'], 'error: invalid_argument: cursor is not a tail cursor of this stream'],
    ] as const;
    const runs = await Promise.all(cases.map(([args]) => run(...args)));
    for (const [i, [args, message]] of cases.entries()) {
      const failed = runs[i];
      expect({ args, code: failed.code, stdout: failed.stdout }).toEqual({ args, code: 1, stdout: '' });
      expect(failed.stderr).toContain(message);
    }
  });
});
