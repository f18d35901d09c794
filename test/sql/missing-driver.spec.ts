import { evalWithoutDrivers as run } from '../support/without-drivers';

// Without the optional drivers installed, building a SQL backend fails with a
// RheoError that names the package to install; importing the package does not.
describe('SQL backends without their drivers', () => {
  it.each([
    ['postgresBackend', "postgresBackend({ url: 'postgres://x@127.0.0.1/db' })", 'typeorm'],
    ['sqliteBackend', "sqliteBackend({ database: ':memory:' })", 'typeorm'],
    ['rheoEntities', 'rheoEntities()', 'typeorm'],
  ])('%s says which package to install', (_name, call, pkg) => {
    const out = run(`
      const lib = require('./lib');
      const { postgresBackend, sqliteBackend, rheoEntities, rheoMigrations } = lib;
      rheoMigrations(); // needs no driver until a migration runs
      try { ${call}; process.stdout.write('built'); }
      catch (e) { process.stdout.write(JSON.stringify({ name: e.name, code: e.code, message: e.message })); }
    `);
    const err = JSON.parse(out) as { name: string; code: string; message: string };
    expect(err).toMatchObject({ name: 'RheoError', code: 'invalid_argument' });
    expect(err.message).toContain(`npm install ${pkg}`);
  });
});
