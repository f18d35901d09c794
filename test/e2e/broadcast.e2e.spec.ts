// @RheoConsumer({ broadcast: true }) in Nest apps: two instances of an app on one
// SQLite file each get every later event in a group of their own, the module's
// defaults apply where they fit, health reports the instance's group, and a
// closed app leaves no group behind. Bad broadcast options are refused at startup
// naming the field and where it came from. (Several processes on PostgreSQL and
// Redis, crashes included: test/sql/postgres.broadcast.spec.ts, test/redis/broadcast.spec.ts.)
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Controller, type INestMicroservice } from '@nestjs/common';
import { Ctx, Payload } from '@nestjs/microservices';
import {
  memoryBackend,
  Rheo,
  RheoConsumer,
  RheoContext,
  RheoHealthIndicator,
  RheoModule,
  type RheoModuleOptions,
  RheoServer,
  sqliteBackend,
} from '../../lib';
import { BroadcastMember } from '../../lib/runtime/broadcast';
import { createMicroservice, startupError as startupErrorOf } from './support';
import { until } from '../support/until';

/** Event ids each app instance handled, per consumer: the broadcast one and an ordinary one. */
const seen = new Map<string, { cache: string[]; audit: string[] }>();
@Controller()
class CacheController {
  @RheoConsumer({ stream: 'prices', group: 'cache', broadcast: true, pollMs: 20 })
  invalidate(@Payload() p: unknown, @Ctx() ctx: RheoContext) {
    void p;
    seen.get(instanceOf(ctx))!.cache.push(ctx.event.id);
  }

  @RheoConsumer({ stream: 'prices', group: 'audit', pollMs: 20 })
  audit(@Payload() p: unknown, @Ctx() ctx: RheoContext) {
    void p;
    seen.get(instanceOf(ctx))!.audit.push(ctx.event.id);
  }
}

/** Which app instance handled a delivery: each app's consumers carry its name in their consumer id. */
function instanceOf(ctx: RheoContext): string {
  return ctx.lease.consumerId.split(':')[0];
}

describe('broadcast consumers in Nest apps', () => {
  let dir: string;
  const apps: INestMicroservice[] = [];

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'rheo-broadcast-'));
  });
  afterAll(async () => {
    for (const app of apps.splice(0)) await app.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function startApp(name: string, database: string): Promise<INestMicroservice> {
    seen.set(name, { cache: [], audit: [] });
    const app = await createMicroservice({
      imports: [
        RheoModule.forRoot({
          backend: sqliteBackend({ database }),
          streams: [{ name: 'prices', partitions: 2 }],
          // Defaults apply where they fit: the ordinary group starts at the beginning, the broadcast one at the end.
          defaults: { start: 'beginning', broadcastTtlMs: 600, consumerId: `${name}:consumer` },
          trimIntervalMs: 0,
        }),
      ],
      controllers: [CacheController],
    });
    await app.listen();
    apps.push(app);
    return app;
  }

  it('gives each instance every later event in its own group; health reports it; closing removes it', async () => {
    const database = join(dir, 'two-apps.db');
    const store = new Rheo(sqliteBackend({ database }));
    await store.createStream('prices', { partitions: 2 });
    const [early] = await store.appendBatch('prices', [{ key: 'early', payload: 0 }]);

    const one = await startApp('one', database);
    const two = await startApp('two', database);
    const groupOf = (app: INestMicroservice) =>
      app
        .get(RheoServer)
        .consumers()
        .find((c) => c.handlerName.endsWith('invalidate'))!.group;
    const [g1, g2] = [groupOf(one), groupOf(two)];
    expect(g1).toMatch(/^cache\.[0-9a-f]{16}$/);
    expect(g2).toMatch(/^cache\.[0-9a-f]{16}$/);
    expect(g1).not.toBe(g2);
    expect((await store.listGroups('prices')).map((g) => g.group).sort()).toEqual(['audit', g1, g2].sort());

    const later = (
      await store.appendBatch(
        'prices',
        [1, 2, 3, 4].map((n) => ({ key: `k${n}`, payload: n })),
      )
    ).map((e) => e.id);
    for (const name of ['one', 'two']) {
      await until(`instance ${name} to get every later event`, () => later.every((id) => seen.get(name)!.cache.includes(id)));
      expect(seen.get(name)!.cache).not.toContain(early.id);
    }
    // The ordinary group is shared by the two instances, from the beginning: each event once between them.
    await until('the audit group to finish', async () => (await store.lag('prices', 'audit')).lag === 0);
    expect([...seen.get('one')!.audit, ...seen.get('two')!.audit].sort()).toEqual([early.id, ...later].sort());

    // Health checks this instance's own group.
    const health = await one.get(RheoHealthIndicator).isHealthy('rheo', { maxLag: 10 });
    expect(health.rheo.status).toBe('up');
    expect(Object.keys(health.rheo.groups as object).sort()).toEqual([`prices/${g1}`, 'prices/audit'].sort());

    await one.close();
    apps.splice(apps.indexOf(one), 1);
    expect((await store.listGroups('prices')).map((g) => g.group).sort()).toEqual(['audit', g2].sort());
    // Its heartbeat was given up, not left to expire.
    expect(await store.backend.releaseTurn(BroadcastMember.jobOf('prices', g1), 'anyone')).toBe(false);
    expect(await store.backend.claimTurn(BroadcastMember.jobOf('prices', g1), 'anyone', 60_000)).toBe(true);
    await two.close();
    apps.splice(apps.indexOf(two), 1);
    expect((await store.listGroups('prices')).map((g) => g.group)).toEqual(['audit']);
    await store.close();
  });
});

