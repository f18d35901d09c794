import Redis from 'ioredis';
import { Rheo, redisBackend, RheoError } from '../../lib';
import { RedisServer } from './failover-support';
import { freshPrefix } from './support';

// A server of this file's own: CONFIG SET appendonly and maxmemory-policy would change
// what every other file's backends report about durability on the shared one.
let server: RedisServer;
let redisUrl: string;
let admin: Redis;
const prefix = freshPrefix('durability');
let n = 0;
const name = (p: string) => `${p}-${++n}`;

beforeAll(async () => {
  server = await RedisServer.start();
  redisUrl = server.url;
  admin = new Redis(redisUrl);
});

afterAll(async () => {
  admin?.disconnect();
  await server?.stop();
});

/** The RheoWarnings the backend emits (process.emitWarning, observed, still emitted) while `fn` runs. */
async function warningsDuring(fn: () => Promise<void>): Promise<Array<{ message: string; code?: string }>> {
  const spy = jest.spyOn(process, 'emitWarning');
  try {
    await fn();
    return spy.mock.calls
      .filter(([, options]) => typeof options === 'object' && options !== null && (options as { type?: string }).type === 'RheoWarning')
      .map(([warning, options]) => ({ message: String(warning), code: (options as { code?: string }).code }));
  } finally {
    spy.mockRestore();
  }
}

/** Run `fn` with the server's appendonly / maxmemory-policy set as given; the previous values are restored. */
async function withServerConfig(config: { appendonly: string; policy: string }, fn: () => Promise<void>): Promise<void> {
  const [, appendonly] = (await admin.config('GET', 'appendonly')) as string[];
  const [, policy] = (await admin.config('GET', 'maxmemory-policy')) as string[];
  try {
    await admin.config('SET', 'appendonly', config.appendonly);
    await admin.config('SET', 'maxmemory-policy', config.policy);
    await fn();
  } finally {
    await admin.config('SET', 'appendonly', appendonly);
    await admin.config('SET', 'maxmemory-policy', policy);
  }
}

