import { evalWithoutDrivers } from '../support/without-drivers';

// ioredis is an optional peer: without it, building a redis backend still works
// (the driver is loaded lazily) and first use fails with a clear RheoError.
it('without ioredis installed, redisBackend() builds and its first use says what to install', () => {
  const out = evalWithoutDrivers(`
      const { Rheo, redisBackend, RheoError } = require('./lib');
      const backend = redisBackend({ url: 'redis://127.0.0.1:6379' });
      new Rheo(backend).createStream('s').then(
        () => process.stdout.write('no error'),
        (e) => process.stdout.write(JSON.stringify({ rheo: e instanceof RheoError, code: e.code, message: e.message })),
      );
    `);
  const result = JSON.parse(out) as { rheo: boolean; code: string; message: string };
  expect(result.rheo).toBe(true);
  expect(result.code).toBe('invalid_argument');
  expect(result.message).toMatch(/npm install ioredis/);
});
