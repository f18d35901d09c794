import { createHash } from 'node:crypto';
import Redis from 'ioredis';
import { ManualClock, Rheo, redisBackend } from '../../lib';
import { escapeName } from '../../lib/backends/redis/keys';
import { SCRIPTS } from '../../lib/backends/redis/scripts';
import { deleteKeys, freshPrefix, REDIS_URL } from './support';

const sha1 = (text: string) => createHash('sha1').update(text).digest('hex');
const SCRIPT_BY_SHA = new Map(Object.entries(SCRIPTS).map(([name, lua]) => [sha1(lua), name]));

/** CRC16-XMODEM (poly 0x1021, init 0), as Redis Cluster computes key slots. */
function crc16(buf: Buffer): number {
  let crc = 0;
  for (const byte of buf) {
    crc ^= byte << 8;
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc;
}

/** The cluster slot of a key: the hash tag's content when there is a non-empty `{...}`, else the whole key. */
function slot(key: string): number {
  const open = key.indexOf('{');
  if (open >= 0) {
    const close = key.indexOf('}', open + 1);
    if (close > open + 1) return crc16(Buffer.from(key.slice(open + 1, close))) % 16384;
  }
  return crc16(Buffer.from(key)) % 16384;
}

const prefix = freshPrefix('slots');
// Names full of the characters that could break a key layout.
const STREAM = 'orders{eu}:v1%{';
const GROUP = 'billing:{x}';

describe('redis key layout and cluster slots', () => {
  afterAll(async () => {
    await deleteKeys(prefix);
  });

  it('implements CRC16 as Redis Cluster does (reference vectors)', () => {
    // CRC16-XMODEM check value, and CLUSTER KEYSLOT answers from the Redis docs.
    expect(crc16(Buffer.from('123456789'))).toBe(0x31c3);
    expect(slot('somekey')).toBe(11058);
    expect(slot('foo')).toBe(12182);
    expect(slot('hello')).toBe(866);
    expect(slot('{user1000}.following')).toBe(slot('{user1000}.followers'));
    expect(slot('x{}y')).toBe(crc16(Buffer.from('x{}y')) % 16384);
  });

  it('escapes names injectively, with no brace or colon left', () => {
    const names = ['a{b}:c', 'a%7Bb%7D%3Ac', 'a:b', 'a%3Ab', '{', '}', '%', 'plain'];
    const escaped = names.map(escapeName);
    expect(new Set(escaped).size).toBe(names.length);
    for (const e of escaped) expect(e).not.toMatch(/[{}:]/);
  });

  it('every key each script (and each command inside it) touches hashes to the stream slot', async () => {
    const clock = new ManualClock();
    const rheo = new Rheo(redisBackend({ url: REDIS_URL, prefix, clock }));
    const monitorClient = new Redis(REDIS_URL);
    const monitor = await monitorClient.monitor();
    const scriptCalls: string[][] = [];
    const scriptsRun = new Set<string>();
    const luaCommands: string[][] = [];
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      const cmd = args[0].toUpperCase();
      if (cmd === 'EVALSHA' || cmd === 'EVAL') {
        if (args.some((a) => a.startsWith(prefix))) {
          scriptCalls.push(args.slice(3, 3 + Number(args[2])));
          scriptsRun.add(SCRIPT_BY_SHA.get(cmd === 'EVAL' ? sha1(args[1]) : args[1]) ?? args[1]);
        }
      } else if (source.includes('lua') && args.some((a) => a.startsWith(prefix))) {
        luaCommands.push(args);
      }
    });
    try {
      await rheo.createStream(STREAM, { partitions: 3 });
      await rheo.appendBatch(
        STREAM,
        Array.from({ length: 12 }, (_, i) => ({ key: `k${i}`, payload: { i } })),
      );
      await rheo.createGroup(STREAM, GROUP, { maxAttempts: 2 });
      await rheo.createGroup(STREAM, 'end-group', { start: 'end', ordering: 'partition' });
      await rheo.createGroup(STREAM, 'at-group', { start: { at: new Date(clock.now()) } });
      const leases = await rheo.fetch(STREAM, GROUP, { limit: 12, leaseMs: 1000 });
      expect(leases).toHaveLength(12);
      await rheo.renewMany(leases.slice(0, 4), { leaseMs: 1000 });
      await rheo.settleMany([
        { kind: 'ack', lease: leases[0] },
        { kind: 'nack', lease: leases[1], delayMs: 0 },
        { kind: 'reject', lease: leases[2], reason: 'no' },
      ]);
      await rheo.releaseMany(leases.slice(3, 5));
      await rheo.fetch(STREAM, 'end-group');
      await rheo.append(STREAM, { payload: 'late' });
      await rheo.fetch(STREAM, 'end-group');
      await rheo.redrive(STREAM, GROUP, { all: true });
      await rheo.replay(STREAM, GROUP, { afterSequence: 1 });
      await rheo.replay(STREAM, GROUP, { from: new Date(clock.now()) });
      await rheo.replay(STREAM, GROUP, { query: { where: { key: 'k1' } } });
      await rheo.lag(STREAM, GROUP);
      await rheo.groupInfo(STREAM, GROUP);
      await rheo.deadLetters(STREAM, GROUP);
      await rheo.updateGroup(STREAM, GROUP, { maxAttempts: 7, retry: { initialMs: 10 } });
      await rheo.pauseGroup(STREAM, GROUP, { reason: 'slots', by: 'test' });
      await rheo.fetch(STREAM, GROUP);
      await rheo.resumeGroup(STREAM, GROUP);
      // Skip, reschedule, cancelDelayed (the answers do not matter here: the scripts run whatever they find).
      await rheo.skip(STREAM, GROUP, [leases[5].event.id, leases[6].event.id], { reason: 'obsolete' });
      await rheo.reschedule(STREAM, GROUP, [leases[7].event.id], { delayMs: 0 });
      const reminder = await rheo.append(STREAM, { payload: 'reminder', delayMs: 60_000 });
      await rheo.cancelDelayed(STREAM, reminder.id, { reason: 'cancelled' });
      await rheo.reset(STREAM, GROUP, { confirm: true, start: 'end' });
      // Retention: set, trim (unforced, then forced past lagging groups), purge by time (with the
      // time index rebuilt from the dead letters, as for data of layout 1), purge all, a turn.
      await rheo.setRetention(STREAM, { maxEvents: 2, maxAgeMs: 60_000 });
      await rheo.trim(STREAM);
      await rheo.trim(STREAM, { force: true });
      const dead = await rheo.fetch(STREAM, 'at-group', { limit: 2, leaseMs: 1000 });
      await rheo.settleMany(dead.map((lease) => ({ kind: 'reject' as const, lease, reason: 'x' })));
      const admin = new Redis(REDIS_URL);
      await admin.del(`${prefix}:{${escapeName(STREAM)}}:g:at-group:deadt`);
      admin.disconnect();
      await rheo.countDeadLetters(STREAM, 'at-group', { since: new Date(clock.now()) });
      await rheo.purgeDeadLetters(STREAM, 'at-group', { before: new Date(clock.now() + 1) });
      await rheo.purgeDeadLetters(STREAM, GROUP, { all: true });
      await rheo.backend.claimTurn(`trim:${STREAM}`, 'me', 1000);
      await rheo.backend.releaseTurn(`trim:${STREAM}`, 'me');
      await rheo.deleteGroup(STREAM, 'end-group', { confirm: true });
      // MONITOR output is asynchronous: a PING round trip on the monitored server flushes it.
      await new Redis(REDIS_URL).quit();
      await new Promise((r) => setTimeout(r, 200));
    } finally {
      // monitor() opened a connection of its own: close both, or the process never exits.
      monitor.disconnect();
      monitorClient.disconnect();
      await rheo.close();
    }
    const expected = slot(`${prefix}:{${escapeName(STREAM)}}:meta`);
    // The keys outside every stream: the layout version and a job's turn, each the one key of its script.
    const crossStream = new Set([`${prefix}:layout`, `${prefix}:turn:${escapeName(`trim:${STREAM}`)}`]);
    // Every script ran with its keys declared, all in one slot: the stream's, or a cross-stream script's own key.
    expect(scriptCalls.length).toBeGreaterThanOrEqual(20);
    const turn = `${prefix}:turn:${escapeName(`trim:${STREAM}`)}`;
    // The layout at start and before the first delayed event (layout 3), then claimTurn and releaseTurn on the turn's key.
    expect(scriptCalls.filter((keys) => keys.some((k) => crossStream.has(k)))).toEqual([
      [`${prefix}:layout`],
      [`${prefix}:layout`],
      [turn],
      [turn],
    ]);
    // Every script of the registry ran (a new script is covered by adding its call above).
    expect([...scriptsRun].sort()).toEqual(Object.keys(SCRIPTS).sort());
    for (const keys of scriptCalls) {
      expect(keys.length).toBeGreaterThan(0);
      if (keys.some((k) => crossStream.has(k))) continue;
      for (const k of keys) expect(slot(k)).toBe(expected);
    }
    // Every key a script's own commands touched was declared to some script call, hence in the slot.
    const declared = new Set(scriptCalls.flat());
    const admin = new Redis(REDIS_URL);
    try {
      expect(luaCommands.length).toBeGreaterThan(50);
      const seen = new Set<string>();
      for (const args of luaCommands) {
        const keys = (await admin.call('COMMAND', 'GETKEYS', ...args)) as string[];
        for (const k of keys) {
          seen.add(k);
          expect(declared.has(k)).toBe(true);
          if (!crossStream.has(k)) expect(slot(k)).toBe(expected);
        }
      }
      // The layout really uses per-partition and per-group keys (the check above is not vacuous).
      expect([...seen].some((k) => k.includes(':log:2'))).toBe(true);
      expect([...seen].some((k) => k.includes(`:g:${escapeName(GROUP)}:dl`))).toBe(true);
      // ... and the retention keys: trimmed logs and ids, the dead-letter time index, both cross-stream keys.
      for (const part of [':ids', ':deadt', ...crossStream]) expect([...seen].some((k) => k.endsWith(part))).toBe(true);
    } finally {
      admin.disconnect();
    }
  });
});
