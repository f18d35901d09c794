// backendFromUrl: each URL form opens the store it names (real PostgreSQL, Redis
// and SQLite here), an existing store only unless told to install, and any other
// input is a RheoError naming the field, never repeating the URL (it may hold a password).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { backendFromUrl, Rheo, RheoError, sqliteBackend } from '../../lib';
import { deleteKeys, freshPrefix, REDIS_URL } from '../redis/support';
import { dropSchema, freshSchema, PG_URL } from '../sql/pg-helpers';

const dir = mkdtempSync(join(tmpdir(), 'rheo-url-'));
const schema = freshSchema('url');
const prefix = freshPrefix('url');

afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await dropSchema(schema);
  await deleteKeys(prefix);
});

function refused(build: () => unknown): RheoError {
  try {
    build();
  } catch (err) {
    expect(err).toBeInstanceOf(RheoError);
    return err as RheoError;
  }
  throw new Error('expected a RheoError');
}

/** Open the store through a Rheo, make a stream, list it, close. */
async function roundTrip(rheo: Rheo, stream: string): Promise<string[]> {
  try {
    await rheo.createStream(stream, { ifNotExists: true });
    return (await rheo.listStreams()).map((s) => s.name);
  } finally {
    await rheo.close();
  }
}

describe('backendFromUrl', () => {
  it('sqlite:<file>, relative or absolute; an existing file only, unless install is auto', async () => {
    const file = join(dir, 'store.db');
    const missing = refused(() => backendFromUrl(`sqlite:${file}`));
    expect(missing).toMatchObject({ code: 'invalid_argument', field: 'url' });
    expect(missing.message).toContain(file);
    expect(await roundTrip(new Rheo(backendFromUrl(`sqlite:${file}`, { install: 'auto' })), 's')).toEqual(['s']);
    const byRelative = backendFromUrl(`sqlite:${relative(process.cwd(), file)}`);
    expect(byRelative.name).toBe('sqlite');
    expect(byRelative.describe?.().target).toBe(`file ${file}`);
    expect(await roundTrip(new Rheo(byRelative), 's')).toEqual(['s']);
  });

  it('sqlite: a file without the tables is refused with install none', async () => {
    const other = join(dir, 'foreign.db');
    await sqliteBackend({ database: other, install: 'none' })
      .init()
      .catch(() => undefined); // leaves an empty file behind, as a foreign database would be
    const rheo = new Rheo(backendFromUrl(`sqlite:${other}`));
    await expect(rheo.listStreams()).rejects.toMatchObject({ code: 'failed', field: 'database' });
    await rheo.close();
    expect(readFileSync(other)).toHaveLength(0);
  });

  it('readOnly: a SQLite store opened read-only reads, refuses every write, and the file is unchanged', async () => {
    const file = join(dir, 'read-only.db');
    expect(await roundTrip(new Rheo(backendFromUrl(`sqlite:${file}`, { install: 'auto' })), 'ro')).toEqual(['ro']);
    const before = readFileSync(file);
    const rheo = new Rheo(backendFromUrl(`sqlite:${file}`, { readOnly: true }));
    try {
      expect((await rheo.listStreams()).map((s) => s.name)).toEqual(['ro']);
      await expect(rheo.append('ro', { payload: 1 })).rejects.toMatchObject({
        code: 'failed',
        message: expect.stringContaining('was opened read-only'),
      });
      await expect(rheo.createStream('other')).rejects.toMatchObject({ code: 'failed' });
    } finally {
      await rheo.close();
    }
    expect(readFileSync(file).equals(before)).toBe(true);
    expect(refused(() => backendFromUrl(`sqlite:${file}`, { readOnly: true, install: 'auto' }))).toMatchObject({ field: 'readOnly' });
    expect(refused(() => sqliteBackend({ database: ':memory:', readOnly: true }))).toMatchObject({ field: 'options.readOnly' });
  });

  it('postgres:// and postgresql:// with a schema', async () => {
    expect(await roundTrip(new Rheo(backendFromUrl(PG_URL, { schema, install: 'auto' })), 'p')).toEqual(['p']);
    const alias = PG_URL.replace(/^postgres:/, 'postgresql:');
    const backend = backendFromUrl(alias, { schema });
    expect(backend.name).toBe('postgres');
    expect(await roundTrip(new Rheo(backend), 'p')).toEqual(['p']);
    expect(refused(() => backendFromUrl(PG_URL, { schema: 'no such schema!' }))).toMatchObject({ field: 'schema' });
  });

  it('redis:// with a prefix (and rediss:// is accepted); a prefix without rheo data is refused unless install is auto', async () => {
    const empty = new Rheo(backendFromUrl(REDIS_URL, { prefix }));
    await expect(empty.listStreams()).rejects.toMatchObject({
      code: 'failed',
      message: expect.stringContaining('holds no nestjs-rheo data'),
    });
    await empty.close();
    expect(await roundTrip(new Rheo(backendFromUrl(REDIS_URL, { prefix, install: 'auto' })), 'r')).toEqual(['r']);
    expect(await roundTrip(new Rheo(backendFromUrl(REDIS_URL, { prefix })), 'r')).toEqual(['r']);
    const tls = backendFromUrl('rediss://127.0.0.1:6380', { prefix });
    expect(tls.name).toBe('redis');
    await tls.close();
    expect(refused(() => backendFromUrl(REDIS_URL, { prefix: 'has space' }))).toMatchObject({ field: 'prefix' });
  });

  it('refuses other URLs and options of another scheme, naming the field and not the password', () => {
    for (const url of ['mysql://root:s3cret@db/app', 'http://x', 'postgres:nohost', 'redis:', 'sqlite:', 'sqlite://x.db', '', 'memory']) {
      const err = refused(() => backendFromUrl(url));
      expect(err).toMatchObject({ code: 'invalid_argument', field: 'url' });
      expect(err.message).not.toContain('s3cret');
    }
    expect(refused(() => backendFromUrl(REDIS_URL, { schema: 'x' }))).toMatchObject({ field: 'schema' });
    expect(refused(() => backendFromUrl(`sqlite:${dir}/x.db`, { prefix: 'x' }))).toMatchObject({ field: 'prefix' });
    expect(refused(() => backendFromUrl(undefined as never))).toMatchObject({ field: 'url' });
  });
});
