import { DataSource } from 'typeorm';
import { ManualClock, Rheo, RheoError, postgresBackend, rheoMigrations, typeormBackend } from '../../lib';
import { PostgresBackend } from '../../lib/backends/postgres/postgres-backend';
import { mapDriverError } from '../../lib/backends/sql/errors';
import { dropSchema, freshSchema, pgDataSource, PG_URL } from './pg-helpers';

const schema = freshSchema('pg');

async function code(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'ok';
  } catch (err) {
    expect(err).toBeInstanceOf(RheoError);
    return (err as RheoError).code;
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Poll `cond` every 50 ms, at most `tries` times (a bound, never a timing assertion). */
async function until(cond: () => Promise<boolean> | boolean, tries = 200): Promise<void> {
  for (let i = 0; i < tries; i++) {
    if (await cond()) return;
    await sleep(50);
  }
  throw new Error('condition not reached');
}

describe('postgres backend', () => {
  let ds: DataSource;
  let backend: PostgresBackend;
  let rheo: Rheo;
  const clock = new ManualClock(Date.UTC(2026, 0, 1));

  beforeAll(async () => {
    ds = await pgDataSource();
    backend = typeormBackend({ dataSource: ds, schema, clock }) as PostgresBackend;
    rheo = new Rheo(backend);
    await rheo.init();
    await ds.query(`CREATE TABLE "${schema}".orders (id text PRIMARY KEY)`);
  });

  afterAll(async () => {
    await rheo.close();
    // The DataSource is the host's: close() must have left it open.
    expect(ds.isInitialized).toBe(true);
    await ds.destroy();
    await dropSchema(schema);
  });

  describe('transactional append (outbox)', () => {
    it('commits the business row and the event together', async () => {
      await rheo.createStream('outbox-commit');
      await ds.transaction(async (manager) => {
        await manager.query(`INSERT INTO "${schema}".orders (id) VALUES ($1)`, ['o-1']);
        await rheo.append('outbox-commit', { id: 'e-o-1', type: 'order_placed', payload: { order: 'o-1' } }, { manager });
      });
      expect(await ds.query(`SELECT id FROM "${schema}".orders WHERE id = 'o-1'`)).toHaveLength(1);
      const [e] = await rheo.read('outbox-commit');
      expect(e).toMatchObject({ id: 'e-o-1', sequence: 1, payload: { order: 'o-1' } });
    });

    it('rolls back the business row and the event together, leaving no gap in the sequence', async () => {
      await rheo.createStream('outbox-rollback');
      await expect(
        ds.transaction(async (manager) => {
          await manager.query(`INSERT INTO "${schema}".orders (id) VALUES ($1)`, ['o-2']);
          await rheo.appendBatch('outbox-rollback', [{ payload: 1 }, { payload: 2 }], { manager });
          throw new Error('business rule failed');
        }),
      ).rejects.toThrow('business rule failed');
      expect(await ds.query(`SELECT id FROM "${schema}".orders WHERE id = 'o-2'`)).toHaveLength(0);
      expect(await rheo.read('outbox-rollback')).toEqual([]);
      const [next] = await rheo.appendBatch('outbox-rollback', [{ payload: 3 }]);
      expect(next.sequence).toBe(1);
    });

    it('refuses a manager that is not in a transaction, writing nothing', async () => {
      await rheo.createStream('outbox-bad');
      const err = (await rheo.append('outbox-bad', { payload: 1 }, { manager: ds.manager }).catch((e) => e)) as RheoError;
      expect(err).toMatchObject({ code: 'invalid_argument', field: 'options.manager' });
      expect(await rheo.read('outbox-bad')).toEqual([]);
    });
  });

  describe('wake-ups', () => {
    it('LISTEN survives pg_terminate_backend: the listener reconnects and wait() is woken by another node', async () => {
      await rheo.createStream('wake');
      await rheo.createGroup('wake', 'g');
      await backend.listen();
      await until(() => backend.listenerConnections === 1);
      const app = `rheo_listener_${schema}`;
      const killed = await ds.query(`SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name = $1`, [app]);
      expect(killed).toEqual([{ ok: true }]);
      await until(() => backend.listenerConnections === 2);
      await until(
        async () =>
          (await ds.query(`SELECT 1 FROM pg_stat_activity WHERE application_name = $1 AND query ILIKE 'LISTEN%'`, [app])).length === 1,
      );

      // Another node (its own pool) appends; only NOTIFY can carry that to us.
      const other = new Rheo(postgresBackend({ url: PG_URL, schema, poolSize: 1 }));
      try {
        const waited = backend
          .wait({ stream: 'wake', group: 'g', timeoutMs: 60_000, signal: new AbortController().signal })
          .then(() => 'woken');
        const sentinel = sleep(20_000).then(() => 'timeout');
        await other.append('wake', { payload: 'ping' });
        expect(await Promise.race([waited, sentinel])).toBe('woken');
      } finally {
        await other.close();
      }
    });

    it('wait() ends at its timeout or on abort without a notification', async () => {
      await rheo.createStream('quiet');
      const ac = new AbortController();
      const w = backend.wait({ stream: 'quiet', group: 'g', timeoutMs: 60_000, signal: ac.signal });
      ac.abort();
      await expect(w).resolves.toBeUndefined();
      await expect(
        backend.wait({ stream: 'quiet', group: 'g', timeoutMs: 10, signal: new AbortController().signal }),
      ).resolves.toBeUndefined();
    });
  });

  describe('concurrency across nodes', () => {
    it('allocates contiguous sequences when many nodes append to one partition at once', async () => {
      await rheo.createStream('seq');
      const nodes = Array.from({ length: 4 }, () => new Rheo(postgresBackend({ url: PG_URL, schema, poolSize: 3 })));
      try {
        await Promise.all(
          nodes.flatMap((n, i) =>
            Array.from({ length: 10 }, (_, j) =>
              n.appendBatch(
                'seq',
                Array.from({ length: 5 }, (_, k) => ({ payload: { i, j, k } })),
              ),
            ),
          ),
        );
      } finally {
        await Promise.all(nodes.map((n) => n.close()));
      }
      const all = await rheo.read('seq', { limit: 1000 });
      expect(all.map((e) => e.sequence)).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
      // Each batch got a contiguous range.
      const byBatch = new Map<string, number[]>();
      for (const e of all) {
        const p = e.payload as { i: number; j: number };
        const k = `${p.i}/${p.j}`;
        byBatch.set(k, [...(byBatch.get(k) ?? []), e.sequence]);
      }
      for (const seqs of byBatch.values()) expect(seqs[seqs.length - 1] - seqs[0]).toBe(4);
    });

    it('commits in sequence order: a reader tailing concurrent appends never sees a gap that fills later', async () => {
      await rheo.createStream('tail');
      const nodes = Array.from({ length: 4 }, () => new Rheo(postgresBackend({ url: PG_URL, schema, poolSize: 2 })));
      let writing = true;
      let seen = 0;
      let reads = 0;
      const reader = (async () => {
        while (writing || seen < 400) {
          // Taken before the read: a read that started while the last appends were
          // committing may come back empty after they are done, and must not end the loop.
          const done = !writing;
          const got = await rheo.read('tail', { afterSequence: seen, limit: 1000 });
          reads++;
          // Whatever is visible is contiguous from where we were: 1..n, never 1..n plus n+2.
          got.forEach((e, i) => expect(e.sequence).toBe(seen + i + 1));
          seen += got.length;
          if (done && got.length === 0) break;
        }
      })();
      try {
        await Promise.all(
          nodes.map((n, i) =>
            (async () => {
              for (let j = 0; j < 20; j++)
                await n.appendBatch(
                  'tail',
                  Array.from({ length: 5 }, (_, k) => ({ payload: { i, j, k } })),
                );
            })(),
          ),
        );
      } finally {
        writing = false;
        await reader;
        await Promise.all(nodes.map((n) => n.close()));
      }
      expect(seen).toBe(400);
      expect(reads).toBeGreaterThan(1);
    });

    it('never hands one event to two live leases when nodes race their fetches', async () => {
      await rheo.createStream('race', { partitions: 3 });
      await rheo.appendBatch(
        'race',
        Array.from({ length: 300 }, (_, i) => ({ partition: i % 3, payload: i })),
      );
      await rheo.createGroup('race', 'g');
      const nodes = Array.from({ length: 4 }, () => new Rheo(postgresBackend({ url: PG_URL, schema, clock, poolSize: 2 })));
      const seen = new Map<string, number>();
      try {
        await Promise.all(
          nodes.map(async (n) => {
            for (;;) {
              const leases = await n.fetch('race', 'g', { limit: 7, leaseMs: 600_000 });
              if (leases.length === 0) return;
              for (const l of leases) seen.set(l.event.id, (seen.get(l.event.id) ?? 0) + 1);
              const results = await n.settleMany(leases.map((lease) => ({ kind: 'ack' as const, lease })));
              expect(results.every((r) => r.ok)).toBe(true);
            }
          }),
        );
      } finally {
        await Promise.all(nodes.map((n) => n.close()));
      }
      expect(seen.size).toBe(300);
      expect([...seen.values()].every((c) => c === 1)).toBe(true);
      expect((await rheo.lag('race', 'g')).lag).toBe(0);
    });

    it('keeps at most one live lease per partition for an ordered group when nodes race', async () => {
      await rheo.createStream('strict', { partitions: 2 });
      await rheo.appendBatch(
        'strict',
        Array.from({ length: 40 }, (_, i) => ({ partition: i % 2, payload: i })),
      );
      await rheo.createGroup('strict', 'g', { ordering: 'partition' });
      const nodes = Array.from({ length: 3 }, () => new Rheo(postgresBackend({ url: PG_URL, schema, clock, poolSize: 2 })));
      const order: Record<number, number[]> = { 0: [], 1: [] };
      try {
        let held = 0;
        await Promise.all(
          nodes.map(async (n) => {
            for (let idle = 0; idle < 20;) {
              const leases = await n.fetch('strict', 'g', { limit: 10, leaseMs: 600_000 });
              if (leases.length === 0) {
                idle++;
                await sleep(5);
                continue;
              }
              held += leases.length;
              // Two partitions: never more than two live leases in the whole group. (Counted down before
              // the ack is sent, so an ack in flight can only make the count low, never falsely high.)
              expect(held).toBeLessThanOrEqual(2);
              for (const l of leases) order[l.event.partition].push(l.event.sequence);
              await sleep(2);
              held -= leases.length;
              await n.settleMany(leases.map((lease) => ({ kind: 'ack' as const, lease })));
            }
          }),
        );
      } finally {
        await Promise.all(nodes.map((n) => n.close()));
      }
      expect(order[0]).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
      expect(order[1]).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    });

    it('keeps the frontier exact when acks of one partition commit concurrently from many connections', async () => {
      await rheo.createStream('frontier');
      await rheo.appendBatch(
        'frontier',
        Array.from({ length: 200 }, (_, i) => ({ payload: i })),
      );
      await rheo.createGroup('frontier', 'g');
      const leases = await rheo.fetch('frontier', 'g', { limit: 200, leaseMs: 600_000 });
      const nodes = Array.from({ length: 4 }, () => new Rheo(postgresBackend({ url: PG_URL, schema, clock, poolSize: 4 })));
      try {
        // Ack in reverse order, one lease per call, spread over 16 connections.
        await Promise.all(leases.reverse().map((lease, i) => nodes[i % 4].ack(lease)));
      } finally {
        await Promise.all(nodes.map((n) => n.close()));
      }
      expect(await rheo.lag('frontier', 'g')).toMatchObject({ lag: 0, partitions: [{ frontier: 200, highWatermark: 200 }] });
    });
  });

  describe('install', () => {
    it("install: 'auto' is safe when many processes start at once", async () => {
      const s = freshSchema('race');
      const sources = await Promise.all(Array.from({ length: 5 }, () => pgDataSource(1)));
      try {
        const backends = sources.map((d) => typeormBackend({ dataSource: d, schema: s }));
        await Promise.all(backends.map((b) => b.init()));
        const tables = await sources[0].query(
          `SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name`,
          [s],
        );
        expect(tables.map((t: { table_name: string }) => t.table_name)).toEqual([
          'rheo_dead_letters',
          'rheo_deliveries',
          'rheo_events',
          'rheo_group_partitions',
          'rheo_groups',
          'rheo_jobs',
          'rheo_partitions',
          'rheo_schema_version',
          'rheo_streams',
        ]);
        // Every version recorded once, whoever applied it.
        expect(await sources[0].query(`SELECT version, name FROM "${s}".rheo_schema_version ORDER BY version`)).toEqual([
          { version: 1, name: 'initial' },
          { version: 2, name: 'flat-cost' },
          { version: 3, name: 'delayed-events' },
          { version: 4, name: 'pause-groups' },
          { version: 5, name: 'skip-reschedule-cancel' },
        ]);
        const r = new Rheo(backends[3]);
        await r.createStream('x');
        expect((await r.append('x', { payload: 1 })).sequence).toBe(1);
        await Promise.all(backends.map((b) => b.close()));
      } finally {
        await Promise.all(sources.map((d) => d.destroy()));
        await dropSchema(s);
      }
    });

    it("rheoMigrations create the same tables for hosts that run migrations (install: 'none'), one class per version; undo reverses each", async () => {
      const s = freshSchema('mig');
      const d = new DataSource({
        type: 'postgres',
        url: PG_URL,
        poolSize: 2,
        migrations: rheoMigrations({ schema: s }),
        migrationsTableName: 'rheo_test_migrations_' + s,
      });
      await d.initialize();
      try {
        const ran = await d.runMigrations();
        expect(ran.map((m) => m.name)).toEqual([
          'RheoCreateTables1764374400000',
          'RheoFlatCost1796083200000',
          'RheoDelayedEvents1798761600000',
          'RheoPauseGroups1801440000000',
          'RheoSkipRescheduleCancel1803859200000',
          // Every version either dialect has: a version the other dialect has first is a no-op here.
          'RheoFlowControl1806537600000',
        ]);
        expect(await d.query(`SELECT version FROM "${s}".rheo_schema_version ORDER BY version`)).toEqual([
          { version: 1 },
          { version: 2 },
          { version: 3 },
          { version: 4 },
          { version: 5 },
        ]);
        const r = new Rheo(typeormBackend({ dataSource: d, schema: s, install: 'none' }));
        await r.createStream('m');
        await r.createGroup('m', 'g');
        await r.append('m', { payload: 'x' });
        const [l] = await r.fetch('m', 'g');
        await r.ack(l);
        expect((await r.lag('m', 'g')).lag).toBe(0);
        // A dead letter, to see version 2's down carry it back.
        await r.append('m', { payload: 'poison' });
        const [poison] = await r.fetch('m', 'g');
        await r.reject(poison, { reason: 'bad' });
        await r.close();

        // Version 6's down leaves version 5 (while only SQLite has version 6, its class changes nothing here).
        await d.undoLastMigration();
        expect(await d.query(`SELECT max(version) AS v FROM "${s}".rheo_schema_version`)).toEqual([{ v: 5 }]);
        // Version 5's down drops the cancel and skip columns, and leaves version 4.
        await d.undoLastMigration();
        expect(await d.query(`SELECT version FROM "${s}".rheo_schema_version ORDER BY version`)).toEqual([
          { version: 1 },
          { version: 2 },
          { version: 3 },
          { version: 4 },
        ]);
        const skipColumns = await d.query(
          `SELECT column_name FROM information_schema.columns
           WHERE table_schema = $1 AND column_name IN ('cancelled_at', 'skipped', 'skip_reason', 'skipped_at')`,
          [s],
        );
        expect(skipColumns).toEqual([]);

        // Version 4's down drops the pause columns, and leaves version 3.
        await d.undoLastMigration();
        expect(await d.query(`SELECT version FROM "${s}".rheo_schema_version ORDER BY version`)).toEqual([
          { version: 1 },
          { version: 2 },
          { version: 3 },
        ]);
        const pauseColumns = await d.query(
          `SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND column_name LIKE 'pause%'`,
          [s],
        );
        expect(pauseColumns).toEqual([]);

        // Version 3's down drops the delay columns, and leaves version 2.
        await d.undoLastMigration();
        expect(await d.query(`SELECT version FROM "${s}".rheo_schema_version ORDER BY version`)).toEqual([{ version: 1 }, { version: 2 }]);
        const delayColumns = await d.query(
          `SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND column_name IN ('deliver_at', 'delayed_to')`,
          [s],
        );
        expect(delayColumns).toEqual([]);

        await d.undoLastMigration();
        // Back to version 1: its six tables and the record, the dead letter a 'dead' delivery again.
        expect(await d.query(`SELECT version FROM "${s}".rheo_schema_version`)).toEqual([{ version: 1 }]);
        expect(await d.query(`SELECT state, reason FROM "${s}".rheo_deliveries`)).toEqual([{ state: 'dead', reason: 'bad' }]);
        const v1 = await d.query(`SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name`, [s]);
        expect(v1.map((t: { table_name: string }) => t.table_name)).toEqual([
          'rheo_deliveries',
          'rheo_events',
          'rheo_group_partitions',
          'rheo_groups',
          'rheo_partitions',
          'rheo_schema_version',
          'rheo_streams',
        ]);
        // This release refuses to run on version 1 without installing.
        expect(await code(new Rheo(typeormBackend({ dataSource: d, schema: s, install: 'none' })).createStream('n'))).toBe('failed');

        await d.undoLastMigration();
        const left = await d.query(`SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = $1`, [s]);
        expect(left).toEqual([{ n: 0 }]);
      } finally {
        await d.query(`DROP TABLE IF EXISTS "rheo_test_migrations_${s}"`);
        await d.destroy();
        await dropSchema(s);
      }
    });

    it("install: 'auto' works for a role that owns its schema but may not create schemas", async () => {
      const s = freshSchema('role');
      const role = `${s}_owner`;
      await ds.query(`CREATE ROLE "${role}" LOGIN`);
      await ds.query(`CREATE SCHEMA "${s}" AUTHORIZATION "${role}"`);
      const url = PG_URL.replace('postgres://postgres@', `postgres://${role}@`);
      expect(url).not.toBe(PG_URL);
      const r = new Rheo(postgresBackend({ url, schema: s, poolSize: 1 }));
      try {
        await r.createStream('mine');
        expect((await r.append('mine', { payload: 1 })).sequence).toBe(1);
      } finally {
        await r.close();
        await dropSchema(s);
        await ds.query(`DROP ROLE "${role}"`);
      }
    });

    it("install: 'none' on a database without the tables fails clearly instead of creating them", async () => {
      const s = freshSchema('none');
      const d = await pgDataSource(1);
      try {
        const r = new Rheo(typeormBackend({ dataSource: d, schema: s, install: 'none' }));
        expect(await code(r.createStream('x'))).toBe('failed');
        expect(await d.query(`SELECT 1 FROM information_schema.schemata WHERE schema_name = $1`, [s])).toEqual([]);
      } finally {
        await d.destroy();
      }
    });
  });

  describe('bad input and unavailability', () => {
    it('validates options, naming the field', () => {
      expect(() => typeormBackend({ dataSource: ds, schema: 'bad"; DROP TABLE x; --' })).toThrow(
        expect.objectContaining({ code: 'invalid_argument', field: 'options.schema' }),
      );
      expect(() => typeormBackend({ dataSource: ds, install: 'sometimes' as never })).toThrow(
        expect.objectContaining({ field: 'options.install' }),
      );
      expect(() => typeormBackend({ dataSource: {} as never })).toThrow(expect.objectContaining({ field: 'options.dataSource' }));
      expect(() => postgresBackend({ url: 'mysql://x' })).toThrow(expect.objectContaining({ field: 'options.url' }));
      expect(() => postgresBackend({ url: PG_URL, poolSize: 0 })).toThrow(expect.objectContaining({ field: 'options.poolSize' }));
      const mysqlLike = { options: { type: 'mysql' }, createQueryRunner: () => null } as never;
      expect(() => typeormBackend({ dataSource: mysqlLike })).toThrow(expect.objectContaining({ field: 'options.dataSource' }));
    });

    it('stream and group names with quotes and SQL never reach SQL text', async () => {
      const name = `x'); DROP TABLE "${schema}".rheo_events; --`;
      await rheo.createStream(name);
      await rheo.createGroup(name, `"g"; --`);
      await rheo.append(name, { payload: { q: "it's" } });
      const [l] = await rheo.fetch(name, `"g"; --`);
      expect(l.event.payload).toEqual({ q: "it's" });
      await rheo.ack(l);
      expect((await rheo.lag(name, `"g"; --`)).lag).toBe(0);
    });

    it('a borrowed DataSource that is not initialized is backend_unavailable', async () => {
      const d = new DataSource({ type: 'postgres', url: PG_URL });
      const r = new Rheo(typeormBackend({ dataSource: d, schema }));
      expect(await code(r.ping())).toBe('backend_unavailable');
      expect(await code(r.createStream('never'))).toBe('backend_unavailable');
      expect(d.isInitialized).toBe(false);
    });

    it('a server that went away mid-life is backend_unavailable, and the backend recovers when it is back', async () => {
      // Its own pool under its own name: killing it must not touch any other process's connections.
      const app = `rheo_flaky_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
      const own = new DataSource({ type: 'postgres', url: PG_URL, poolSize: 1, applicationName: app });
      await own.initialize();
      const r = new Rheo(typeormBackend({ dataSource: own, schema }));
      try {
        await r.createStream('flaky', { ifNotExists: true });
        // Kill every connection of that pool, as a server restart would.
        await ds.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1`, [app]);
        await until(async () => (await ds.query(`SELECT 1 FROM pg_stat_activity WHERE application_name = $1`, [app])).length === 0);
        const first = await code(r.append('flaky', { payload: 1 }));
        expect(['ok', 'backend_unavailable', 'ambiguous']).toContain(first);
        expect(await code(r.append('flaky', { payload: 2 }))).toBe('ok');
      } finally {
        await r.close();
        await own.destroy();
      }
    });

    it('maps driver errors to the portable vocabulary', () => {
      const pg = (code: string, message = 'x') => Object.assign(new Error(message), { code });
      expect(mapDriverError(pg('ECONNREFUSED'), 'read', 'op').code).toBe('backend_unavailable');
      expect(mapDriverError(pg('57P01'), 'write', 'op').code).toBe('backend_unavailable');
      expect(mapDriverError(pg('57014'), 'write', 'op').code).toBe('ambiguous');
      expect(mapDriverError(new Error('Connection terminated unexpectedly'), 'write', 'op').code).toBe('ambiguous');
      expect(mapDriverError(new Error('Connection terminated unexpectedly'), 'read', 'op').code).toBe('backend_unavailable');
      expect(mapDriverError(pg('23505'), 'write', 'op').code).toBe('already_exists');
      expect(mapDriverError(pg('22P02'), 'write', 'op').code).toBe('failed');
      expect(mapDriverError(pg('SQLITE_BUSY'), 'write', 'op').code).toBe('backend_unavailable');
      // Extended codes by their primary code.
      expect(mapDriverError(pg('SQLITE_BUSY_SNAPSHOT'), 'write', 'op').code).toBe('backend_unavailable');
      expect(mapDriverError(pg('SQLITE_IOERR_WRITE'), 'write', 'op').code).toBe('backend_unavailable');
      expect(mapDriverError(pg('SQLITE_CONSTRAINT_NOTNULL'), 'write', 'op').code).toBe('failed');
      expect(mapDriverError(pg('SQLITE_CONSTRAINT_UNIQUE'), 'write', 'op').code).toBe('already_exists');
      const wrapped = Object.assign(new Error('query failed'), { driverError: pg('40P01') });
      const mapped = mapDriverError(wrapped, 'write', 'op');
      expect(mapped).toBeInstanceOf(RheoError);
      expect(mapped.code).toBe('failed');
    });
  });
});