describe('redis: durability of the server, checked at init', () => {
  it('warns once, and in groupInfo, when the server can lose acknowledged writes or evict keys', async () => {
    // The local and CI servers run with appendonly no; eviction is set here for the test.
    await withServerConfig({ appendonly: 'no', policy: 'allkeys-lru' }, async () => {
      const rheo = new Rheo(redisBackend({ url: redisUrl, prefix }));
      const stream = name('lossy');
      try {
        const warnings = await warningsDuring(async () => {
          await rheo.init();
          await rheo.init();
          await rheo.createStream(stream);
          await rheo.createGroup(stream, 'g');
          await rheo.groupInfo(stream, 'g');
        });
        expect(warnings).toHaveLength(1);
        expect(warnings[0].code).toBe('RHEO_REDIS_NOT_DURABLE');
        expect(warnings[0].message).toMatch(/appendonly no/);
        expect(warnings[0].message).toMatch(/maxmemory-policy is allkeys-lru/);
        const info = await rheo.groupInfo(stream, 'g');
        expect(info.warnings).toHaveLength(2);
        expect(info.warnings![0]).toMatch(/appendonly no: .*lost if it restarts or crashes; set appendonly yes/);
        expect(info.warnings![1]).toMatch(/maxmemory-policy is allkeys-lru: .*evict.*; set maxmemory-policy noeviction/);
        // A caller's copy: changing it changes nothing in the backend.
        info.warnings!.length = 0;
        expect((await rheo.groupInfo(stream, 'g')).warnings).toHaveLength(2);
      } finally {
        await rheo.close();
      }
    });
  });

  it('says nothing when the server keeps what it acknowledged (appendonly yes, noeviction)', async () => {
    await withServerConfig({ appendonly: 'yes', policy: 'noeviction' }, async () => {
      const rheo = new Rheo(redisBackend({ url: redisUrl, prefix }));
      const stream = name('durable');
      try {
        const warnings = await warningsDuring(async () => {
          await rheo.createStream(stream);
          await rheo.createGroup(stream, 'g');
        });
        expect(warnings).toEqual([]);
        const info = await rheo.groupInfo(stream, 'g');
        expect(info.warnings ?? []).toEqual([]);
      } finally {
        await rheo.close();
      }
    });
  });

  it('says durability could not be verified when the server refuses CONFIG, and works', async () => {
    // A real server-side refusal: an ACL user allowed everything but CONFIG (as managed services do).
    const user = `rheo-noconfig-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
    await admin.call('ACL', 'SETUSER', user, 'on', '>secret', '~*', '&*', '+@all', '-config');
    const url = new URL(redisUrl);
    url.username = user;
    url.password = 'secret';
    const rheo = new Rheo(redisBackend({ url: url.toString(), prefix }));
    const stream = name('unverified');
    try {
      const warnings = await warningsDuring(async () => {
        await rheo.createStream(stream);
        await rheo.createGroup(stream, 'g');
      });
      expect(warnings).toHaveLength(1);
      expect(warnings[0].message).toMatch(/durability could not be verified: CONFIG GET is not available/);
      const info = await rheo.groupInfo(stream, 'g');
      expect(info.warnings).toEqual([expect.stringMatching(/could not be verified.*appendonly yes and maxmemory-policy noeviction/)]);
      await rheo.append(stream, { payload: 1 });
      expect(await rheo.fetch(stream, 'g')).toHaveLength(1);
    } finally {
      await rheo.close();
      await admin.call('ACL', 'DELUSER', user);
    }
  });
});

describe('redis: keys that vanish behind the backend are reported, never recreated', () => {
  /** Delete every key matching `pattern` (SCAN), as FLUSHDB or eviction would. */
  async function deleteMatching(pattern: string): Promise<number> {
    let cursor = '0';
    let deleted = 0;
    do {
      const [next, keys] = await admin.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      cursor = next;
      if (keys.length) deleted += await admin.del(...keys);
    } while (cursor !== '0');
    return deleted;
  }
  const countMatching = async (pattern: string) => (await admin.keys(pattern)).length;

  async function expectGone(call: Promise<unknown>, code: string, what: RegExp): Promise<void> {
    const err = await call.then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(RheoError);
    expect((err as RheoError).code).toBe(code);
    expect((err as RheoError).message).toMatch(what);
    expect((err as RheoError).message).toMatch(/keys are gone from Redis.*(flushed|evicted)/);
  }

  it("a stream's keys deleted (FLUSHDB, eviction): every group operation throws a RheoError saying so, and nothing is recreated", async () => {
    const rheo = new Rheo(redisBackend({ url: redisUrl, prefix }));
    const stream = name('flushed');
    try {
      await rheo.createStream(stream, { partitions: 2 });
      await rheo.createGroup(stream, 'g');
      await rheo.appendBatch(stream, [{ payload: 1 }, { payload: 2 }]);
      const [lease] = await rheo.fetch(stream, 'g', { limit: 1 });
      const pattern = `${prefix}:{${stream}}:*`;
      expect(await deleteMatching(pattern)).toBeGreaterThan(5);

      const streamGone = new RegExp(`stream "${stream}": its keys are gone from Redis`);
      await expectGone(rheo.fetch(stream, 'g'), 'stream_not_found', streamGone);
      await expectGone(rheo.lag(stream, 'g'), 'stream_not_found', streamGone);
      await expectGone(rheo.groupInfo(stream, 'g'), 'stream_not_found', streamGone);
      await expectGone(rheo.append(stream, { payload: 3 }), 'stream_not_found', streamGone);
      await expectGone(rheo.ack(lease), 'stream_not_found', streamGone);
      await expectGone(rheo.renew(lease), 'stream_not_found', streamGone);
      const [released] = await rheo.releaseMany([lease]);
      expect(released.ok === false && released.error.code).toBe('stream_not_found');
      await expectGone(rheo.replay(stream, 'g', { afterSequence: 0 }), 'stream_not_found', streamGone);
      await expectGone(rheo.redrive(stream, 'g', { all: true }), 'stream_not_found', streamGone);
      await expectGone(rheo.reset(stream, 'g', { confirm: true }), 'stream_not_found', streamGone);
      await expectGone(rheo.deadLetters(stream, 'g'), 'stream_not_found', streamGone);
      // Not one key was written back by any of those calls.
      expect(await countMatching(pattern)).toBe(0);
    } finally {
      await rheo.close();
    }
  });

  it("a group's keys deleted while its stream survives: group_not_found saying the keys are gone", async () => {
    const rheo = new Rheo(redisBackend({ url: redisUrl, prefix }));
    const stream = name('group-evicted');
    try {
      await rheo.createStream(stream);
      await rheo.createGroup(stream, 'g');
      await rheo.append(stream, { payload: 1 });
      const [lease] = await rheo.fetch(stream, 'g');
      const pattern = `${prefix}:{${stream}}:g:g:*`;
      expect(await deleteMatching(pattern)).toBeGreaterThan(0);
      const groupGone = new RegExp(`group "g" of stream "${stream}": its keys are gone from Redis`);
      await expectGone(rheo.fetch(stream, 'g'), 'group_not_found', groupGone);
      await expectGone(rheo.ack(lease), 'group_not_found', groupGone);
      await expectGone(rheo.lag(stream, 'g'), 'group_not_found', groupGone);
      expect(await countMatching(pattern)).toBe(0);
      // The stream itself is fine.
      expect(await rheo.read(stream)).toHaveLength(1);
    } finally {
      await rheo.close();
    }
  });

  it('a log evicted below the high watermark: fetch reports the missing event instead of delivering an empty one', async () => {
    const rheo = new Rheo(redisBackend({ url: redisUrl, prefix }));
    const stream = name('log-evicted');
    try {
      await rheo.createStream(stream);
      await rheo.createGroup(stream, 'g');
      await rheo.appendBatch(stream, [{ payload: 1 }, { payload: 2 }]);
      await admin.del(`${prefix}:{${stream}}:log:0`);
      const err = await rheo.fetch(stream, 'g').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(RheoError);
      expect((err as RheoError).code).toBe('failed');
      expect((err as RheoError).message).toMatch(
        /event 1 of partition 0 is missing from .*:log:0 below the high watermark: the stream's keys are gone from Redis, possibly evicted/,
      );
      // Nothing was claimed: the cursor did not move.
      expect(await admin.hget(`${prefix}:{${stream}}:g:g:cfg`, 'c:0')).toBe('1');
    } finally {
      await rheo.close();
    }
  });
});