describe('bad broadcast options are refused at startup, naming the field and its source', () => {
  const startupError = (controller: unknown, options: Omit<RheoModuleOptions, 'backend' | 'streams'> = {}) =>
    startupErrorOf('prices', controller, options);

  function consumer(options: object) {
    @Controller()
    class C {
      @RheoConsumer({ stream: 'prices', group: 'cache', ...options } as never)
      on() {}
    }
    return C;
  }

  it('a start other than the end, on the decorator or in consumers[...]', async () => {
    const own = await startupError(consumer({ broadcast: true, start: 'beginning' }));
    expect(own.field).toBe('start');
    expect(own.message).toBe(
      "C.on: start must be 'end' or absent for a broadcast consumer: each instance's group starts at the end of the stream",
    );
    const configured = await startupError(consumer({ broadcast: true }), {
      consumers: { 'prices/cache': { start: { afterSequence: 3 } } },
    });
    expect(configured.field).toBe('consumers["prices/cache"].start');
  });

  it('broadcastTtlMs out of range, or set on a consumer that is not broadcast', async () => {
    expect((await startupError(consumer({ broadcast: true, broadcastTtlMs: 99 }))).field).toBe('broadcastTtlMs');
    expect((await startupError(consumer({ broadcast: true }), { defaults: { broadcastTtlMs: 0 } })).field).toBe('defaults.broadcastTtlMs');
    expect((await startupError(consumer({ broadcastTtlMs: 1000 }))).field).toBe('broadcastTtlMs');
    expect((await startupError(consumer({}), { consumers: { 'prices/cache': { broadcastTtlMs: 1000 } } })).field).toBe(
      'consumers["prices/cache"].broadcastTtlMs',
    );
  });

  it('a group-wide flow limit, on the decorator or in consumers[...]: each instance has a group of its own', async () => {
    const own = await startupError(consumer({ broadcast: true, groupConcurrency: 4 }));
    expect(own.field).toBe('groupConcurrency');
    expect(own.message).toMatch(
      /^C\.on: groupConcurrency cannot be set on a broadcast consumer: each instance consumes a group of its own/,
    );
    const configured = await startupError(consumer({ broadcast: true }), {
      consumers: { 'prices/cache': { rateLimit: { max: 10, perMs: 1000 } } },
    });
    expect(configured.field).toBe('consumers["prices/cache"].rateLimit');
  });

  it('broadcast itself: a boolean, on the decorator only, with room in the group name for the instance id', async () => {
    expect((await startupError(consumer({ broadcast: 'yes' }))).field).toBe('broadcast');
    // Refused with the module's options, before any transport starts.
    await expect(
      createMicroservice({
        imports: [RheoModule.forRoot({ backend: memoryBackend(), consumers: { 'prices/cache': { broadcast: true } as never } })],
        controllers: [consumer({})],
      }),
    ).rejects.toMatchObject({ field: 'consumers["prices/cache"].broadcast' });
    @Controller()
    class Long {
      @RheoConsumer({ stream: 'prices', group: 'g'.repeat(184), broadcast: true })
      on() {}
    }
    expect((await startupError(Long)).field).toBe('group');
  });
});
