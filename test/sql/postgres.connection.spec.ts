import { readFileSync } from 'node:fs';
import { DataSource } from 'typeorm';
import { Rheo, RheoError, postgresBackend, rheoEntities, rheoMigrations, typeormBackend } from '../../lib';
import { PostgresBackend } from '../../lib/backends/postgres/postgres-backend';
import { listenerClientConfig } from '../../lib/backends/postgres/listener';
import { dropSchema, freshSchema, pgDataSource, PG_URL } from './pg-helpers';

// How the PostgreSQL backend names things and connects: schema names against
// every identifier derived from them, and the LISTEN connection's settings.

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const random = () => Math.random().toString(36).slice(2, 8);

/** Poll `cond` every 50 ms, at most `tries` times (a bound, never a timing assertion). */
async function until(cond: () => Promise<boolean> | boolean, tries = 200): Promise<void> {
  for (let i = 0; i < tries; i++) {
    if (await cond()) return;
    await sleep(50);
  }
  throw new Error('condition not reached');
}

/** A fresh schema with the tables installed (by a backend with install 'auto', closed since). */
async function installed(label: string): Promise<string> {
  const schema = freshSchema(label);
  const installer = postgresBackend({ url: PG_URL, schema, poolSize: 1 });
  await installer.init();
  await installer.close();
  return schema;
}

let admin: DataSource;
beforeAll(async () => {
  admin = await pgDataSource(1);
});
afterAll(async () => {
  await admin.destroy();
});

describe('postgres: schema names', () => {
  // The NOTIFY channel is rheo_<schema>, and PostgreSQL refuses channel names over 63 bytes.
  const longest = `rheo_t_max_${process.pid}_${random()}_`.padEnd(58, 'x');
  const tooLong = `${longest}y`;

  afterAll(() => dropSchema(longest));

  it('accepts the longest schema whose derived identifiers fit, and it works end to end: append, fetch, ack, wake-ups', async () => {
    expect(longest).toHaveLength(58);
    const consumer = new Rheo(postgresBackend({ url: PG_URL, schema: longest, poolSize: 2 }));
    const producer = new Rheo(typeormBackend({ dataSource: admin, schema: longest }));
    try {
      await consumer.createStream('s');
      await consumer.createGroup('s', 'g');
      const backend = consumer.backend as PostgresBackend;
      await backend.listen();
      expect(await consumer.fetch('s', 'g')).toEqual([]);
      // Another node's append reaches the consumer only through NOTIFY on the 63-byte channel.
      const waited = backend.wait({ stream: 's', group: 'g', timeoutMs: 60_000, signal: new AbortController().signal }).then(() => 'woken');
      await sleep(20);
      const appended = await producer.append('s', { payload: 'max' });
      expect(await Promise.race([waited, sleep(20_000).then(() => 'timeout')])).toBe('woken');
      const [lease] = await consumer.fetch('s', 'g');
      expect(lease.event.id).toBe(appended.id);
      await consumer.ack(lease);
      expect((await consumer.lag('s', 'g')).lag).toBe(0);
      const listening = await admin.query(`SELECT query FROM pg_stat_activity WHERE query = $1`, [`LISTEN "rheo_${longest}"`]);
      expect(listening).toHaveLength(1);
      // The other identifiers of the install (constraints, indexes) derive from the fixed table names only.
      const names = await admin.query(
        `SELECT relname AS name FROM pg_class WHERE relnamespace = $1::regnamespace
         UNION ALL SELECT conname FROM pg_constraint WHERE connamespace = $1::regnamespace ORDER BY 1`,
        [`"${longest}"`],
      );
      expect(names.length).toBeGreaterThan(6);
      for (const { name } of names as Array<{ name: string }>) expect(name).toMatch(/^rheo_[a-z_]+$/);
    } finally {
      await consumer.close();
      await producer.close();
    }
  });

  it('refuses one character more at construction, naming the field and the longest length, before anything runs', async () => {
    const invalid = (fn: () => unknown, field: string) => {
      let caught: unknown;
      try {
        fn();
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(RheoError);
      expect(caught).toMatchObject({ code: 'invalid_argument', field });
      expect((caught as Error).message).toMatch(/at most 58 characters/);
    };
    invalid(() => postgresBackend({ url: PG_URL, schema: tooLong }), 'options.schema');
    invalid(() => typeormBackend({ dataSource: admin, schema: tooLong }), 'options.schema');
    invalid(() => rheoMigrations({ schema: tooLong }), 'schema');
    invalid(() => rheoEntities({ schema: tooLong }), 'schema');
    expect(await admin.query(`SELECT 1 FROM pg_namespace WHERE nspname = $1`, [tooLong])).toEqual([]);
  });
});

describe('postgres: the LISTEN connection', () => {
  it("carries the DataSource's connection options: application_name from extra", async () => {
    const app = `rheo-listen-test-${random()}`;
    const ds = new DataSource({ type: 'postgres', url: PG_URL, poolSize: 1, extra: { application_name: app } });
    await ds.initialize();
    // install 'none' (another backend installed the tables): the listener creates nothing.
    const schema = await installed('listen');
    const backend = typeormBackend({ dataSource: ds, schema, install: 'none' }) as PostgresBackend;
    try {
      await backend.listen();
      await until(
        async () =>
          (await admin.query(`SELECT 1 FROM pg_stat_activity WHERE application_name = $1 AND query ILIKE 'LISTEN%'`, [app])).length === 1,
      );
    } finally {
      await backend.close();
      await ds.destroy();
      await dropSchema(schema);
    }
  });

  it('has TCP keepalive on, as the kernel sees its socket', async () => {
    const schema = await installed('keepalive');
    const app = `rheo_listener_${schema}`; // the DataSource sets no name: the listener's own
    const ds = new DataSource({ type: 'postgres', url: PG_URL, poolSize: 1 });
    await ds.initialize();
    const backend = typeormBackend({ dataSource: ds, schema, install: 'none' }) as PostgresBackend;
    try {
      await backend.listen();
      let port = 0;
      await until(async () => {
        const rows = await admin.query(`SELECT client_port FROM pg_stat_activity WHERE application_name = $1 AND query ILIKE 'LISTEN%'`, [
          app,
        ]);
        port = rows[0]?.client_port ?? 0;
        return port > 0;
      });
      // /proc/net/tcp, column "tr": which timer the kernel runs on the socket. An idle
      // connection with SO_KEEPALIVE has the keepalive timer (2); without it, none (0).
      const timer = () => {
        const hex = `:${port.toString(16).toUpperCase().padStart(4, '0')}`;
        for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
          for (const line of readFileSync(table, 'utf8').split('\n').slice(1)) {
            const cols = line.trim().split(/\s+/);
            if (cols[1]?.endsWith(hex) && cols[2]?.endsWith(':1538')) return cols[5].split(':')[0]; // remote port 5432
          }
        }
        return 'socket not found';
      };
      await until(() => timer() === '02', 40);
    } finally {
      await backend.close();
      await ds.destroy();
      await dropSchema(schema);
    }
  });

  it('builds its pg Client settings from every connection option of the DataSource', () => {
    const base = {
      type: 'postgres' as const,
      host: 'db',
      port: 6543,
      username: 'u',
      password: 'p',
      database: 'd',
      ssl: { rejectUnauthorized: false },
    };
    expect(
      listenerClientConfig(
        {
          ...base,
          connectTimeoutMS: 1234,
          applicationName: 'app',
          extra: { statement_timeout: 5000, options: '-c search_path=x', max: 20, idleTimeoutMillis: 1 },
        },
        's',
      ),
    ).toEqual({
      connectionString: undefined,
      host: 'db',
      port: 6543,
      user: 'u',
      password: 'p',
      database: 'd',
      ssl: { rejectUnauthorized: false },
      connectionTimeoutMillis: 1234,
      application_name: 'app',
      statement_timeout: 5000,
      options: '-c search_path=x',
      keepAlive: true,
    });
    // extra wins over the typed options, as in TypeORM's pool; keepAlive is always on.
    const viaExtra = listenerClientConfig(
      { ...base, applicationName: 'typed', extra: { application_name: 'extra', keepAlive: false, keepAliveInitialDelayMillis: 10_000 } },
      's',
    );
    expect(viaExtra).toMatchObject({
      application_name: 'extra',
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
      connectionTimeoutMillis: 10_000,
    });
    // No name of its own: rheo_listener_<schema>, cut to PostgreSQL's 63 bytes.
    expect(listenerClientConfig({ type: 'postgres', url: PG_URL }, 'rheo')).toMatchObject({
      connectionString: PG_URL,
      application_name: 'rheo_listener_rheo',
    });
    expect(listenerClientConfig({ type: 'postgres', url: PG_URL }, 'x'.repeat(58)).application_name).toHaveLength(63);
    // Replication: NOTIFY is delivered on the primary, so the master's credentials.
    const replicated = listenerClientConfig(
      {
        type: 'postgres',
        replication: { master: { host: 'primary', username: 'm', applicationName: 'prim' }, slaves: [{ host: 'replica' }] },
      },
      's',
    );
    expect(replicated).toMatchObject({ host: 'primary', user: 'm', application_name: 'prim' });
  });
});
